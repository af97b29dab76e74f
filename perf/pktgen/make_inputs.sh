#!/usr/bin/env bash
# Builds pktgen-dpdk inputs from gossipgen: one pcap per benchmark case and
# frame size, its ground truth, and a pktgen command file that streams it.
# See README.md here for the whole procedure and the counters to expect.
#
#   perf/pktgen/make_inputs.sh --config /etc/gossipgw/gossipgw.yaml --dst-mac 0c:42:a1:00:00:01 \
#       [--out perf/pktgen/out] [--sizes 128,512,1400] [--gossipgen build/perf/gossipgen/gossipgen]
#       [--timestamp UNIX_SECONDS] [--rate PERCENT] [--port N] [--seconds S]
#
# --config is the gateway's own config (cluster, keys, suite, address, port,
# limits come from it), --dst-mac the MAC of the gateway's port. The valid
# frames carry --timestamp (default: now), so they must be sent within the
# config's limits.replay_window_s of it. Each .pkt sends for --seconds
# (default 10), then stops and quits pktgen, so scripted runs end (0: it
# keeps sending until `stop N` / `quit` at the prompt).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out="$here/out"
sizes="128,512,1400"
gen="$root/build/perf/gossipgen/gossipgen"
config=""
dst_mac=""
timestamp=$(date +%s)
rate=100
port=0
seconds=10

usage() { sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }
while [ $# -gt 0 ]; do
  case "$1" in
    --config) config=$2; shift 2 ;;
    --dst-mac) dst_mac=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --gossipgen) gen=$2; shift 2 ;;
    --timestamp) timestamp=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --port) port=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    -h|--help) usage 0 ;;
    *) echo "make_inputs.sh: unknown option $1" >&2; usage 2 ;;
  esac
done
[ -n "$config" ] || { echo "make_inputs.sh: --config is required" >&2; exit 2; }
[ -n "$dst_mac" ] || { echo "make_inputs.sh: --dst-mac is required (the gateway port's MAC)" >&2; exit 2; }
case "$seconds" in ''|*[!0-9]*) echo "make_inputs.sh: --seconds must be a whole number" >&2; exit 2 ;; esac
[ -x "$gen" ] || { echo "make_inputs.sh: no gossipgen at $gen (ninja -C build perf/gossipgen/gossipgen)" >&2; exit 2; }
mkdir -p "$out"

# The same cases as perf/bench/run.sh (perf/bench/bench.py explains each).
declare -A mix=(
  [foreign]="foreign=4096"
  [unkeyed]="unkeyed_random=4096"
  [forged]="forged_header=4096"
  [replayed]="valid=256,replayed=3840"
  [valid]="valid=16384"
  [storm]="valid=400,foreign=2000,unkeyed_random=2000,forged_header=2000,replayed=1600"
)
declare -A epochs=([foreign]=1 [unkeyed]=1 [forged]=1 [replayed]=1 [valid]=4096 [storm]=1)

for case in foreign unkeyed forged replayed valid storm; do
  for size in ${sizes//,/ }; do
    name="$case-$size"
    "$gen" --config "$config" --dst-mac "$dst_mac" --seed 7 --size "$size" --timestamp "$timestamp" \
      --nonce-epochs "${epochs[$case]}" --mix "${mix[$case]}" --out "$out/$name.pcap" --truth "$out/$name.truth.json" \
      >/dev/null
    # pktgen command file: stream the pcap (loaded with -s $port:$name.pcap) at $rate % of line rate.
    cat > "$out/$name.pkt" <<PKT
# gossipgw benchmark: $name ($size-byte frames, ${mix[$case]})
# pktgen ... -- -P -m "[2:3].$port" -s $port:$out/$name.pcap -f $out/$name.pkt
stop $port
clr
enable $port pcap
set $port rate $rate
start $port
PKT
    if [ "$seconds" -gt 0 ]; then
      # pktgen's command files never end on their own: wait, stop, quit.
      printf 'sleep %s\nstop %s\nquit\n' "$seconds" "$port" >>"$out/$name.pkt"
    fi
    echo "$out/$name.pcap ($(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['packets'])" "$out/$name.truth.json") frames), $out/$name.pkt"
  done
done
