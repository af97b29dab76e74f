#!/usr/bin/env bash
# Launch gossipgw like production: check the config and key files, build the
# EAL arguments from the config (gossipctl config eal-args: the C++ loader reads
# the YAML, never this script), check hugepages and NIC binding, say exactly
# what is missing and how to fix it, then exec the gateway (so systemd's
# SIGTERM reaches it directly).
set -euo pipefail

prog=launch.sh

usage() {
  cat <<'TXT'
usage: scripts/launch.sh --config FILE [--vdev SPEC]... [--allow PCI]... [--no-huge]
                         [--file-prefix P] [--memory-mb N] [--stats-json PATH]
                         [--dry-run] [-- extra gossipgw options]

  --config FILE       gateway YAML config (checked with `gossipctl config check`,
                      which also loads every key file)
  --allow PCI         PCI address of a NIC port the gateway may use (repeatable);
                      it must be bound to vfio-pci (or a uio driver):
                      scripts/bind-nic.sh bind PCI
  --vdev SPEC         DPDK virtual device, e.g. net_pcap0,rx_pcap=in.pcap (repeatable);
                      with only virtual devices, EAL gets --no-pci
  --no-huge           run from ordinary pages (--no-huge -m 512); chosen
                      automatically, with a message, when no hugepages are free
                      and no PCI device is allow-listed
  --file-prefix P     EAL file prefix (default gossipgw-<node name>): unique per
                      gateway on one host
  --memory-mb N       EAL memory in MiB (default: estimated from the config, >= 512)
  --stats-json PATH   gossipgw writes all counters there on exit (also on SIGTERM)
  --dry-run           print the exact gossipgw command line and exit 0
  -- OPTIONS          passed to gossipgw after its --config (e.g. --log-level debug)

Checks, in order: config and key files; hugepages (enough free pages of a mounted
size for the EAL memory); each --allow device bound to vfio-pci/uio. Each failure
is one line naming the fix, and exit status 2. Then it execs gossipgw, whose exit
status becomes this script's (0 clean stop, 2 bad options/config/devices, 1 runtime).

Binaries: $GOSSIPGW_BIN_DIR if set (either a folder holding gossipgw and gossipctl,
or a meson build folder), else build/ of this checkout, else $PATH.
Testing aids: GW_SYSFS_ROOT (default /sys) and GW_PROC_MOUNTS (default
/proc/mounts) point the hugepage and driver checks at fake trees.
TXT
}

die() { echo "$prog: $1" >&2; exit "${2:-2}"; }
usage_error() { die "$1 (try --help)" 2; }

config=""
vdevs=()
allows=()
no_huge=0
dry_run=0
file_prefix=""
memory_mb=""
stats_json=""
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --config) [ $# -ge 2 ] || usage_error "--config needs a file"; config=$2; shift 2 ;;
    --vdev) [ $# -ge 2 ] || usage_error "--vdev needs a device spec"; vdevs+=("$2"); shift 2 ;;
    --allow) [ $# -ge 2 ] || usage_error "--allow needs a PCI address"; allows+=("$2"); shift 2 ;;
    --no-huge) no_huge=1; shift ;;
    --dry-run) dry_run=1; shift ;;
    --file-prefix) [ $# -ge 2 ] || usage_error "--file-prefix needs a name"; file_prefix=$2; shift 2 ;;
    --memory-mb) [ $# -ge 2 ] || usage_error "--memory-mb needs a number"; memory_mb=$2; shift 2 ;;
    --stats-json) [ $# -ge 2 ] || usage_error "--stats-json needs a path"; stats_json=$2; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    *) usage_error "unknown option '$1'" ;;
  esac
done
[ -n "$config" ] || usage_error "--config FILE is required"
[ -z "$memory_mb" ] || [[ "$memory_mb" =~ ^[0-9]+$ ]] || usage_error "--memory-mb: '$memory_mb' is not a whole number"

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
sysfs=${GW_SYSFS_ROOT:-/sys}
proc_mounts=${GW_PROC_MOUNTS:-/proc/mounts}

# find_bin NAME SUBDIR: $GOSSIPGW_BIN_DIR, then build/, then $PATH.
find_bin() {
  local name=$1 sub=$2 dir
  if [ -n "${GOSSIPGW_BIN_DIR:-}" ]; then
    for dir in "$GOSSIPGW_BIN_DIR" "$GOSSIPGW_BIN_DIR/$sub"; do
      [ -x "$dir/$name" ] && { echo "$dir/$name"; return 0; }
    done
    die "GOSSIPGW_BIN_DIR=$GOSSIPGW_BIN_DIR holds no $name (neither $name nor $sub/$name)"
  fi
  [ -x "$repo/build/$sub/$name" ] && { echo "$repo/build/$sub/$name"; return 0; }
  command -v "$name" 2>/dev/null && return 0
  die "$name not found in $repo/build/$sub or \$PATH: build it (meson setup build && ninja -C build) or set GOSSIPGW_BIN_DIR"
}
gossipgw=$(find_bin gossipgw control/gateway)
gossipctl=$(find_bin gossipctl control/ctl)

# 1. Config and every key file, with gossipgw's own loader.
if ! err=$("$gossipctl" config check --config "$config" 2>&1 >/dev/null); then
  hint=""
  case "$err" in
    *"group or others"*) hint=" (key files must be readable by the gateway's user only)" ;;
    *"key file"*) hint=" (make a key: $gossipctl keygen --out FILE, mode 0600)" ;;
  esac
  die "config check failed: ${err#gossipctl: }$hint"
fi

# 2. EAL arguments from the config.
eal_opts=()
[ -n "$file_prefix" ] && eal_opts+=(--file-prefix "$file_prefix")
[ -n "$memory_mb" ] && eal_opts+=(--memory-mb "$memory_mb")
for v in "${vdevs[@]}"; do eal_opts+=(--vdev "$v"); done
for a in "${allows[@]}"; do eal_opts+=(--allow "$a"); done
eal=()
eal_args() {  # extra gossipctl options...; fills eal[]
  local out
  out=$("$gossipctl" config eal-args --config "$config" "${eal_opts[@]}" "$@" 2>&1) ||
    die "cannot build EAL arguments: ${out#gossipctl: }"
  mapfile -t eal <<<"$out"
}
[ ${#vdevs[@]} -gt 0 ] || [ ${#allows[@]} -gt 0 ] ||
  echo "$prog: note: neither --allow nor --vdev given: EAL will probe every PCI device bound to a DPDK driver" >&2

# 3. Hugepages: enough free pages of a size that has a hugetlbfs mount.
default_kb=$(awk '/^Hugepagesize:/ {print $2}' /proc/meminfo 2>/dev/null || true)
mounted_kb() {  # page sizes (kB) with a hugetlbfs mount
  awk -v def="${default_kb:-2048}" '
    $3 == "hugetlbfs" {
      kb = def
      n = split($4, opts, ",")
      for (i = 1; i <= n; i++) if (opts[i] ~ /^pagesize=/) {
        v = substr(opts[i], 10); u = toupper(substr(v, length(v))); num = v + 0
        kb = (u == "G") ? num * 1048576 : (u == "M") ? num * 1024 : (u == "K") ? num : num / 1024
      }
      print kb, $2
    }' "$proc_mounts" 2>/dev/null
}
# Files a stopped DPDK process left in hugetlbfs hold their pages until removed.
stale_hint() {
  local kb dir n=0 k globs=""
  while read -r kb dir; do
    [ -d "$dir" ] || continue
    k=$(find "$dir" -maxdepth 1 -name '*map_*' 2>/dev/null | wc -l)
    [ "$k" = 0 ] && continue
    n=$((n + k))
    globs+=" $dir/*map_*"
  done < <(mounted_kb)
  [ "$n" = 0 ] || echo "; $n hugepage files left by a stopped DPDK process hold pages: if no DPDK process runs, remove them: rm -f${globs}"
}
hugepage_check() {  # needed_mb; prints a reason and returns 1 when short
  local need_mb=$1 d kb free total_free_kb=0 usable_kb=0 mounted nr2m=0 unmounted=""
  mounted=" $(mounted_kb | awk '{print $1}' | sort -u | tr '\n' ' ') "
  for d in "$sysfs"/kernel/mm/hugepages/hugepages-*kB; do
    [ -d "$d" ] || continue
    kb=${d##*/hugepages-}; kb=${kb%kB}
    free=$(cat "$d/free_hugepages" 2>/dev/null || echo 0)
    [ "$kb" = 2048 ] && nr2m=$(cat "$d/nr_hugepages" 2>/dev/null || echo 0)
    total_free_kb=$((total_free_kb + free * kb))
    case "$mounted" in
      *" $kb "*) usable_kb=$((usable_kb + free * kb)) ;;
      *) [ "$free" = 0 ] || [ -n "$unmounted" ] || unmounted=$kb ;;
    esac
  done
  local pages_2m=$(((need_mb * 1024 - usable_kb + 2047) / 2048 + nr2m))
  if [ "$total_free_kb" = 0 ] && [ -n "$(stale_hint)" ]; then
    echo "no free hugepages$(stale_hint)"
    return 1
  elif [ "$total_free_kb" = 0 ]; then
    echo "none"
    return 1
  elif [ "$usable_kb" = 0 ]; then
    local size dir=/dev/hugepages
    if [ "$unmounted" -ge 1048576 ]; then size=$((unmounted / 1048576))G; else size=$((unmounted / 1024))M; fi
    [ "$unmounted" = "${default_kb:-2048}" ] || dir=/dev/hugepages-$size
    echo "$((total_free_kb / 1024)) MiB of hugepages are free but no hugetlbfs is mounted for their size: mkdir -p $dir && mount -t hugetlbfs -o pagesize=$size nodev $dir"
    return 1
  elif [ $((usable_kb / 1024)) -lt "$need_mb" ]; then
    echo "the gateway needs $need_mb MiB of hugepages and $((usable_kb / 1024)) MiB are free: scripts/hugepages.sh reserve --size 2M --pages $pages_2m (or pass --memory-mb, or --no-huge)$(stale_hint)"
    return 1
  fi
  return 0
}

if [ "$no_huge" = 0 ]; then
  eal_args
  need_mb=""
  for ((i = 0; i + 1 < ${#eal[@]}; i++)); do
    if [ "${eal[$i]}" = -m ]; then need_mb=${eal[$((i + 1))]}; fi
  done
  [ -n "$need_mb" ] || die "gossipctl config eal-args printed no -m"
  if ! why=$(hugepage_check "$need_mb"); then
    if [ "$why" = none ] && [ ${#allows[@]} -eq 0 ]; then
      echo "$prog: no free hugepages: falling back to --no-huge (ordinary pages, fine for virtual devices and tests; for production reserve them: scripts/hugepages.sh reserve --size 2M --pages $(((need_mb + 1) / 2)))" >&2
      no_huge=1
    elif [ "$why" = none ]; then
      die "no free hugepages, and a PCI NIC needs them for DMA: scripts/hugepages.sh reserve --size 2M --pages $(((need_mb + 1) / 2))"
    else
      die "$why"
    fi
  fi
fi

if [ "$no_huge" = 1 ] && [ ${#allows[@]} -gt 0 ]; then
  echo "$prog: warning: --no-huge with a PCI NIC: many drivers cannot DMA from ordinary pages; use it for testing only" >&2
fi

# 4. Each allow-listed device bound to a DPDK-capable driver.
for a in "${allows[@]}"; do
  pci=$a
  [[ "$pci" =~ ^[0-9a-fA-F]{4}: ]] || pci="0000:$pci"
  pci=${pci,,}
  dev="$sysfs/bus/pci/devices/$pci"
  [ -e "$dev" ] || die "--allow $a: no such PCI device (list them: scripts/bind-nic.sh --status)"
  drv=""
  [ -e "$dev/driver" ] && drv=$(basename "$(readlink -f "$dev/driver")")
  case "$drv" in
    vfio-pci|uio_pci_generic|igb_uio) ;;
    "") die "--allow $a: not bound to any driver: scripts/bind-nic.sh bind $pci" ;;
    *) die "--allow $a: bound to the kernel driver $drv, not vfio-pci: scripts/bind-nic.sh bind $pci" ;;
  esac
done

# 5. The command.
if [ "$no_huge" = 1 ]; then eal_args --no-huge; else eal_args; fi
cmd=("$gossipgw" "${eal[@]}" -- --config "$config")
[ -n "$stats_json" ] && cmd+=(--stats-json "$stats_json")
cmd+=("${extra[@]}")

if [ "$dry_run" = 1 ]; then
  # Shell-quoted only where needed, so it reads like what one would type.
  line=""
  for w in "${cmd[@]}"; do
    if [[ "$w" =~ ^[A-Za-z0-9_./,=:@%+-]+$ ]]; then line+=" $w"; else line+=" $(printf '%q' "$w")"; fi
  done
  echo "${line# }"
  exit 0
fi
exec "${cmd[@]}"
