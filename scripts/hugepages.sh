#!/usr/bin/env bash
# Reserve, release and report hugepages (2 MB and 1 GB, per NUMA node) and the
# hugetlbfs mounts DPDK allocates them from. Wraps dpdk-hugepages.py (Debian
# package `dpdk`), which writes the kernel's counters and checks what it got.
# Idempotent: reserving the count already reserved, or releasing what is not
# reserved, is a successful no-op.
set -euo pipefail

prog=hugepages.sh

usage() {
  cat <<'TXT'
usage: scripts/hugepages.sh status
       scripts/hugepages.sh reserve --size 2M|1G --pages N [--node N] [--mount DIR] [--no-mount]
       scripts/hugepages.sh release [--size 2M|1G] [--node N] [--unmount]
       scripts/hugepages.sh --help

status    hugepages reserved and free per page size and NUMA node, the hugetlbfs
          mounts, and how much DPDK can allocate from them. No root needed.
reserve   set the reservation to exactly N pages of SIZE on NUMA node --node, or
          on EVERY node when --node is left out (N is per node), then mount
          hugetlbfs for that size (at /dev/hugepages for the default page size,
          /dev/hugepages-<SIZE> otherwise, or --mount DIR) unless --no-mount.
          Re-running with the same numbers changes nothing. If the kernel cannot
          find N free pages (fragmented memory; 1G pages usually need to be
          reserved at boot), the previous count is put back and it says so.
release   set the reservation to 0 for SIZE (default: every size) on --node (default:
          every node); --unmount also unmounts hugetlbfs for those sizes. Pages
          still in use (a running gossipgw, files left in hugetlbfs) are named.

Needs root for reserve and release. Exit status: 0 done (or nothing to do),
1 the kernel refused, 2 bad usage.

Examples:
  scripts/hugepages.sh reserve --size 2M --pages 512      # 1 GiB per node
  scripts/hugepages.sh reserve --size 1G --pages 2 --node 0
  scripts/hugepages.sh status
  scripts/hugepages.sh release --unmount
Without free hugepages, scripts/launch.sh runs gossipgw with --no-huge -m 512.
TXT
}

die() { echo "$prog: $1" >&2; exit "${2:-1}"; }
usage_error() { die "$1 (try --help)" 2; }

hp_root=/sys/kernel/mm/hugepages
node_root=/sys/devices/system/node

# "2M" -> 2048 (kB); "" for anything else.
size_kb() {
  case "${1^^}" in
    2M|2MB|2048K|2048KB) echo 2048 ;;
    1G|1GB|1024M|1024MB|1048576K|1048576KB) echo 1048576 ;;
    *) echo "" ;;
  esac
}
kb_name() { if [ "$1" -ge 1048576 ]; then echo "$(($1 / 1048576))G"; elif [ "$1" -ge 1024 ]; then echo "$(($1 / 1024))M"; else echo "${1}K"; fi; }

default_kb() { awk '/^Hugepagesize:/ {print $2}' /proc/meminfo; }

# Page sizes this kernel offers, in kB.
offered_sizes() {
  local d
  for d in "$hp_root"/hugepages-*kB; do
    [ -d "$d" ] || continue
    d=${d##*/hugepages-}
    echo "${d%kB}"
  done
}

nodes() {
  local d
  for d in "$node_root"/node[0-9]*; do
    [ -d "$d/hugepages" ] && echo "${d##*/node}"
  done
  return 0
}

# Counter directory for a size on a node ("" = the machine-wide one).
counter_dir() {
  if [ -z "$2" ]; then echo "$hp_root/hugepages-$1kB"; else echo "$node_root/node$2/hugepages/hugepages-$1kB"; fi
}

# hugetlbfs mount points of a page size (kB), one per line.
mounts_of() {
  local want=$1 def
  def=$(default_kb)
  awk -v want="$want" -v def="$def" '
    $3 == "hugetlbfs" {
      kb = def
      n = split($4, opts, ",")
      for (i = 1; i <= n; i++) {
        if (opts[i] ~ /^pagesize=/) {
          v = substr(opts[i], 10); u = toupper(substr(v, length(v))); num = v + 0
          kb = (u == "G") ? num * 1048576 : (u == "M") ? num * 1024 : (u == "K") ? num : num / 1024
        }
      }
      if (kb == want) print $2
    }' /proc/mounts
}

need_root() { [ "$(id -u)" = 0 ] || die "$1 needs root: it writes /sys/kernel/mm/hugepages (run it with sudo)"; }

need_tool() {
  command -v dpdk-hugepages.py >/dev/null ||
    die "dpdk-hugepages.py not found: install the Debian package 'dpdk' (scripts/setup-deps.sh does)"
}

check_size_offered() {  # kb name
  [ -d "$hp_root/hugepages-$1kB" ] && return 0
  if [ "$1" = 1048576 ]; then
    die "this kernel offers no 1G hugepages ($hp_root/hugepages-1048576kB is missing: the CPU lacks pdpe1gb or the VM hides it); use --size 2M"
  fi
  die "this kernel offers no $2 hugepages; offered: $(offered_sizes | while read -r k; do printf '%s ' "$(kb_name "$k")"; done)"
}

cmd_status() {
  local kb name nodes_list n dir mounted free_mb=0
  nodes_list=$(nodes)
  printf '%-5s %-5s %9s %9s\n' size node reserved free
  for kb in $(offered_sizes); do
    name=$(kb_name "$kb")
    for n in $nodes_list; do
      dir=$(counter_dir "$kb" "$n")
      printf '%-5s %-5s %9s %9s\n' "$name" "$n" "$(cat "$dir/nr_hugepages")" "$(cat "$dir/free_hugepages")"
    done
    dir=$(counter_dir "$kb" "")
    printf '%-5s %-5s %9s %9s\n' "$name" all "$(cat "$dir/nr_hugepages")" "$(cat "$dir/free_hugepages")"
  done
  for kb in $(offered_sizes); do
    name=$(kb_name "$kb")
    mounted=$(mounts_of "$kb" | tr '\n' ' ')
    if [ -n "$mounted" ]; then
      echo "hugetlbfs $name: mounted at ${mounted% }"
      free_mb=$((free_mb + $(cat "$(counter_dir "$kb" "")/free_hugepages") * kb / 1024))
    else
      echo "hugetlbfs $name: not mounted"
    fi
  done
  echo "free for DPDK (free pages of mounted sizes): $free_mb MiB"
}

node_label() { if [ -n "$1" ]; then echo "node $1"; else echo "machine"; fi; }

# Sets one counter through dpdk-hugepages.py; on a short count puts the
# previous value back and fails with what the kernel gave.
set_pages() {  # kb node pages
  local kb=$1 node=$2 want=$3 dir before got args
  dir=$(counter_dir "$kb" "$node")
  before=$(cat "$dir/nr_hugepages")
  if [ "$before" = "$want" ]; then
    if [ "$want" = 0 ]; then echo "$(node_label "$node"): no $(kb_name "$kb") pages reserved"; else echo "$(node_label "$node"): $want x $(kb_name "$kb") already reserved"; fi
    return 0
  fi
  args=(-p "${kb}K" -r "$((want * kb))K")
  [ -n "$node" ] && args+=(-n "$node")
  if dpdk-hugepages.py "${args[@]}" >/dev/null 2>&1; then
    echo "$(node_label "$node"): $(kb_name "$kb") pages $before -> $want"
    return 0
  fi
  got=$(cat "$dir/nr_hugepages")
  if [ "$want" -gt "$before" ]; then
    echo "$before" >"$dir/nr_hugepages" || true
    die "$(node_label "$node"): asked for $want x $(kb_name "$kb") pages, the kernel found only $got (memory too fragmented or too small); put back $(cat "$dir/nr_hugepages"). Try fewer pages, reserve at boot (kernel command line: hugepagesz=$(kb_name "$kb") hugepages=$want), or run the gateway without hugepages (scripts/launch.sh --no-huge)"
  fi
  die "$(node_label "$node"): $got x $(kb_name "$kb") pages are still in use and stay reserved until freed: stop the process using them (a running gossipgw?) or remove its leftover files: $(for m in $(mounts_of "$kb"); do ls -d "$m"/* 2>/dev/null; done | tr '\n' ' ')"
}

cmd_reserve() {
  local size="" pages="" node="" mount_dir="" no_mount=0 kb n
  while [ $# -gt 0 ]; do
    case "$1" in
      --size) [ $# -ge 2 ] || usage_error "--size needs 2M or 1G"; size=$2; shift 2 ;;
      --pages) [ $# -ge 2 ] || usage_error "--pages needs a number"; pages=$2; shift 2 ;;
      --node) [ $# -ge 2 ] || usage_error "--node needs a NUMA node number"; node=$2; shift 2 ;;
      --mount) [ $# -ge 2 ] || usage_error "--mount needs a directory"; mount_dir=$2; shift 2 ;;
      --no-mount) no_mount=1; shift ;;
      -h|--help) usage; exit 0 ;;
      *) usage_error "reserve: unknown option '$1'" ;;
    esac
  done
  [ -n "$size" ] || usage_error "reserve needs --size 2M or --size 1G"
  [ -n "$pages" ] || usage_error "reserve needs --pages N"
  kb=$(size_kb "$size")
  [ -n "$kb" ] || usage_error "--size: '$size' is not 2M or 1G"
  [[ "$pages" =~ ^[0-9]+$ ]] || usage_error "--pages: '$pages' is not a whole number"
  [ -z "$node" ] || [[ "$node" =~ ^[0-9]+$ ]] || usage_error "--node: '$node' is not a NUMA node number"
  need_root reserve
  need_tool
  check_size_offered "$kb" "$size"
  if [ -n "$node" ]; then
    [ -d "$node_root/node$node/hugepages" ] || die "--node: NUMA node $node does not exist (nodes: $(nodes | tr '\n' ' '))" 2
    set_pages "$kb" "$node" "$pages"
  elif [ -n "$(nodes)" ]; then
    for n in $(nodes); do set_pages "$kb" "$n" "$pages"; done
  else
    set_pages "$kb" "" "$pages"
  fi

  [ "$no_mount" = 1 ] && return 0
  local have
  have=$(mounts_of "$kb" | head -n 1)
  if [ -n "$mount_dir" ] && mounts_of "$kb" | grep -qxF "$mount_dir"; then have=$mount_dir; fi
  if [ -n "$have" ] && { [ -z "$mount_dir" ] || [ "$have" = "$mount_dir" ]; }; then
    echo "hugetlbfs $(kb_name "$kb"): already mounted at $have"
    return 0
  fi
  if [ -z "$mount_dir" ]; then
    if [ "$kb" = "$(default_kb)" ]; then mount_dir=/dev/hugepages; else mount_dir=/dev/hugepages-$(kb_name "$kb"); fi
  fi
  mkdir -p "$mount_dir"
  dpdk-hugepages.py -p "${kb}K" -m -d "$mount_dir" >/dev/null 2>&1 || true
  mounts_of "$kb" | grep -qxF "$mount_dir" ||
    die "could not mount hugetlbfs at $mount_dir (try: mount -t hugetlbfs -o pagesize=$(kb_name "$kb") nodev $mount_dir)"
  echo "hugetlbfs $(kb_name "$kb"): mounted at $mount_dir"
}

cmd_release() {
  local size="" node="" unmount=0 kb sizes n m
  while [ $# -gt 0 ]; do
    case "$1" in
      --size) [ $# -ge 2 ] || usage_error "--size needs 2M or 1G"; size=$2; shift 2 ;;
      --node) [ $# -ge 2 ] || usage_error "--node needs a NUMA node number"; node=$2; shift 2 ;;
      --unmount) unmount=1; shift ;;
      -h|--help) usage; exit 0 ;;
      *) usage_error "release: unknown option '$1'" ;;
    esac
  done
  if [ -n "$size" ]; then
    kb=$(size_kb "$size")
    [ -n "$kb" ] || usage_error "--size: '$size' is not 2M or 1G"
  fi
  [ -z "$node" ] || [[ "$node" =~ ^[0-9]+$ ]] || usage_error "--node: '$node' is not a NUMA node number"
  need_root release
  need_tool
  if [ -n "$size" ]; then check_size_offered "$kb" "$size"; sizes=$kb; else sizes=$(offered_sizes); fi
  if [ -n "$node" ] && [ ! -d "$node_root/node$node/hugepages" ]; then
    die "--node: NUMA node $node does not exist (nodes: $(nodes | tr '\n' ' '))" 2
  fi
  for kb in $sizes; do
    if [ -n "$node" ]; then
      set_pages "$kb" "$node" 0
    elif [ -n "$(nodes)" ]; then
      for n in $(nodes); do set_pages "$kb" "$n" 0; done
    else
      set_pages "$kb" "" 0
    fi
    if [ "$unmount" = 1 ]; then
      for m in $(mounts_of "$kb"); do
        umount "$m" || die "could not unmount $m (in use? see: fuser -vm $m)"
        echo "hugetlbfs $(kb_name "$kb"): unmounted $m"
      done
    fi
  done
}

[ $# -gt 0 ] || usage_error "missing command: status, reserve or release"
cmd=$1
shift
case "$cmd" in
  -h|--help|help) usage ;;
  status|--status|-s)
    [ $# -eq 0 ] || { [ "$1" = --help ] && { usage; exit 0; }; usage_error "status: unknown option '$1'"; }
    cmd_status ;;
  reserve) cmd_reserve "$@" ;;
  release) cmd_release "$@" ;;
  *) usage_error "unknown command '$cmd'" ;;
esac
