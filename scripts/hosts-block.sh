#!/usr/bin/env bash
# Copies the hosts file a gossipgw gateway keeps (events.hosts_file) into the
# managed block of another hosts file, typically /etc/hosts, as root: the
# gateway runs unprivileged and cannot replace /etc/hosts itself. The block
# and its markers are the ones gossipgw's own `managed_block: true` writes
# (docs/events.md), so either can own it. Run by gossipgw-etc-hosts.service
# whenever the gateway's file changes (gossipgw-etc-hosts.path).
set -euo pipefail

prog=hosts-block.sh

usage() {
  cat <<'TXT'
usage: scripts/hosts-block.sh --from FILE --into FILE --cluster NAME [--dry-run]

Replaces the lines from "# BEGIN gossipgw cluster NAME" to "# END gossipgw
cluster NAME" in --into (e.g. /etc/hosts) by those markers around the content
of --from (the gateway's events.hosts_file), or appends them when there are
none. Every other byte of --into stays as it was. The new file is written next
to it, with its mode and owner, and renamed over it (a symbolic link is
followed): readers see the old file or the new one. Nothing is written when
nothing changes.

Refused, with nothing written (exit 2): markers that are not one BEGIN line
followed by one END line; a --from line that is neither a comment nor
"ADDRESS NAME..." (an IPv4 or IPv6 address, then names without '#').

  --dry-run  print the new content of --into instead of writing it

Exit status: 0 done (or nothing to change), 1 a file could not be read or
written, 2 bad usage or refused input.
TXT
}

die() { echo "$prog: $1" >&2; exit "${2:-1}"; }
usage_error() { die "$1 (try --help)" 2; }

from="" into="" cluster="" dry_run=0
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --from) [ $# -ge 2 ] || usage_error "--from needs a file"; from=$2; shift 2 ;;
    --into) [ $# -ge 2 ] || usage_error "--into needs a file"; into=$2; shift 2 ;;
    --cluster) [ $# -ge 2 ] || usage_error "--cluster needs a name"; cluster=$2; shift 2 ;;
    --dry-run) dry_run=1; shift ;;
    *) usage_error "unknown argument '$1'" ;;
  esac
done
[ -n "$from" ] || usage_error "--from FILE is required"
[ -n "$into" ] || usage_error "--into FILE is required"
[[ "$cluster" =~ ^[A-Za-z0-9._-]{1,64}$ ]] ||
  usage_error "--cluster: '$cluster' is not a cluster name (cluster.name: 1..64 of A-Z a-z 0-9 . _ -)"
[ -f "$from" ] || die "--from: no file $from (has the gateway written events.hosts_file yet?)" 2
target=$(readlink -f -- "$into") || die "--into: cannot resolve $into" 1
[ -f "$target" ] || die "--into: $into is not an existing regular file (the block goes into a file that exists)" 2

begin="# BEGIN gossipgw cluster $cluster"
end="# END gossipgw cluster $cluster"

# Only what gossipgw writes may reach the target: comments and
# "ADDRESS NAME..." lines, never a marker.
bad=$(awk -v b="$begin" -v e="$end" '
  { l = $0; sub(/[ \t\r]+$/, "", l) }
  l == b || l == e { print NR ": a marker line"; exit }
  /^#/ || /^$/ { next }
  !/^[0-9A-Fa-f:.]+ [^ \t#]+( [^ \t#]+)*$/ { print NR ": not \"ADDRESS NAME\""; exit }
' "$from")
[ -z "$bad" ] || die "--from $from line $bad; nothing written" 2

# Where the block is: line numbers of the marker lines (trailing blanks and CR
# ignored, as gossipgw does).
mapfile -t marks < <(awk -v b="$begin" -v e="$end" '
  { l = $0; sub(/[ \t\r]+$/, "", l) }
  l == b { print "B " NR } l == e { print "E " NR }' "$target")
bline="" eline=""
for m in "${marks[@]}"; do
  n=${m#* }
  case "$m" in
    B*) [ -z "$bline" ] || die "$into: a second '$begin' line (line $n); fix the markers by hand, nothing written" 2
        bline=$n ;;
    E*) [ -n "$bline" ] || die "$into: '$end' (line $n) before any '$begin' line; fix the markers by hand, nothing written" 2
        [ -z "$eline" ] || die "$into: a second '$end' line (line $n); fix the markers by hand, nothing written" 2
        eline=$n ;;
  esac
done
[ -z "$bline" ] || [ -n "$eline" ] ||
  die "$into: '$begin' (line $bline) has no '$end' line; fix the markers by hand, nothing written" 2

dir=$(dirname -- "$target")
new=$(mktemp "$dir/.$(basename -- "$target").tmp.XXXXXX") || die "cannot create a temporary file in $dir"
trap 'rm -f "$new"' EXIT
{
  if [ -n "$bline" ]; then
    head -n "$((bline - 1))" -- "$target"
  else
    cat -- "$target"
    # A last line without its newline gets one before the block.
    if [ -s "$target" ] && [ "$(tail -c 1 -- "$target" | wc -l)" = 0 ]; then echo; fi
  fi
  echo "$begin"
  cat -- "$from"
  if [ -s "$from" ] && [ "$(tail -c 1 -- "$from" | wc -l)" = 0 ]; then echo; fi
  echo "$end"
  if [ -n "$bline" ]; then tail -n "+$((eline + 1))" -- "$target"; fi
} >"$new" || die "cannot write $new"

if [ "$dry_run" = 1 ]; then
  cat -- "$new"
  exit 0
fi
if cmp -s -- "$new" "$target"; then
  echo "$into: block of cluster $cluster unchanged"
  exit 0
fi
chmod --reference="$target" -- "$new" || die "cannot set the mode of $new"
# The owner too, where we may (root); otherwise the file becomes ours.
chown --reference="$target" -- "$new" 2>/dev/null || true
sync -- "$new" 2>/dev/null || sync
mv -f -- "$new" "$target" || die "cannot rename $new over $target"
trap - EXIT
sync -- "$dir" 2>/dev/null || true
echo "$into: block of cluster $cluster updated ($(grep -cv '^#' -- "$from" || true) lines)"
