#!/usr/bin/env python3
"""A/B of gossipgw builds on one input, for perf work on the ladder.

Runs each binary in turn on the same net_pcap infinite_rx file (and config),
rotating the order every round so the VM's minute-to-minute drift falls on
all of them alike, and prints each binary's rates and median. Rates are read
as perf/bench/run.sh reads them (bench.run_gateway: DPDK telemetry, first
second left out).

  perf/bench/run.sh --cases valid --sizes 128 --repeats 1 --keep   # makes WORK
  python3 perf/bench/ab.py --work WORK --pcap valid-128.pcap --rounds 3 \\
      /tmp/gossipgw-before build-bench/control/gateway/gossipgw

The pcaps carry the time they were made: with the bench config's
replay_window_s of 3600, use them within the hour.
"""
import argparse
import os
import statistics
import sys
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", required=True, help="a work directory kept by run.sh --keep")
    ap.add_argument("--pcap", required=True, help="input file name within --work")
    ap.add_argument("--config", default="gossipgw.yaml", help="config file name within --work")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=3, help="measured seconds per run")
    ap.add_argument("--mem", type=int, default=1024, help="EAL -m (MiB, --no-huge)")
    ap.add_argument("binaries", nargs="+")
    args = ap.parse_args()
    for b in args.binaries:
        if not os.access(b, os.X_OK):
            sys.exit(f"not executable: {b}")
    rates = {b: [] for b in args.binaries}
    run = types.SimpleNamespace(mem=args.mem, seconds=args.seconds)
    for r in range(args.rounds):
        k = r % len(args.binaries)
        for i, b in enumerate(args.binaries[k:] + args.binaries[:k]):
            run.gossipgw = b
            mpps, _ = bench.run_gateway(run, os.path.join(args.work, args.config),
                                        os.path.join(args.work, args.pcap), f"gwab{os.getpid()}r{r}b{i}",
                                        os.path.join(args.work, "ab-stats.json"))
            rates[b].append(mpps)
            print(f"round {r + 1} {b}: {mpps:.3f} Mpps", file=sys.stderr, flush=True)
    for b, v in rates.items():
        print(f"{b}: median {statistics.median(v):.3f} Mpps {[round(x, 3) for x in v]}")


if __name__ == "__main__":
    main()
