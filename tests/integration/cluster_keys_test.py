#!/usr/bin/env python3
"""Cluster-wide key rotation and member events between two live gateways, over net_memif.

usage: cluster_keys_test.py GOSSIPGW GOSSIPCTL

Two gateways (memif server and client on one host, no namespaces needed)
join through a seed and gossip continuously. From gateway A only, a new key
is installed on every member, made primary everywhere, and the old key
removed everywhere (`gossipctl keys ... --cluster`), while they keep probing
each other. Afterwards both keyrings hold only the new key as primary, both
members use it, nobody was suspected, no packet was dropped for a key reason,
and gossip keeps flowing. A change the origin itself must refuse (removing
the primary) is refused before anything is sent. Every change is signed
with the operator key (issue 51): one not signed, or signed with another
key, is refused everywhere and changes nothing; one signed elsewhere
(--sign-only) and submitted is applied once, and submitting it again is
refused as stale. Gateway A also runs an
event handler and keeps a hosts file of control-plane members: B's join and
leave reach the handler (environment and stdin as docs/events.md says) and
B appears in, then disappears from, the hosts file.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import gwtest
from gwtest import check, wait_for

GW, CTL = sys.argv[1:3]


def states(sock):
    return {m["name"]: m["state"] for m in gwtest.ctl_json(CTL, "members", sock=sock)["members"]}


tmp = tempfile.mkdtemp(prefix="gwkeys-")
procs = {}
try:
    k1, k2 = os.path.join(tmp, "k1.key"), os.path.join(tmp, "k2.key")
    for k in (k1, k2):
        subprocess.run([CTL, "keygen", "--out", k], check=True, capture_output=True)
    id1, id2 = gwtest.key_id(CTL, k1), gwtest.key_id(CTL, k2)
    # The operator signing key: its public half in every config, the file kept here.
    op, rogue = os.path.join(tmp, "operator.key"), os.path.join(tmp, "rogue.key")
    r = subprocess.run([CTL, "--json", "operator-keygen", "--out", op], check=True, capture_output=True, text=True)
    op_pub = json.loads(r.stdout)["operator_public_key"]
    subprocess.run([CTL, "operator-keygen", "--out", rogue], check=True, capture_output=True)
    r = subprocess.run([CTL, "operator-key", op], check=True, capture_output=True, text=True)
    check("operator-key prints the public key operator-keygen gave", r.stdout.strip() == op_pub, r.stdout)
    memif = os.path.join(tmp, "memif.sock")
    events_log = os.path.join(tmp, "events.log")
    hosts = os.path.join(tmp, "cp.hosts")
    handler = os.path.join(tmp, "handler.sh")
    with open(handler, "w") as f:
        f.write("#!/bin/sh\n{ echo \"EVENT=$GOSSIPGW_EVENT NODE=$GOSSIPGW_NODE CLUSTER=$GOSSIPGW_CLUSTER\"; cat; } >> "
                + events_log + "\n")
    os.chmod(handler, 0o755)
    socks = {}
    for name, ip, role in (("a", "10.0.0.1", "server"), ("b", "10.0.0.2", "client")):
        socks[name] = os.path.join(tmp, f"{name}.sock")
        cfg = os.path.join(tmp, f"{name}.yaml")
        with open(cfg, "w") as f:
            f.write(f"""cluster:
  name: keys
  suite: chacha20poly1305
  keys:
    - file: k1.key
      primary: true
  operator_public_key: "{op_pub}"
node:
  name: gw-{name}
  address: {ip}
dataplane:
  mbufs: 2048
  idle_backoff_us: 200
membership:
  preset: local
  seeds: [10.0.0.1:7946]
  tags: {{role: {"control-plane" if name == "b" else "edge"}}}
control:
  socket: {socks[name]}
""")
            if name == "a":
                f.write(f"""events:
  handler: {handler}
  hosts_file: {{path: {hosts}, tag: "role=control-plane", include_self: false}}
  hosts_min_interval_ms: 0
""")

        err = open(os.path.join(tmp, f"{name}.err"), "w")
        procs[name] = subprocess.Popen(
            [GW, "-l", "0,1", "--no-huge", "-m", "256", "--no-pci", f"--file-prefix=gwkeys-{name}-{os.getpid()}",
             "--log-level=lib.eal:warning",
             f"--vdev=net_memif0,role={role},socket={memif},socket-abstract=no",
             "--", "--config", cfg, "--stats-json", os.path.join(tmp, f"{name}.json")],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
        if name == "a":
            wait_for("memif socket", lambda: os.path.exists(memif))

    both = {"gw-a": "alive", "gw-b": "alive"}
    wait_for("a sees both alive", lambda: states(socks["a"]) == both)
    wait_for("b sees both alive", lambda: states(socks["b"]) == both)
    check("converged: both alive in both views", True)

    # ---- member events on A: handler and hosts file ----
    wait_for("handler saw gw-b join", lambda: os.path.exists(events_log) and "gw-b\t" in open(events_log).read())
    log = open(events_log).read()
    check("handler environment", "EVENT=member-join NODE=gw-a CLUSTER=keys" in log, log)
    check("handler stdin line", "gw-b\t10.0.0.2\t7946\talive\t" in log and "role=control-plane" in log, log)
    wait_for("hosts file lists gw-b", lambda: os.path.exists(hosts) and "10.0.0.2 gw-b" in open(hosts).read())
    hosts_text = open(hosts).read()
    entries = [ln for ln in hosts_text.splitlines() if ln and not ln.startswith("#")]
    check("hosts file: only the control-plane member", entries == ["10.0.0.2 gw-b"], hosts_text)

    before = {n: gwtest.ctl_json(CTL, "stats", sock=s)["totals"]["accepted"] for n, s in socks.items()}

    # ---- without the operator key, nothing changes anywhere ----
    r = gwtest.ctl(CTL, "keys", "install", k2, "--cluster", sock=socks["a"])
    check("unsigned install --cluster refused", r.returncode == 1 and "operator" in r.stdout + r.stderr,
          r.stdout + r.stderr)
    r = gwtest.ctl(CTL, "keys", "install", k2, "--cluster", "--operator-key", rogue, sock=socks["a"])
    check("install signed with another key refused", r.returncode == 1 and "does not verify" in r.stdout + r.stderr,
          r.stdout + r.stderr)
    for n, s in socks.items():
        ring = {k["id"]: k["primary"] for k in gwtest.ctl_json(CTL, "keys", "list", sock=s)["keys"]}
        check(f"{n}: keyring unchanged by unsigned changes", ring == {id1: True}, str(ring))
    kc = gwtest.ctl_json(CTL, "stats", sock=socks["a"])["key_commands"]
    check("a counted both as unsigned", kc.get("unsigned") == 2 and kc["sent"] == 0, str(kc))
    r = gwtest.ctl(CTL, "keys", "install", k2, "--operator-key", op, sock=socks["a"])
    check("--operator-key without --cluster is bad input", r.returncode == 2, r.stdout + r.stderr)

    # ---- rotation, driven from A only, each step signed ----
    # Without --json: what each member did, in words (issue 52: no JSON).
    r = gwtest.ctl(CTL, "keys", "install", k2, "--cluster", "--operator-key", op, sock=socks["a"])
    check("install --cluster complete: applied here and on gw-b, said without JSON",
          r.returncode == 0 and "applied here and on 1 of 1 other member(s)" in r.stdout and
          "  applied:   gw-b\n" in r.stdout and "{" not in r.stdout, r.stdout + r.stderr)
    ring_b = {k["id"]: k["primary"] for k in gwtest.ctl_json(CTL, "keys", "list", sock=socks["b"])["keys"]}
    check("b holds both keys, old primary", ring_b == {id1: True, id2: False}, str(ring_b))

    def cluster_keys():
        r = gwtest.ctl(CTL, "--json", "keys", "list", "--cluster", sock=socks["a"])
        rep = json.loads(r.stdout)
        check("keys list --cluster: every member answered, ok is the exit status",
              r.returncode == 0 and rep["ok"] is True and rep["members"] == 2 and rep["no_answer"] == [], r.stdout)
        return {k["id"]: (k["held_by"], k["primary_on"], k["lacking"]) for k in rep["keys"]}

    check("keys list --cluster after install: both hold both, k1 primary on 2/2",
          cluster_keys() == {id1: (2, 2, []), id2: (2, 0, [])}, str(cluster_keys()))
    table = gwtest.ctl(CTL, "keys", "list", "--cluster", sock=socks["a"])
    check("keys list --cluster table: [n/N]", table.returncode == 0 and f"{id2}  [2/2]" in table.stdout and
          "[0/2]" in table.stdout, table.stdout + table.stderr)

    # Signed elsewhere (the cluster named, nothing sent), then submitted on A.
    r = subprocess.run([CTL, "keys", "use", id2, "--cluster", "--operator-key", op, "--cluster-name", "keys",
                        "--sign-only"], capture_output=True, text=True, timeout=30)
    signed = os.path.join(tmp, "use.json")
    with open(signed, "w") as f:
        f.write(r.stdout)
    check("use --sign-only prints one signed request", r.returncode == 0 and '"signature"' in r.stdout, r.stderr)
    r = gwtest.ctl(CTL, "--json", "keys", "submit", signed, sock=socks["a"])
    check("use --cluster (submitted) complete", r.returncode == 0 and json.loads(r.stdout).get("complete") is True,
          r.stdout + r.stderr)
    r = gwtest.ctl(CTL, "keys", "submit", signed, sock=socks["a"])
    check("the same signed request again: stale, said without JSON (no --json)",
          r.returncode == 1 and "stale" in r.stderr and "{" not in r.stdout, r.stdout + r.stderr)
    # Both now seal with k2: each sees the other's packets under k2.
    wait_for("both members use the new key", lambda: all(
        {k["id"]: k["members_using"] for k in gwtest.ctl_json(CTL, "keys", "list", sock=s)["keys"]}.get(id2) == 2
        for s in socks.values()))
    check("both members use the new key", True)

    # A command B refuses is reported as such: B cannot remove its primary.
    r = gwtest.ctl(CTL, "keys", "remove", id2, "--cluster", "--operator-key", op, sock=socks["a"])
    check("removing the primary cluster-wide refused locally first", r.returncode == 1 and "primary" in r.stderr,
          r.stdout + r.stderr)

    r = gwtest.ctl(CTL, "--json", "keys", "remove", id1, "--cluster", "--operator-key", op, sock=socks["a"])
    check("remove --cluster complete", r.returncode == 0 and json.loads(r.stdout).get("complete") is True,
          r.stdout + r.stderr)
    for n, s in socks.items():
        ring = {k["id"]: k["primary"] for k in gwtest.ctl_json(CTL, "keys", "list", sock=s)["keys"]}
        check(f"{n}: only the new key, primary", ring == {id2: True}, str(ring))
    check("keys list --cluster after the rotation: only k2, primary on 2/2",
          cluster_keys() == {id2: (2, 2, [])}, str(cluster_keys()))
    # Node scope on A only: B lacks it, and the cluster view says so.
    k3 = os.path.join(tmp, "k3.key")
    subprocess.run([CTL, "keygen", "--out", k3], check=True, capture_output=True)
    id3 = gwtest.key_id(CTL, k3)
    check("install k3 on A only", gwtest.ctl(CTL, "keys", "install", k3, sock=socks["a"]).returncode == 0)
    check("keys list --cluster: k3 held by 1/2, gw-b lacks it",
          cluster_keys().get(id3) == (1, 0, ["gw-b"]), str(cluster_keys()))
    check("remove k3 again", gwtest.ctl(CTL, "keys", "remove", id3, sock=socks["a"]).returncode == 0)

    # Gossip keeps flowing under the new key; nobody was suspected.
    wait_for("gossip after rotation", lambda: all(
        gwtest.ctl_json(CTL, "stats", sock=s)["totals"]["accepted"] > before[n] + 5 for n, s in socks.items()))
    for n, s in socks.items():
        st = gwtest.ctl_json(CTL, "stats", sock=s)
        t = st["totals"]
        check(f"{n}: no key drops", t["drop_unknown_key"] == 0 and t["drop_bad_mac"] == 0 and t["drop_bad_auth"] == 0,
              str(t))
        ec = st["membership"]["engine_counters"]
        check(f"{n}: nobody suspected", ec["suspicions"] == 0, str(ec))
        check(f"{n}: view unchanged", states(s) == both)
    kc = gwtest.ctl_json(CTL, "stats", sock=socks["b"])["key_commands"]
    check("b applied three commands", kc["applied"] == 3 and kc["refused"] == 0, str(kc))

    # ---- graceful leave: A records B as left, not failed ----
    procs["b"].send_signal(signal.SIGTERM)
    check("b exits 0 on SIGTERM", procs["b"].wait(timeout=30) == 0)
    wait_for("a records b as left", lambda: states(socks["a"]).get("gw-b") == "left")
    check("a records b as left", True)
    wait_for("handler saw gw-b leave", lambda: "EVENT=member-leave" in open(events_log).read())
    log = open(events_log).read()
    check("leave reached the handler", "gw-b\t10.0.0.2\t7946\tleft\t" in log, log)
    wait_for("gw-b gone from the hosts file", lambda: "gw-b" not in open(hosts).read())
    check("hosts file updated on leave", True)
    ev = gwtest.ctl_json(CTL, "stats", sock=socks["a"])["event_handler"]
    check("handler runs counted", ev["succeeded"] >= 2 and ev["failed_exit"] == 0 and ev["timed_out"] == 0, str(ev))
finally:
    for p in procs.values():
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)  # a clean exit removes its DPDK runtime dir
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
    if gwtest.failures:
        for n in ("a", "b"):
            path = os.path.join(tmp, f"{n}.err")
            if os.path.exists(path):
                print(f"---- gw-{n} stderr ----\n" + open(path).read()[-2000:])
    shutil.rmtree(tmp, ignore_errors=True)

gwtest.finish()
