#!/usr/bin/env python3
"""Operating two live gateways over net_memif as an operator would (issue 18).

usage: ops_test.py GOSSIPGW GOSSIPCTL

A (memif server, 10.0.0.1) and B (client, 10.0.0.2) start with no seeds.
- `gossipctl join` waits for the answer: exit 1 when nobody answers, 2 for a
  malformed or wrong-family address (IPv6 shown in brackets), 0 and the
  number of members that answered once A answers.
"""
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
tmp = tempfile.mkdtemp(prefix="gwops-")
procs = {}
socks = {}
memif = os.path.join(tmp, "memif.sock")


def ctl(*args, node="b", timeout=60):
    return subprocess.run([CTL, *args, "--socket", socks[node]], capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def start(name, ip, role, extra=""):
    socks[name] = os.path.join(tmp, f"{name}.sock")
    cfg = os.path.join(tmp, f"{name}.yaml")
    with open(cfg, "w") as f:
        f.write(f"""cluster:
  name: ops
  suite: chacha20poly1305
  keys:
    - file: k1.key
      primary: true
node:
  name: gw-{name}
  address: {ip}
dataplane:
  mbufs: 2048
  idle_backoff_us: 200
membership:
  preset: local
control:
  socket: {socks[name]}
{extra}""")
    err = open(os.path.join(tmp, f"{name}.err"), "a")
    procs[name] = subprocess.Popen(
        [GW, "-l", "0,1", "--no-huge", "-m", "256", "--no-pci", f"--file-prefix=gwops-{name}-{os.getpid()}",
         "--log-level=lib.eal:warning", f"--vdev=net_memif0,role={role},socket={memif},socket-abstract=no",
         "--", "--config", cfg, "--stats-json", os.path.join(tmp, f"{name}.json")],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
    wait_for(f"{name}'s control socket", lambda: os.path.exists(socks[name]) and ctl("members", node=name).returncode == 0)


def stop(name):
    p = procs.pop(name)
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)  # a clean exit removes its DPDK runtime dir
        try:
            p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


try:
    subprocess.run([CTL, "keygen", "--out", os.path.join(tmp, "k1.key")], check=True, capture_output=True)
    start("a", "10.0.0.1", "server")
    start("b", "10.0.0.2", "client")

    # ---- join ----
    t0 = time.monotonic()
    r = ctl("join", "10.0.0.99:7946")
    took = time.monotonic() - t0
    check("join nobody answers: exit 1", r.returncode == 1, f"exit {r.returncode}: {r.stderr!r}")
    check("join nobody answers: says so", "no member answered at 10.0.0.99:7946" in r.stderr, r.stderr)
    check("join nobody answers: waited about its 5 s bound", 4.0 < took < 12.0, f"{took:.1f} s")
    r = ctl("join", "[fd00::1]:7946")
    check("join wrong family: exit 2", r.returncode == 2, f"exit {r.returncode}: {r.stderr!r}")
    check("join wrong family: IPv6 in brackets, names the family", "[fd00::1]:7946 is IPv6" in r.stderr, r.stderr)
    for bad in ("nope", "10.0.0.1", "10.0.0.1:99999", "[fd00::1:7946"):
        r = ctl("join", bad)
        check(f"join malformed {bad!r}: exit 2", r.returncode == 2, f"exit {r.returncode}: {r.stderr!r}")
    r = ctl("join", "10.0.0.1:7946")
    check("join A: exit 0", r.returncode == 0, f"exit {r.returncode}: {r.stderr!r}")
    check("join A: reports one member answered", "1 member(s) answered" in r.stdout, r.stdout)
    wait_for("A sees B", lambda: any(m["name"] == "gw-b" and m["state"] == "alive"
                                     for m in gwtest.ctl_json(CTL, "members", sock=socks["a"])["members"]))
finally:
    for n in list(procs):
        stop(n)
    if gwtest.failures:
        for n in ("a", "b"):
            path = os.path.join(tmp, f"{n}.err")
            if os.path.exists(path):
                print(f"---- gw-{n} stderr ----\n" + open(path).read()[-3000:])
    shutil.rmtree(tmp, ignore_errors=True)

gwtest.finish()
