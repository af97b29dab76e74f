#!/usr/bin/env python3
"""The membership engine hosted on the control lcore, end to end.

usage: membership_host_test.py GOSSIPGW PEER_TOOL GOSSIPCTL

A scripted peer joins through the gateway (pcap in); the gateway must admit it
to its member table, answer the join with its state, and on its way out
broadcast a graceful leave; everything it sends is opened with the cluster key
as the peer would (pcap out).
"""
import json
import os
import queue
import signal
import threading
import time
import shutil
import subprocess
import sys
import tempfile

GW, PEER, CTL = sys.argv[1:4]
failures = []


def check(name, cond, detail=""):
    print(("ok   " if cond else "FAIL ") + name + ("" if cond else f": {detail}"), flush=True)
    if not cond:
        failures.append(name)


tmp = tempfile.mkdtemp(prefix="gwmember-")
try:
    subprocess.run([CTL, "keygen", "--out", os.path.join(tmp, "k.key")], check=True, capture_output=True)
    cfg = os.path.join(tmp, "gw.yaml")
    with open(cfg, "w") as f:
        f.write("""cluster:
  name: hosted
  suite: chacha20poly1305
  keys:
    - file: k.key
node:
  name: gw-a
  address: 10.0.0.1
  port: 7946
membership:
  preset: lan
  tags: {role: control-plane}
  leave_timeout_ms: 2000
log:
  level: debug
""")
    rx = os.path.join(tmp, "in.pcap")
    tx = os.path.join(tmp, "out.pcap")
    stats = os.path.join(tmp, "stats.json")
    r = subprocess.run([PEER, "join", "--config", cfg, "--peer-name", "peer-1", "--peer-ip", "10.0.0.2",
                        "--out", rx], capture_output=True, text=True)
    check("peer wrote its join", r.returncode == 0, r.stderr)

    r = subprocess.run([GW, "-l", "0,1", "--no-huge", "-m", "256", "--no-pci",
                        f"--file-prefix=gwmember-{os.getpid()}", "--log-level=lib.eal:warning",
                        f"--vdev=net_pcap0,rx_pcap={rx},tx_pcap={tx}",
                        "--", "--config", cfg, "--idle-exit-ms", "300", "--stats-json", stats],
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    check("gateway exit 0", r.returncode == 0, r.stderr)

    with open(stats) as f:
        doc = json.load(f)
    totals = doc["totals"]
    check("join accepted", totals["accepted"] >= 1 and totals["msg_sync_request"] >= 1, str(totals))
    members = {m["name"]: m for m in doc["membership"]["members"]}
    check("peer-1 in the member table", "peer-1" in members, str(members))
    if "peer-1" in members:
        check("peer-1 at its address", members["peer-1"]["address"] == "10.0.0.2", str(members["peer-1"]))
    check("self in the member table with tags", members.get("gw-a", {}).get("tags") == {"role": "control-plane"},
          str(members.get("gw-a")))
    shaper = doc["membership"]["shaper"]
    check("nothing dropped on the way out",
          doc["tx_queue"]["drop_ring_full"] == 0 and doc["tx_queue"]["drop_no_buffer"] == 0 and
          all(c["dropped"] == 0 and c["refused"] == 0 for c in shaper.values()),
          json.dumps(doc["tx_queue"]) + json.dumps(shaper))
    shaped = sum(c["sent"] for c in shaper.values())
    worker_tx = doc["lcores"][0]["tx"]
    check("worker transmitted what was sealed and shaped",
          worker_tx["tx_packets"] == shaped == doc["membership"]["sealed"] > 0,
          f"{worker_tx} shaped {shaped} sealed {doc['membership']['sealed']}")
    check("urgent class carried the leave", shaper["urgent"]["sent"] >= 1, json.dumps(shaper))
    check("replies go to the learned MAC, not broadcast", worker_tx["tx_broadcast_unknown_mac"] == 0, str(worker_tx))

    r = subprocess.run([PEER, "inspect", "--config", cfg, "--peer-ip", "10.0.0.2", "--in", tx],
                       capture_output=True, text=True)
    check("peer opened the gateway's output", r.returncode == 0, r.stderr)
    seen = json.loads(r.stdout)
    print(json.dumps(seen))
    check("every frame to the peer authenticates", seen["verdicts"].get("accepted", 0) == seen["frames"] > 0,
          str(seen))
    check("join answered with state", seen["messages"].get("sync_response", 0) >= 1, str(seen))
    check("graceful leave broadcast", "gw-a" in seen["leave_nodes"], str(seen))

    # SIGTERM: an input that never ends (infinite_rx), so only the signal stops
    # the gateway; the leave must still go out before it exits.
    tx2 = os.path.join(tmp, "out-sigterm.pcap")
    stats2 = os.path.join(tmp, "stats-sigterm.json")
    p = subprocess.Popen([GW, "-l", "0,1", "--no-huge", "-m", "256", "--no-pci",
                          f"--file-prefix=gwmember2-{os.getpid()}", "--log-level=lib.eal:warning",
                          f"--vdev=net_pcap0,rx_pcap={rx},tx_pcap={tx2},infinite_rx=1",
                          "--", "--config", cfg, "--stats-json", stats2],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lines = queue.Queue()
    threading.Thread(target=lambda: [lines.put(l) for l in p.stderr], daemon=True).start()
    joined = False
    deadline = time.monotonic() + 60
    while not joined and time.monotonic() < deadline:  # wait for the peer to be admitted
        try:
            joined = "member peer-1 join" in lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            break
    check("SIGTERM run: peer admitted before the signal", joined)
    p.send_signal(signal.SIGTERM)
    try:
        rc = p.wait(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        rc = None
    check("SIGTERM run: exit 0", rc == 0, f"exit {rc}")
    r = subprocess.run([PEER, "inspect", "--config", cfg, "--peer-ip", "10.0.0.2", "--in", tx2],
                       capture_output=True, text=True)
    seen2 = json.loads(r.stdout) if r.returncode == 0 else {}
    check("SIGTERM run: leave broadcast before exit", "gw-a" in seen2.get("leave_nodes", []), str(seen2))

    # Admission policy from the config: only names starting "gw-" may join.
    cfg3 = os.path.join(tmp, "gw-policy.yaml")
    with open(cfg) as f, open(cfg3, "w") as g:
        g.write(f.read().replace("  leave_timeout_ms: 2000\n",
                                 "  leave_timeout_ms: 2000\n  allowed_name_prefixes: [gw-]\n"))
    stats3 = os.path.join(tmp, "stats-policy.json")
    r = subprocess.run([GW, "-l", "0,1", "--no-huge", "-m", "256", "--no-pci",
                        f"--file-prefix=gwmember3-{os.getpid()}", "--log-level=lib.eal:warning",
                        f"--vdev=net_pcap0,rx_pcap={rx}",
                        "--", "--config", cfg3, "--idle-exit-ms", "300", "--stats-json", stats3],
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    check("policy run: exit 0", r.returncode == 0, r.stderr)
    with open(stats3) as f:
        doc3 = json.load(f)
    names3 = {m["name"] for m in doc3["membership"]["members"]}
    check("policy run: peer-1 refused", "peer-1" not in names3, str(names3))
    check("policy run: refusal counted", doc3["membership"]["engine_counters"]["admission_drop_policy"] >= 1,
          str(doc3["membership"]["engine_counters"]))
finally:
    shutil.rmtree(tmp, ignore_errors=True)

print(f"{len(failures)} failed" if failures else "all checks passed")
sys.exit(1 if failures else 0)
