#!/usr/bin/env bash
# Bind a NIC to vfio-pci for gossipgw, and give it back to its kernel driver.
# Wraps dpdk-devbind.py (Debian package `dpdk`). Refuses, before touching
# anything, a device whose interface (or a bond/VLAN/bridge above it) carries
# the host's IPv4 or IPv6 default route: binding it would cut the host off.
# Idempotent: binding a device already on the driver, or unbinding one that no
# DPDK driver holds, is a successful no-op.
set -euo pipefail

prog=bind-nic.sh

usage() {
  cat <<'TXT'
usage: scripts/bind-nic.sh bind DEVICE [--driver vfio-pci|uio_pci_generic|igb_uio] [--dry-run]
       scripts/bind-nic.sh unbind DEVICE [--to DRIVER|none] [--dry-run]
       scripts/bind-nic.sh --status
       scripts/bind-nic.sh --help

DEVICE is a PCI address (0000:01:00.0 or 01:00.0) or an interface name (eth1).

bind      bind DEVICE to vfio-pci (default) so gossipgw can own it. Refused when
          the device's interface, or an interface stacked on it, carries a
          default route (ip route / ip -6 route). Loads the module if needed and
          remembers the kernel driver (and interface name) for unbind. For
          vfio-pci the host needs an IOMMU (intel_iommu=on or amd_iommu=on on the
          kernel command line); it says so when there is none.
unbind    give DEVICE back: to --to DRIVER, else the kernel driver remembered at
          bind time, else to no driver (--to none). After bind the interface
          name no longer exists, but unbind still accepts it. A device no DPDK
          driver holds is left alone.
--status  network devices and their drivers (dpdk-devbind.py --status-dev net),
          the default-route interfaces, and what this script bound.
--dry-run print the dpdk-devbind.py command instead of running it.

Needs root for bind and unbind. Exit status: 0 done (or nothing to do),
1 the kernel or dpdk-devbind.py failed, 2 bad usage or a refused device.

The default-route check looks at the host's network namespace (PID 1's, else
kthreadd's), also when the script runs inside another one (ip netns exec, a
container sharing the host's PCI devices): as root it re-runs itself there,
with a sysfs that shows the host's interfaces; without root, inside another
namespace, it refuses bind rather than check the wrong routes.
Testing aids: GW_SYSFS_ROOT (default /sys) points at a fake sysfs tree,
GW_STATE_DIR (default /run/gossipgw) holds what bind remembered,
GW_HOST_NETNS names the namespace whose routes count (a /proc/PID/ns/net or
/run/netns/NAME file).
TXT
}

die() { echo "$prog: $1" >&2; exit "${2:-1}"; }
usage_error() { die "$1 (try --help)" 2; }

sysfs=${GW_SYSFS_ROOT:-/sys}
state_dir=${GW_STATE_DIR:-/run/gossipgw}/bind-nic
pci_re='^([0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-1][0-9a-fA-F]\.[0-7]$'
dpdk_drivers=" vfio-pci uio_pci_generic igb_uio "

normalize_pci() { local p=$1; [[ "$p" =~ ^[0-9a-fA-F]{4}: ]] || p="0000:$p"; echo "${p,,}"; }

# Interfaces that carry a default route, in any routing table, IPv4 or IPv6;
# nothing (and success) on a host without one.
default_route_devs() {
  { ip -o route show default table all 2>/dev/null || true
    ip -o -6 route show default table all 2>/dev/null || true
  } | { grep -o 'dev [^ ]*' || true; } | awk '{print $2}' | sort -u
}

# ---- the host's network namespace ----
# The routes that matter are the host's. Run inside another network namespace
# (ip netns exec, a container), `ip route` shows that namespace's routes and
# /sys/class/net its interfaces, so the guard would see nothing to protect.

host_netns_file() {  # the host's netns handle, "" when none can be read
  local p
  if [ -n "${GW_HOST_NETNS:-}" ]; then echo "$GW_HOST_NETNS"; return 0; fi
  for p in 1 2; do
    # PID 2 is kthreadd (always in the initial namespaces) only outside a
    # PID namespace.
    [ "$p" = 1 ] || [ "$(cat /proc/2/comm 2>/dev/null)" = kthreadd ] || continue
    if stat -L -c %i "/proc/$p/ns/net" >/dev/null 2>&1; then echo "/proc/$p/ns/net"; return 0; fi
  done
  echo ""
}

# Re-runs this script in the host's network namespace (with a sysfs of that
# namespace, unless GW_SYSFS_ROOT points at a fake one) when it runs in
# another. Without root, inside another namespace, the check cannot be made:
# host_view=unseen, and bind refuses.
host_view=same
ensure_host_netns() {
  local host ours theirs
  [ -z "${GW_BIND_NIC_IN_HOST_NETNS:-}" ] || return 0
  host=$(host_netns_file)
  if [ -z "$host" ]; then
    # Neither PID 1's namespace nor kthreadd's can be read: not root, or a
    # PID namespace. Inside a network namespace of our own?
    if [ -n "$(ip netns identify $$ 2>/dev/null)" ]; then host_view=unseen; fi
    return 0
  fi
  ours=$(stat -L -c %i /proc/self/ns/net)
  theirs=$(stat -L -c %i "$host")
  [ "$ours" != "$theirs" ] || return 0
  if [ "$(id -u)" != 0 ] || ! command -v nsenter >/dev/null || ! command -v unshare >/dev/null; then
    host_view=unseen
    return 0
  fi
  export GW_BIND_NIC_IN_HOST_NETNS=1
  if [ -n "${GW_SYSFS_ROOT:-}" ]; then
    exec nsenter --net="$host" -- bash "$self" "${script_args[@]}"
  fi
  # shellcheck disable=SC2016
  exec nsenter --net="$host" -- unshare --mount --propagation private -- \
    bash -c 'mount -t sysfs sysfs /sys && exec bash "$@"' bash "$self" "${script_args[@]}"
}

# The interface and every interface stacked on it (bond, VLAN, bridge, macvlan).
with_uppers() {
  local queue=("$@") seen=" " n u
  while [ ${#queue[@]} -gt 0 ]; do
    n=${queue[0]}
    queue=("${queue[@]:1}")
    case "$seen" in *" $n "*) continue ;; esac
    seen+="$n "
    echo "$n"
    for u in "$sysfs/class/net/$n"/upper_*; do
      [ -e "$u" ] && queue+=("${u##*/upper_}")
    done
  done
}

# Interfaces whose device lies under the PCI function (directly or through
# virtio, as for virtio-net).
netdevs_of_pci() {
  local n p
  for n in "$sysfs"/class/net/*; do
    [ -e "$n" ] || continue
    p=$(readlink -f "$n")
    case "$p" in */"$1"/*) echo "${n##*/}" ;; esac
  done
}

# PCI address of an interface, "" for virtual ones.
pci_of_netdev() {
  local p c pci=""
  [ -e "$sysfs/class/net/$1/device" ] || { echo ""; return 0; }
  p=$(readlink -f "$sysfs/class/net/$1/device")
  local IFS=/
  for c in $p; do
    [[ "$c" =~ ^[0-9a-f]{4}:[0-9a-f]{2}:[0-1][0-9a-f]\.[0-7]$ ]] && pci=$c
  done
  echo "$pci"
}

driver_of() {  # pci -> driver name or ""
  local d="$sysfs/bus/pci/devices/$1/driver"
  if [ -e "$d" ]; then basename "$(readlink -f "$d")"; else echo ""; fi
}

# Refuses (exit 2) when any of the interfaces, or one stacked on them, carries
# a default route.
refuse_default_route() {  # what interfaces...
  local what=$1 routed n
  shift
  if [ "$host_view" = unseen ]; then
    die "refusing to bind $what: this shell is in a network namespace of its own ($(ip netns identify $$ 2>/dev/null || readlink /proc/self/ns/net)) and cannot see the host's routes without root; run bind-nic.sh as root, or in the host's network namespace" 2
  fi
  [ $# -gt 0 ] || return 0
  routed=" $(default_route_devs | tr '\n' ' ') "
  for n in $(with_uppers "$@"); do
    case "$routed" in
      *" $n "*)
        die "refusing to bind $what: interface $n carries the host's default route ($( { ip -o route show default table all dev "$n" 2>/dev/null; ip -o -6 route show default table all dev "$n" 2>/dev/null; } | head -n 1 | sed 's/  */ /g; s/ *$//')); binding it would cut this host off the network. Use a NIC dedicated to gossip." 2 ;;
    esac
  done
}

need_root() { [ "$(id -u)" = 0 ] || die "$1 needs root (run it with sudo)"; }
need_tool() {
  command -v dpdk-devbind.py >/dev/null ||
    die "dpdk-devbind.py not found: install the Debian package 'dpdk' (scripts/setup-deps.sh does)"
}

# DEVICE argument -> globals pci and ifname.
resolve() {
  pci=""
  ifname=""
  if [[ "$1" =~ $pci_re ]]; then
    pci=$(normalize_pci "$1")
    [ -e "$sysfs/bus/pci/devices/$pci" ] || die "no PCI device $pci (list them: scripts/bind-nic.sh --status)" 2
  elif [ -e "$sysfs/class/net/$1" ]; then
    ifname=$1
  else
    local f
    for f in "$state_dir"/*; do
      [ -f "$f" ] || continue
      if grep -qxF "ifname=$1" "$f"; then
        pci=${f##*/}
        ifname=$1
        return 0
      fi
    done
    die "'$1' is neither a PCI address nor an interface on this host (list them: scripts/bind-nic.sh --status)" 2
  fi
}

run() {  # the command, or print it with --dry-run
  if [ "$dry_run" = 1 ]; then echo "$*"; return 0; fi
  "$@"
}

cmd_bind() {
  local dev=$1 driver=$2 current n netdevs
  resolve "$dev"
  if [ -n "$ifname" ] && [ -z "$pci" ]; then
    # By name: the route check comes first, whatever the interface is.
    refuse_default_route "$ifname" "$ifname"
    pci=$(pci_of_netdev "$ifname")
    [ -n "$pci" ] || die "$ifname is not a PCI device (virtual interface?); gossipgw can use it through --vdev net_af_packet0,iface=$ifname" 2
  fi
  mapfile -t netdevs < <(netdevs_of_pci "$pci")
  refuse_default_route "$pci${netdevs[*]:+ (${netdevs[*]})}" "${netdevs[@]}"

  current=$(driver_of "$pci")
  if [ "$current" = "$driver" ]; then
    echo "$pci: already bound to $driver"
    return 0
  fi
  need_root bind
  need_tool
  if [ ! -d "$sysfs/bus/pci/drivers/$driver" ]; then
    run modprobe "$driver" || die "cannot load the $driver module (modprobe $driver)"
  fi
  if [ "$driver" = vfio-pci ] && [ -z "$(ls -A "$sysfs/kernel/iommu_groups" 2>/dev/null)" ] &&
     [ "$(cat "$sysfs/module/vfio/parameters/enable_unsafe_noiommu_mode" 2>/dev/null || echo N)" != Y ]; then
    die "vfio-pci needs an IOMMU and this host has none enabled: add intel_iommu=on iommu=pt (or amd_iommu=on) to the kernel command line and reboot; in a VM without a virtual IOMMU, either 'echo 1 > /sys/module/vfio/parameters/enable_unsafe_noiommu_mode' (no DMA isolation) or --driver uio_pci_generic"
  fi
  if [ "$dry_run" = 0 ] && [ -n "$current" ] && [[ "$dpdk_drivers" != *" $current "* ]]; then
    mkdir -p "$state_dir"
    printf 'driver=%s\nifname=%s\n' "$current" "${netdevs[0]:-}" >"$state_dir/$pci"
  fi
  run dpdk-devbind.py --bind="$driver" "$pci" || die "dpdk-devbind.py could not bind $pci to $driver (see above)"
  [ "$dry_run" = 1 ] && return 0
  current=$(driver_of "$pci")
  [ "$current" = "$driver" ] || die "$pci is on '${current:-no driver}' after binding to $driver"
  echo "$pci: bound to $driver${netdevs[0]:+ (was ${netdevs[*]})}; give it back with: scripts/bind-nic.sh unbind $pci"
}

cmd_unbind() {
  local dev=$1 to=$2 current
  resolve "$dev"
  if [ -z "$pci" ]; then
    pci=$(pci_of_netdev "$ifname")
    [ -n "$pci" ] || die "$ifname is not a PCI device (virtual interface?)" 2
  fi
  current=$(driver_of "$pci")
  if [ -z "$current" ] && [ -z "$to" ]; then
    echo "$pci: not bound to any driver; nothing to do"
    return 0
  fi
  if [ -n "$current" ] && [[ "$dpdk_drivers" != *" $current "* ]]; then
    echo "$pci: on the kernel driver $current, not a DPDK driver; nothing to do"
    return 0
  fi
  if [ -z "$to" ] && [ -f "$state_dir/$pci" ]; then
    to=$(sed -n 's/^driver=//p' "$state_dir/$pci")
  fi
  [ -n "$to" ] || to=none
  if [ "$to" = "${current:-none}" ]; then
    echo "$pci: already on ${to}; nothing to do"
    return 0
  fi
  need_root unbind
  need_tool
  if [ "$to" = none ]; then
    run dpdk-devbind.py -u "$pci" || die "dpdk-devbind.py could not unbind $pci (see above)"
  else
    run dpdk-devbind.py --bind="$to" "$pci" || die "dpdk-devbind.py could not bind $pci to $to (see above)"
  fi
  [ "$dry_run" = 1 ] && return 0
  rm -f "$state_dir/$pci"
  current=$(driver_of "$pci")
  echo "$pci: now on ${current:-no driver}"
}

cmd_status() {
  local f routed
  if command -v dpdk-devbind.py >/dev/null; then
    # lspci in containers complains about kernel modules it cannot list.
    dpdk-devbind.py --status-dev net 2> >(grep -v 'libkmod' >&2) || die "dpdk-devbind.py --status-dev net failed"
  else
    echo "(dpdk-devbind.py not installed: install the Debian package 'dpdk')"
  fi
  echo
  if [ "$host_view" = unseen ]; then
    echo "default route via: unknown (a network namespace of its own, without root: the host's routes cannot be seen)"
  else
    routed=$(default_route_devs | tr '\n' ' ')
    echo "default route via: ${routed:-none }(never bound by this script)"
  fi
  for f in "$state_dir"/*; do
    [ -f "$f" ] || continue
    echo "bound by bind-nic.sh: ${f##*/} ($(tr '\n' ' ' <"$f"))"
  done
}

self=$(readlink -f "${BASH_SOURCE[0]}")
script_args=("$@")
[ $# -gt 0 ] || usage_error "missing command: bind, unbind or --status"
cmd=$1
shift
dry_run=0
device=""
driver=vfio-pci
to=""
case "$cmd" in
  -h|--help|help) usage; exit 0 ;;
  --status|-s|status)
    [ $# -eq 0 ] || usage_error "--status takes no arguments"
    ensure_host_netns
    cmd_status; exit 0 ;;
  bind|unbind) ;;
  *) usage_error "unknown command '$cmd'" ;;
esac
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --dry-run) dry_run=1; shift ;;
    --driver)
      [ "$cmd" = bind ] || usage_error "--driver is for bind (unbind takes --to)"
      [ $# -ge 2 ] || usage_error "--driver needs a driver name"
      driver=$2; shift 2
      [[ "$dpdk_drivers" == *" $driver "* ]] || usage_error "--driver: '$driver' is not one of vfio-pci, uio_pci_generic, igb_uio" ;;
    --to)
      [ "$cmd" = unbind ] || usage_error "--to is for unbind"
      [ $# -ge 2 ] || usage_error "--to needs a driver name or none"
      to=$2; shift 2
      [[ "$to" =~ ^[A-Za-z0-9_-]+$ ]] || usage_error "--to: '$to' is not a driver name" ;;
    -*) usage_error "$cmd: unknown option '$1'" ;;
    *) [ -z "$device" ] || usage_error "$cmd takes one DEVICE"; device=$1; shift ;;
  esac
done
[ -n "$device" ] || usage_error "$cmd needs a DEVICE (PCI address or interface name)"
ensure_host_netns
if [ "$cmd" = bind ]; then cmd_bind "$device" "$driver"; else cmd_unbind "$device" "$to"; fi
