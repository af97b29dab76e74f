#!/usr/bin/env bash
# The main job, on virtual devices (no NIC, no hugepages): make keys, generate a
# traffic mix of valid, foreign, unkeyed, forged and malformed gossip, run the
# real gateway over it on net_pcap, and print the verdict table next to the
# generator's ground truth.
set -euo pipefail

usage() {
  cat <<'TXT'
usage: scripts/demo.sh [--packets-scale N] [--seed N] [--keep] [--help]

Builds what is missing, then runs gossipgw on a net_pcap virtual device over a
gossipgen traffic mix and prints, per verdict, what the generator says the
gateway must count and what it counted.

  --packets-scale N  multiply the default mix by N (default 1: ~600 packets)
  --seed N           traffic seed (default 1)
  --keep             keep the work directory (keys, config, pcap, JSON)
TXT
}

scale=1
seed=1
keep=0
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --packets-scale) scale=${2:?--packets-scale needs a number}; shift 2 ;;
    --seed) seed=${2:?--seed needs a number}; shift 2 ;;
    --keep) keep=1; shift ;;
    *) echo "demo.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
done
case "$scale$seed" in *[!0-9]*) echo "demo.sh: --packets-scale and --seed take whole numbers" >&2; exit 2 ;; esac

cd "$(dirname "$0")/.."
root=$(pwd)
bash scripts/setup-deps.sh
if [ -f build/build.ninja ]; then :; else meson setup build >/dev/null; fi
echo "== building gossipgw, gossipgen, gossipctl"
ninja -C build control/gateway/gossipgw perf/gossipgen/gossipgen control/ctl/gossipctl >/dev/null

work=$(mktemp -d /tmp/gossipgw-demo.XXXXXX)
cleanup() { if [ "$keep" = 1 ]; then echo "work directory kept: $work"; else rm -rf "$work"; fi; }
trap cleanup EXIT

echo "== keys"
mkdir -p "$work/keys"
build/control/ctl/gossipctl keygen --out "$work/keys/primary.key"
build/control/ctl/gossipctl keygen --out "$work/keys/previous.key"

cat > "$work/gossipgw.yaml" <<YAML
cluster:
  name: demo
  suite: auto
  keys:
    - file: keys/primary.key
      primary: true
    - file: keys/previous.key   # still accepted: a rotation in progress
node:
  name: demo-gw
  address: 10.0.0.1
  port: 7946
rings:
  size: 16384
dataplane:
  mbufs: 32768
YAML

m() { echo $(( $1 * scale )); }
mix="valid=$(m 200),valid_secondary=$(m 40),foreign=$(m 50),unknown_key=$(m 30),forged_header=$(m 30),forged_tag=$(m 30),forged_ciphertext=$(m 30),unkeyed_random=$(m 50),unkeyed_short=$(m 20),unkeyed_version=$(m 10),not_gossip=$(m 40),malformed=$(m 60)"
corpus_args=()
corpus="$root/../shared/corpus/memberlist-0.2.2-lan-16.pcap"
if [ -f "$corpus" ]; then
  corpus_args=(--corpus "$corpus")
  mix="$mix,unkeyed_memberlist=$(m 100)"
fi

# Header timestamps and the gateway's clock agree (gossipgen's ground truth
# holds only then): the gateway runs with its clock frozen at the traffic's.
ts=1700000000
echo "== traffic: $mix"
build/perf/gossipgen/gossipgen --config "$work/gossipgw.yaml" --seed "$seed" --mix "$mix" --timestamp "$ts" \
  "${corpus_args[@]}" --out "$work/traffic.pcap" --truth "$work/truth.json"

echo "== gateway on net_pcap (1 worker lcore, 1 control lcore, --no-huge)"
build/control/gateway/gossipgw -l 0,1 --no-huge -m 512 --no-pci --file-prefix="gwdemo$$" \
  --log-level=lib.eal:warning --vdev="net_pcap0,rx_pcap=$work/traffic.pcap" \
  -- --config "$work/gossipgw.yaml" --freeze-clock "$ts" --idle-exit-ms 500 --stats-json "$work/stats.json"

python3 "$root/scripts/verdict_table.py" "$work/truth.json" "$work/stats.json"
