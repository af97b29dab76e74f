#!/usr/bin/env python3
"""Two workers, one rx queue each, on the real gateway.

usage: multiqueue_test.py GOSSIPGW GOSSIPGEN

One net_pcap device with two rx_pcap= files has two rx queues (a virtual
device has no RSS: queue i reads file i, and the port logs that it falls
back). Two different gossipgen mixes go to the two queues; lcores.workers is
[1, 2] and EAL maps lcores 1 and 2 onto one CPU (--lcores=0@0,1@1,2@1) so the
test fits two CPUs. Checks, exactly:
  - each worker lcore's verdict counters equal its own file's ground truth;
  - the per-lcore counters add up to the totals, and the totals equal the sum
    of both truths (verdicts, classes);
  - both rx queues were served (rx_total > 0 on each worker).
Then the same valid file on both queues (issue 17, item 3: replay across
worker lcores): each worker accepts every frame (its own windows never saw
them), and the control lcore serves each datagram once: its messages are
counted once and handoff_drop_replay counts the other copy of each.
Then a restart (issue 17, item 4): the same file offered to a gateway that
started 5 s after those datagrams were sealed is refused, drop_before_start,
where a restarted gateway used to accept all of it again.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

GW, GEN = sys.argv[1:3]
failures = []


def check(name, cond, detail=""):
    print(("ok   " if cond else "FAIL ") + name + ("" if cond else f": {detail}"), flush=True)
    if not cond:
        failures.append(name)


def verdicts(counters):
    return {k: v for k, v in counters.items() if k == "accepted" or k.startswith("drop_")}


tmp = tempfile.mkdtemp(prefix="gwmq-")
try:
    key = os.path.join(tmp, "k.key")
    fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, bytes(range(1, 33)))
    os.close(fd)
    cfg = os.path.join(tmp, "gw.yaml")
    with open(cfg, "w") as f:
        f.write("cluster:\n  name: mq\n  suite: chacha20poly1305\n  keys:\n    - file: k.key\n"
                "node:\n  address: 10.0.0.1\n  port: 7946\n"
                "lcores:\n  control: 0\n  workers: [1, 2]\n"
                "dataplane:\n  mbufs: 8192\n  idle_backoff_us: 50\n"  # two workers share one CPU
                "rings:\n  size: 8192\n"
                "classifier:\n  max_scans_per_burst: 0\n  max_scans_per_sec: 0\n")
    mixes = [
        ("a", "1", "10.0.1.2", "valid=700,foreign=300,unknown_key=100,forged_header=200,forged_tag=50,"
                               "unkeyed_random=200,not_gossip=60,malformed=90,replayed=120,stale=40"),
        ("b", "2", "10.0.2.2", "valid=400,foreign=150,forged_ciphertext=80,unkeyed_short=120,"
                               "unkeyed_version=60,malformed=50,replayed=60,flood=300"),
    ]
    truths, pcaps = [], []
    for name, seed, src, mix in mixes:
        pcap = os.path.join(tmp, f"{name}.pcap")
        truth = os.path.join(tmp, f"{name}.json")
        subprocess.run([GEN, "--config", cfg, "--seed", seed, "--src-ip", src, "--mix", mix, "--out", pcap,
                        "--truth", truth], check=True, stdout=subprocess.DEVNULL)
        with open(truth) as f:
            truths.append(json.load(f))
        pcaps.append(pcap)

    stats_path = os.path.join(tmp, "stats.json")
    cmd = [GW, "--lcores=0@0,1@1,2@1", "--no-huge", "-m", "512", "--no-pci", f"--file-prefix=gwmq-{os.getpid()}",
           "--log-level=lib.eal:warning", f"--vdev=net_pcap0,rx_pcap={pcaps[0]},rx_pcap={pcaps[1]}", "--",
           "--config", cfg, "--idle-exit-ms", "1000", "--stats-json", stats_path, "--freeze-clock", "1700000000"]
    r = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=180)
    check("gossipgw exits 0", r.returncode == 0, r.stderr[-3000:])
    check("the port says it has no RSS and why", "no RSS" in r.stderr, r.stderr[-2000:])
    with open(stats_path) as f:
        stats = json.load(f)

    workers = sorted((l for l in stats["lcores"] if l["role"] == "worker"), key=lambda l: l["queue"])
    check("two worker lcores, queues 0 and 1, on lcores 1 and 2",
          [(l["lcore"], l["queue"]) for l in workers] == [(1, 0), (2, 1)], workers)
    for l, t, (name, _, _, _) in zip(workers, truths, mixes):
        got = verdicts(l["counters"])
        want = t["expected"]
        bad = {k: (v, got.get(k, 0)) for k, v in want.items() if (k == "accepted" or k.startswith("drop_"))
               and got.get(k, 0) != v}
        bad.update({k: (0, v) for k, v in got.items() if v and k not in want})
        check(f"queue {l['queue']} ({name}.pcap): verdicts equal its ground truth", not bad,
              f"(expected, counted): {bad}")
        check(f"queue {l['queue']}: rx_total = packets in {name}.pcap", l["counters"]["rx_total"] == t["packets"],
              f"{l['counters']['rx_total']} vs {t['packets']}")
        check(f"queue {l['queue']}: accepted by class equal the truth", l["accepted_by_class"] == t["classes"],
              f"{l['accepted_by_class']} vs {t['classes']}")

    totals = stats["totals"]
    for k in ["rx_total"] + list(verdicts(totals)):
        s = sum(l["counters"].get(k, 0) for l in workers)
        if s != totals[k]:
            check(f"per-lcore {k} adds up to the total", False, f"{s} vs {totals[k]}")
            break
    else:
        check("per-lcore counters add up to the totals", True)
    want_total = {}
    for t in truths:
        for k, v in t["expected"].items():
            if k == "accepted" or k.startswith("drop_"):
                want_total[k] = want_total.get(k, 0) + v
    got_total = {k: v for k, v in verdicts(totals).items() if v or k in want_total}
    check("totals equal the sum of both ground truths", got_total == want_total,
          f"\n got  {got_total}\n want {want_total}")
    check("rx_total equals both files", totals["rx_total"] == sum(t["packets"] for t in truths))
    classes = {c: sum(t["classes"][c] for t in truths) for c in truths[0]["classes"]}
    check("classes equal the sum of both truths", stats["classes"] == classes, f"{stats['classes']} vs {classes}")

    # The same datagrams on both queues.
    same = os.path.join(tmp, "same.pcap")
    same_truth = os.path.join(tmp, "same.json")
    subprocess.run([GEN, "--config", cfg, "--seed", "3", "--src-ip", "10.0.3.2", "--mix", "valid=300",
                    "--out", same, "--truth", same_truth], check=True, stdout=subprocess.DEVNULL)
    with open(same_truth) as f:
        st = json.load(f)
    stats2 = os.path.join(tmp, "stats2.json")
    cmd2 = [GW, "--lcores=0@0,1@1,2@1", "--no-huge", "-m", "512", "--no-pci", f"--file-prefix=gwmq2-{os.getpid()}",
            "--log-level=lib.eal:warning", f"--vdev=net_pcap0,rx_pcap={same},rx_pcap={same}", "--",
            "--config", cfg, "--idle-exit-ms", "1000", "--stats-json", stats2, "--freeze-clock", "1700000000"]
    r = subprocess.run(cmd2, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=180)
    check("gossipgw exits 0 (same file on both queues)", r.returncode == 0, r.stderr[-3000:])
    with open(stats2) as f:
        s2 = json.load(f)
    t2 = s2["totals"]
    n = st["expected"]["accepted"]
    check("each worker accepts every copy (per-lcore windows)", t2["accepted"] == 2 * n, f"{t2['accepted']} vs {2 * n}")
    check("the control lcore refuses the second copy of each datagram", t2.get("handoff_drop_replay") == n,
          f"{t2.get('handoff_drop_replay')} vs {n}")
    msgs = {k: v for k, v in st["expected"].items() if k.startswith("msg_")}
    got_msgs = {k: t2.get(k) for k in msgs}
    check("each datagram's messages are counted once", got_msgs == msgs, f"{got_msgs} vs {msgs}")

    # Restart: the previous run accepted these; a new run 5 s later (well
    # inside replay_window_s) must not.
    stats3 = os.path.join(tmp, "stats3.json")
    cmd3 = [c if c != stats2 else stats3 for c in cmd2]
    cmd3[cmd3.index("1700000000")] = "1700000005"
    cmd3 = [c.replace("gwmq2-", "gwmq3-") for c in cmd3]
    r = subprocess.run(cmd3, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=180)
    check("gossipgw exits 0 (restarted)", r.returncode == 0, r.stderr[-3000:])
    with open(stats3) as f:
        t3 = json.load(f)["totals"]
    check("after a restart nothing sealed before it is accepted again", t3["accepted"] == 0, t3["accepted"])
    check("they are counted drop_before_start", t3.get("drop_before_start") == 2 * n,
          f"{t3.get('drop_before_start')} vs {2 * n}")
finally:
    shutil.rmtree(tmp, ignore_errors=True)

if failures:
    print(f"{len(failures)} check(s) failed: {', '.join(failures)}")
    sys.exit(1)
print("all multi-queue checks passed")
