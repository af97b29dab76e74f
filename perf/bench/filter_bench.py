#!/usr/bin/env python3
"""Filter mode's speed (issue 54 item 4), measured as the native ladder's is
(perf/bench/bench.py): per case and frame size, on the same net_pcap
infinite_rx file, in one invocation:

  rxonly  dpdk-testpmd --forward-mode=rxonly: the receive ceiling
  filter  gossipgw in `mode: memberlist` with one worker core, the NIC the
          pcap, the agent port a net_null (no-rx) that frees what it is given
  floor   (sealed cases) ml_pcapgen --floor-seconds on the worker's CPU: one
          AES-GCM open of each of the file's datagrams with the key that
          opens it, no packet I/O; and inspect() alone, likewise
and two serial limits: 1 / (1/rxonly + 1/floor), one core that must both
receive and open every datagram (issue 53's yardstick), and
1 / (1/rxonly + 1/inspect), one that must receive and inspect each (the
AES-GCM open is the small part of a compressed Serf packet: its LZW and
msgpack reads are the rest).

Rates: testpmd's "Rx-pps" reports (bench.run_testpmd); the gateway's NIC
`ipackets` from DPDK's own telemetry (/ethdev/stats,0), polled every 50 ms,
the first second after traffic starts left out. The worker receives the
next burst only after it has filtered and forwarded the last, so the
receive rate is the filter's rate. Each repeat measures both, in
alternating order; the median ratio is kept. The verdict shares come from
the gateway's --stats-json and are checked against the case's expectation.

  meson setup build-bench -Dbuildtype=release -Dtests=false -Dwerror=false
  ninja -C build-bench control/gateway/gossipgw perf/bench/ml_pcapgen
  perf/bench/filter_bench.py --gossipgw build-bench/control/gateway/gossipgw \\
      --pcapgen build-bench/perf/bench/ml_pcapgen [--cases valid,plaintext] [--sizes 128,512,1400]

Root (DPDK runtime directory, telemetry socket) and two CPUs: lcore 0 the
control lcore / testpmd's main, lcore 1 the worker.
"""
import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402  (Telemetry, run_testpmd, stop)

# case: (ml_pcapgen case, the frame verdict most frames must get, the
# inspector verdict where one applies, whether a floor applies)
CASES = {
    "valid": ("valid", "to_agent", "ml_accepted", True),
    "lastkey": ("lastkey", "to_agent", "ml_accepted", True),
    "forged": ("forged", "drop_inspected", "ml_drop_bad_auth", True),
    "plaintext": ("plaintext", "drop_inspected", "ml_drop_plaintext", False),
    "disallowed": ("disallowed", "drop_not_allowed", None, False),
    "crash": ("crash", "drop_inspected", "ml_drop_bad_vsn", True),
}

CONFIG = """\
mode: memberlist
lcores:
  control: 0
  workers: [1]
dataplane:
  port_id: 0
  mbufs: {mbufs}
  burst: {burst}
  idle_backoff_us: 100
memberlist:
  ports: [7946]
  agent_port_id: 1
  allow_cidrs: ["10.0.0.0/8"]
  keyring_file: {keyring}
  per_source_pps: 10000000
  per_source_burst: 10000000
"""

WORKER_CPU = "1"


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def run_filter(args, cfg, pcap, prefix, stats_path):
    """Mpps the filter receives (and so filters) on `pcap`, and its stats."""
    cmd = [args.gossipgw, "-l", "0,1", "--no-huge", "-m", str(args.mem), "--no-pci",
           f"--file-prefix={prefix}", "--log-level=lib.eal:warning",
           f"--vdev=net_pcap0,rx_pcap={pcap},infinite_rx=1", "--vdev=net_null0,no-rx=1", "--",
           "--config", cfg, "--stats-json", stats_path, "--log-level", "warn"]
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    samples = []
    tel = None
    try:
        start = time.monotonic()
        tel = bench.Telemetry(prefix, start + 30)
        end = time.monotonic() + 60
        traffic = False
        while time.monotonic() < end:
            if proc.poll() is not None:
                raise RuntimeError("gossipgw exited early: " + proc.stderr.read()[-2000:])
            s = tel.query("/ethdev/stats,0")
            now = time.monotonic()
            if s and "ipackets" in s:
                samples.append((now, s["ipackets"]))
                if s["ipackets"] > 0 and not traffic:
                    traffic = True
                    end = now + args.seconds + 1
            time.sleep(0.05)
    finally:
        if tel:
            tel.close()
        bench.stop(proc)
        shutil.rmtree(f"/var/run/dpdk/{prefix}", ignore_errors=True)
    if proc.returncode not in (0, None):
        raise RuntimeError(f"gossipgw exited with {proc.returncode}: " + proc.stderr.read()[-2000:])
    live = [s for s in samples if s[1] > 0]
    if not live:
        raise RuntimeError("no packets received")
    window = [s for s in live if s[0] >= live[0][0] + 1.0]
    if len(window) < 3:
        raise RuntimeError(f"too few samples ({len(window)}): raise --seconds")
    (ta, ra), (tb, rb) = window[0], window[-1]
    with open(stats_path) as f:
        stats = json.load(f)
    return (rb - ra) / (tb - ta) / 1e6, stats


def run_floor(args, case, size, pcap_unused, keys):
    out = subprocess.run(["taskset", "-c", WORKER_CPU, args.pcapgen, "--case", CASES[case][0], "--out",
                          os.devnull, "--frames", "4096", "--size", str(size), "--keys", str(keys),
                          "--key-len", str(args.key_len), "--floor-seconds", str(max(1, int(min(args.seconds, 3))))],
                         capture_output=True, text=True, check=True)
    fields = dict(kv.split("=") for kv in out.stdout.split() if "=" in kv)
    return float(fields["open_mpps"]), float(fields["inspect_mpps"])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gossipgw", default="build-bench/control/gateway/gossipgw")
    ap.add_argument("--pcapgen", default="build-bench/perf/bench/ml_pcapgen")
    ap.add_argument("--cases", default="valid,lastkey,forged,plaintext,disallowed,crash")
    ap.add_argument("--sizes", default="128,512,1400")
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--keys", type=int, default=3, help="keys in the keyring (lastkey opens with the last)")
    ap.add_argument("--key-len", type=int, default=32)
    ap.add_argument("--frames", type=int, default=4096)
    ap.add_argument("--mem", type=int, default=512)
    ap.add_argument("--mbufs", type=int, default=16384)
    ap.add_argument("--burst", type=int, default=32)
    ap.add_argument("--json", help="write every measurement here")
    args = ap.parse_args()
    args.mem_valid = args.mem  # what bench.run_testpmd reads
    cases = args.cases.split(",")
    for c in cases:
        if c not in CASES:
            ap.error(f"unknown case {c} (one of {', '.join(CASES)})")
    sizes = [int(s) for s in args.sizes.split(",")]
    work = tempfile.mkdtemp(prefix="filterbench-")
    rows = []
    try:
        for case in cases:
            gen_case, want, want_ml, has_floor = CASES[case]
            for size in sizes:
                pcap = os.path.join(work, f"{case}-{size}.pcap")
                keyring = os.path.join(work, f"keyring-{case}-{size}.json")
                gen = subprocess.run([args.pcapgen, "--case", gen_case, "--out", pcap, "--frames", str(args.frames),
                                      "--size", str(size), "--keys", str(args.keys), "--key-len", str(args.key_len),
                                      "--keyring-out", keyring], check=True, capture_output=True, text=True)
                # "N frames of case C, B bytes on average": frames are at least what their case holds.
                mean_bytes = float(gen.stdout.split(" bytes on average")[0].rsplit(", ", 1)[1])
                os.chmod(keyring, 0o600)
                cfg = os.path.join(work, f"{case}-{size}.yaml")
                with open(cfg, "w") as f:
                    f.write(CONFIG.format(mbufs=args.mbufs, burst=args.burst, keyring=keyring))
                rx, gw, share = [], [], []
                stats = None
                for r in range(args.repeats):
                    order = ["rx", "gw"] if r % 2 == 0 else ["gw", "rx"]
                    for what in order:
                        prefix = f"fb{os.getpid()}{case}{size}{r}{what}"
                        if what == "rx":
                            rx.append(bench.run_testpmd(args, pcap, prefix))
                        else:
                            mpps, stats = run_filter(args, cfg, pcap, prefix, os.path.join(work, "stats.json"))
                            gw.append(mpps)
                            frames = stats["frames"][want]
                            rx_total = stats["io"]["rx_from_network"]
                            share.append(frames / rx_total if rx_total else 0)
                            if want_ml is not None and stats["ml"][want_ml] < frames * 0.99:
                                raise RuntimeError(f"{case}: {want} frames were not {want_ml}: {json.dumps(stats)[:2000]}")
                floor = inspect = None
                if has_floor:
                    floor, inspect = run_floor(args, case, size, pcap, args.keys)
                if min(share) < 0.99:
                    raise RuntimeError(f"{case}: only {min(share):.3f} of the frames were {want}")
                row = {"case": case, "size": size, "mean_frame_bytes": mean_bytes, "rxonly_mpps": statistics.median(rx),
                       "filter_mpps": statistics.median(gw),
                       "ratio_rxonly": statistics.median([g / x for g, x in zip(gw, rx)]),
                       "verdict": want, "verdict_share": min(share), "floor_open_mpps": floor,
                       "inspect_mpps": inspect}
                if floor:
                    serial = [1 / (1 / x + 1 / floor) for x in rx]
                    row["serial_limit_mpps"] = statistics.median(serial)
                    row["ratio_serial"] = statistics.median([g / s for g, s in zip(gw, serial)])
                    serial_i = [1 / (1 / x + 1 / inspect) for x in rx]
                    row["serial_inspect_mpps"] = statistics.median(serial_i)
                    row["ratio_serial_inspect"] = statistics.median([g / s for g, s in zip(gw, serial_i)])
                rows.append(row)
                log(json.dumps(row))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("| case | frame (mean) | rxonly Mpps | filter Mpps | filter / rxonly | open floor Mpps | inspect alone Mpps"
          " | rx + open limit | filter / it | rx + inspect limit | filter / it | verdict (share) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        f = lambda v, p=2: "-" if v is None else f"{v:.{p}f}"  # noqa: E731
        print(f"| {r['case']} | {r['size']} B ({r['mean_frame_bytes']:.0f}) | {f(r['rxonly_mpps'])} | "
              f"{f(r['filter_mpps'])} | {f(r['ratio_rxonly'])} | {f(r['floor_open_mpps'])} | {f(r['inspect_mpps'])} | "
              f"{f(r.get('serial_limit_mpps'))} | {f(r.get('ratio_serial'))} | "
              f"{f(r.get('serial_inspect_mpps'))} | {f(r.get('ratio_serial_inspect'))} | "
              f"{r['verdict']} ({r['verdict_share'] * 100:.1f} %) |")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
