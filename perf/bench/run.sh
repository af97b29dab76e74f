#!/usr/bin/env bash
# The check-ladder benchmark (issue 5): dpdk-testpmd rxonly (receive ceiling),
# gossipgw with one worker core, and the libsodium crypto floor, on the same
# net_pcap infinite_rx input per case, in one invocation. Prints a Markdown
# table (Mpps, ratios, targets). Details and options: run.sh --help.
#
#   meson setup build-bench -Dbuildtype=release -Dtests=false -Dwerror=false
#   ninja -C build-bench control/gateway/gossipgw perf/gossipgen/gossipgen perf/bench/crypto_floor
#   perf/bench/run.sh [--cases foreign,valid] [--sizes 128,512,1400] [--seconds 5] [--repeats 3]
#
# Needs root (DPDK runtime directory and telemetry socket under /var/run/dpdk)
# and two CPUs: lcore 0 (testpmd's main / gossipgw's control) and lcore 1 (the
# forwarding / worker core). Nothing else should busy-poll meanwhile.
set -euo pipefail
exec python3 "$(dirname "$0")/bench.py" "$@"
