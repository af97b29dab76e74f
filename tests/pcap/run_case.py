#!/usr/bin/env python3
"""Runs one pcap case: the real gossipgw on net_pcap over gossipgen traffic.

A case is a folder under tests/pcap/cases/ holding:
  config.yaml    the gateway config (key files relative to it)
  keys/*.hex     test-only keys, written to 0600 files at run time
  case.json      {"gossipgen": [args...], "defer_control": false,
                  "check_unkeyed": false, "operator_rules": {"RULE": "KIND"},
                  "expect_unkeyed": {"COUNTER": N}}
  expected.json  the ground truth gossipgen wrote for these args (regenerate
                 with: tests/pcap/run_case.py CASE ... --regenerate)

The runner generates the pcap, checks gossipgen still writes expected.json,
runs gossipgw with --no-huge on the pcap until it is idle, and asserts that
every counter in the gateway's --stats-json equals the ground truth exactly.

The gateway's workers run on a frozen clock (--freeze-clock) at gossipgen's
--timestamp (default 1700000000), so replay-window and token-bucket verdicts
are exact. The unkeyed counters always add up to drop_unkeyed; with
"check_unkeyed" each must equal the truth (the case's config must then scan
every unkeyed packet: classifier.max_scans_per_burst: 0). "operator_rules"
names config rules that match every packet of a gossipgen kind which the
built-in signatures leave unmatched. "expect_unkeyed" gives unkeyed counters
outright, for what the truth cannot know (what a per-burst scan budget skipped).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile


def die(msg):
    print(f"FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def run(cmd, **kw):
    print("+ " + " ".join(cmd), flush=True)
    return subprocess.run(cmd, stdin=subprocess.DEVNULL, **kw)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case")
    ap.add_argument("--gossipgw", required=True)
    ap.add_argument("--gossipgen", required=True)
    ap.add_argument("--corpus", default="")
    ap.add_argument("--regenerate", action="store_true",
                    help="rewrite the case's expected.json from gossipgen")
    args = ap.parse_args()

    case = os.path.abspath(args.case)
    name = os.path.basename(case)
    with open(os.path.join(case, "case.json")) as f:
        spec = json.load(f)

    if spec.get("needs_corpus") and not os.path.isfile(args.corpus):
        print(f"SKIP: {name} needs the corpus file {args.corpus!r}")
        sys.exit(77)  # meson's "skipped"

    tmp = tempfile.mkdtemp(prefix=f"gwpcap-{name}-")
    try:
        shutil.copy(os.path.join(case, "config.yaml"), tmp)
        os.makedirs(os.path.join(tmp, "keys"))
        keydir = os.path.join(case, "keys")
        for k in sorted(os.listdir(keydir)):
            with open(os.path.join(keydir, k)) as f:
                raw = bytes.fromhex(f.read().strip())
            path = os.path.join(tmp, "keys", k[:-4] + ".key")
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            os.write(fd, raw)
            os.close(fd)

        cfg = os.path.join(tmp, "config.yaml")
        pcap = os.path.join(tmp, "in.pcap")
        truth = os.path.join(tmp, "truth.json")
        gen = [args.gossipgen, "--config", cfg, "--out", pcap, "--truth", truth]
        for a in spec["gossipgen"]:
            gen.append(a.replace("@CORPUS@", args.corpus))
        if run(gen).returncode != 0:
            die("gossipgen failed")
        with open(truth) as f:
            got_truth = json.load(f)

        expected_path = os.path.join(case, "expected.json")
        if args.regenerate:
            with open(expected_path, "w") as f:
                json.dump(got_truth, f, indent=2, sort_keys=True)
                f.write("\n")
            print(f"regenerated {expected_path}")
        with open(expected_path) as f:
            expected_truth = json.load(f)
        if got_truth != expected_truth:
            die(f"gossipgen's ground truth differs from {expected_path}; "
                "rerun with --regenerate if the change is intended")

        clock = "1700000000"  # gossipgen's default --timestamp
        gen_args = spec["gossipgen"]
        if "--timestamp" in gen_args:
            clock = gen_args[gen_args.index("--timestamp") + 1]
        stats = os.path.join(tmp, "stats.json")
        gw = [args.gossipgw, "-l", "0,1", "--no-huge", "-m", "256", "--no-pci",
              f"--file-prefix=gwpcap-{name}-{os.getpid()}", "--log-level=lib.eal:warning",
              f"--vdev=net_pcap0,rx_pcap={pcap}",
              "--", "--config", cfg, "--idle-exit-ms", "500", "--stats-json", stats,
              "--freeze-clock", clock]
        if spec.get("defer_control"):
            gw.append("--defer-control")
        r = run(gw, timeout=120)
        if r.returncode != 0:
            die(f"gossipgw exited with {r.returncode}")
        with open(stats) as f:
            got = json.load(f)

        expect = dict(expected_truth["expected"])
        expect_classes = dict(expected_truth["classes"])
        cap = spec.get("ring_capacity")
        if cap:
            # The control lcore drains only after the input ends, so each class
            # ring keeps its first `cap` packets and the rest are ring-full.
            kept = {c: min(n, cap) for c, n in expect_classes.items()}
            lost = sum(expect_classes.values()) - sum(kept.values())
            expect["accepted"] -= lost
            expect["drop_ring_full"] += lost
            expect_classes = kept
            for k in [k for k in expect if k.startswith("msg_") and k != "msg_decode_error"]:
                del expect[k]  # which messages were in the dropped packets is not known

        totals = got["totals"]
        bad = []
        for k, v in sorted(expect.items()):
            if totals.get(k) != v:
                bad.append(f"  {k}: expected {v}, gateway counted {totals.get(k)}")
        for k, v in sorted(expect_classes.items()):
            if got["classes"].get(k) != v:
                bad.append(f"  classes.{k}: expected {v}, gateway counted {got['classes'].get(k)}")
        for k, v in totals.items():
            if k not in expect and not k.startswith("msg_") and v != 0:
                bad.append(f"  {k}: expected 0, gateway counted {v}")
        verdicts = [k for k in totals if k == "accepted" or k.startswith("drop_")]
        if sum(totals[k] for k in verdicts) != totals["rx_total"]:
            bad.append("  verdict counters do not add up to rx_total")
        unkeyed = got.get("unkeyed", {})
        if sum(unkeyed.values()) != totals.get("drop_unkeyed"):
            bad.append(f"  unkeyed counters {unkeyed} do not add up to drop_unkeyed")
        n_unkeyed = 0
        if spec.get("check_unkeyed"):
            expect_unkeyed = dict(expected_truth["unkeyed"])
            for rule, kind in spec.get("operator_rules", {}).items():
                n = expected_truth["kinds"][kind]
                expect_unkeyed[rule] = n
                expect_unkeyed["unmatched"] -= n
            expect_unkeyed["unscanned"] = 0
            for k, v in sorted(expect_unkeyed.items()):
                if unkeyed.get(k) != v:
                    bad.append(f"  unkeyed.{k}: expected {v}, gateway counted {unkeyed.get(k)}")
            for k, v in unkeyed.items():
                if k not in expect_unkeyed and v != 0:
                    bad.append(f"  unkeyed.{k}: expected 0, gateway counted {v}")
            n_unkeyed = len(expect_unkeyed)
        for k, v in sorted(spec.get("expect_unkeyed", {}).items()):
            # Counts the truth cannot know, such as what a scan budget skipped.
            if unkeyed.get(k) != v:
                bad.append(f"  unkeyed.{k}: expected {v}, gateway counted {unkeyed.get(k)}")
            n_unkeyed += 1
        print(f"{name}: rx_total={totals['rx_total']} accepted={totals['accepted']}")
        if bad:
            die(f"{name}: counters differ from the ground truth:\n" + "\n".join(bad))
        print(f"{name}: all {len(expect) + len(expect_classes) + n_unkeyed} counters match")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
