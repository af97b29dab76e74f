#!/usr/bin/env bash
# The main job on a real (virtual) network: K gossipgw gateways in their own
# network namespaces on DPDK net_af_packet, a Linux bridge and an attacker.
# They join, one crashes and comes back, the attacker floods, replays and
# injects phantom members, one leaves gracefully; the membership view and the
# verdict table are printed at each step. Needs root; no NIC, no hugepages.
# Everything it creates is removed on exit, on failure and on Ctrl-C.
set -euo pipefail

usage() {
  cat <<'TXT'
usage: scripts/cluster-demo.sh [--nodes K] [--preset local|lan] [--flood-loops N]
                               [--build DIR] [--no-deps] [--keep] [--help]

Builds what is missing (meson setup/compile into build/), then runs the
cluster scenario (tests/integration/cluster_test.py) on scripts/cluster.sh:

  1. join      K gateways (default 3, 3..5) join through the seed, full view
  2. crash     kill -9 of one gateway: every other records it failed within
               the bound derived from the preset's probe/suspicion timing
  3. restart   it rejoins with a higher incarnation
  4. attack    from the attacker namespace at tcpreplay --topspeed: unkeyed,
               foreign-cluster, unknown-key and forged floods, phantom members
               sealed with a foreign key, replays of captured member frames;
               no view changes, nobody suspected, every frame counted
  5. keys      key rotation through the control API, where gossipctl has it
  6. leave     SIGTERM of gw-2: everyone records "left", never "failed"
  7. stop      per-gateway verdict table from --stats-json

  --nodes K          gateways (3..5, default 3)
  --preset P         membership timing preset: local (default) or lan
  --flood-loops N    send the attack floods N times (default 10)
  --build DIR        meson build directory (default build)
  --no-deps          do not run scripts/setup-deps.sh
  --keep             keep the work directory (configs, logs, pcaps, stats)

Exit status: 0 if every check passed, 1 if one failed, 77 if this machine
cannot run it (not root, no network namespaces, no tcpreplay/tcpdump).
TXT
}

nodes=3
preset=local
loops=10
build=build
deps=1
keep=()
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --nodes) nodes=${2:?--nodes needs a number}; shift 2 ;;
    --preset) preset=${2:?--preset needs local or lan}; shift 2 ;;
    --flood-loops) loops=${2:?--flood-loops needs a number}; shift 2 ;;
    --build) build=${2:?--build needs a directory}; shift 2 ;;
    --no-deps) deps=0; shift ;;
    --keep) keep=(--keep); shift ;;
    *) echo "cluster-demo.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
done
case "$nodes" in 3|4|5) ;; *) echo "cluster-demo.sh: --nodes is 3..5" >&2; exit 2 ;; esac
case "$preset" in local|lan) ;; *) echo "cluster-demo.sh: --preset is local or lan" >&2; exit 2 ;; esac
case "$loops" in ''|*[!0-9]*|0) echo "cluster-demo.sh: --flood-loops takes a whole number >= 1" >&2; exit 2 ;; esac
if [ "$(id -u)" != 0 ]; then
  echo "cluster-demo.sh: needs root (network namespaces, veths, DPDK af_packet)" >&2
  exit 77
fi

cd "$(dirname "$0")/.."
if [ "$deps" = 1 ]; then bash scripts/setup-deps.sh; fi
for tool in tcpreplay tcpdump ip; do
  command -v "$tool" >/dev/null || { echo "cluster-demo.sh: $tool is not installed (apt-get install $tool)" >&2; exit 77; }
done
if [ -f "$build/build.ninja" ]; then :; else meson setup "$build" >/dev/null; fi
echo "== building gossipgw, gossipgen, gossipctl in $build"
if ! out=$(ninja -C "$build" ${NINJA_JOBS:+-j "$NINJA_JOBS"} control/gateway/gossipgw perf/gossipgen/gossipgen \
    control/ctl/gossipctl 2>&1); then
  echo "$out" | tail -n 30 >&2
  echo "cluster-demo.sh: build failed" >&2
  exit 1
fi

# The driver tears the cluster down in its own finally/signal handling; the
# trap here is the net under it (e.g. the driver itself killed).
id=d$$
id=${id:0:8}
down_args=(down)
[ ${#keep[@]} -eq 0 ] || down_args=(down --keep-dir)
cleanup() { bash scripts/cluster.sh --id "$id" "${down_args[@]}" >/dev/null 2>&1 || true; }
trap cleanup EXIT
trap 'exit 130' INT TERM

python3 tests/integration/cluster_test.py --bin-dir "$build" --id "$id" --nodes "$nodes" --preset "$preset" \
  --flood-loops "$loops" "${keep[@]}"
