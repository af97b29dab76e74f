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
    check("nothing dropped on the way out", doc["tx_queue"]["drop_ring_full"] == 0 and
          doc["membership"]["drop_tx_queue"] == 0, json.dumps(doc["tx_queue"]))
    worker_tx = doc["lcores"][0]["tx"]
    check("worker transmitted what was sealed", worker_tx["tx_packets"] == doc["membership"]["sealed"] > 0,
          f"{worker_tx} sealed {doc['membership']['sealed']}")
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
finally:
    shutil.rmtree(tmp, ignore_errors=True)

print(f"{len(failures)} failed" if failures else "all checks passed")
sys.exit(1 if failures else 0)
