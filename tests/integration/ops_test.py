#!/usr/bin/env python3
"""Operating two live gateways over net_memif as an operator would (issue 18).

usage: ops_test.py GOSSIPGW GOSSIPCTL

A (memif server, 10.0.0.1) and B (client, 10.0.0.2) start with no seeds.
- `gossipctl join` waits for the answer: exit 1 when nobody answers, 2 for a
  malformed or wrong-family address (IPv6 shown in brackets), 0 and the
  number of members that answered once A answers.
- The keyring persists (control.state_dir): node-scope steps on A (install,
  use, remove) are idempotent and bad input exits 2; after a restart A comes
  back with the rotated keyring although its config still names the old key
  file; the state directory is 0700 and keyring.json 0600. A bad state file
  stops the start with exit 2 and one line naming it.
- The CLI: --json and --socket in any position, "ok" equals the exit status,
  version (ours and the gateway's), info (node, incarnation, keys, config
  digest, uptime, queue depths), members --detailed, monitor, and
  force-leave: refused for a live or unknown member (exit 1), and a crashed
  member, once failed, is marked left on A and stays left.
"""
import hashlib
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
tmp = tempfile.mkdtemp(prefix="gwops-")
procs = {}
socks = {}
killed = []  # gateways ended by SIGKILL: their EAL runtime dirs stay behind
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
  state_dir: {os.path.join(tmp, name + "-state")}
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

    # ---- probe round trips: A probes B, the histogram fills ----
    rtt = wait_for("A measured probe round trips", lambda: (lambda r: r if r["count"] >= 3 else None)(
        gwtest.ctl_json(CTL, "stats", sock=socks["a"])["membership"]["probe_rtt"]), timeout=30)
    buckets = list(rtt["le_us"].values())
    check("probe RTT histogram: cumulative, +Inf equals count, sum > 0",
          buckets == sorted(buckets) and rtt["le_us"]["+Inf"] == rtt["count"] and rtt["sum_us"] > 0, str(rtt))

    # ---- CLI: --json/--socket anywhere, version, info, detailed, monitor ----
    for argv in (["--json", "--socket", socks["a"], "members"], ["members", "--socket", socks["a"], "--json"],
                 ["--socket", socks["a"], "keys", "--json", "list"], ["keys", "list", "--json", "--socket", socks["a"]]):
        r = subprocess.run([CTL, *argv], capture_output=True, text=True, timeout=30)
        ok = r.returncode == 0
        try:
            ok = ok and json.loads(r.stdout)["ok"] is True
        except ValueError:
            ok = False
        check(f"gossipctl {' '.join(a if a != socks['a'] else 'S' for a in argv)}: JSON, exit 0", ok, r.stdout + r.stderr)
    r = subprocess.run([CTL, "--json", "--socket", os.path.join(tmp, "nobody.sock"), "info"], capture_output=True,
                       text=True)
    check("--json error: ok false, exit 1, status in the object",
          r.returncode == 1 and json.loads(r.stdout) == {"ok": False, "error": json.loads(r.stdout)["error"], "status": 1},
          r.stdout + r.stderr)
    r = ctl("--json", "version", node="a")
    v = json.loads(r.stdout)
    check("version: ours and the gateway's", r.returncode == 0 and v["gossipctl"]["version"] and
          v["gateway"]["node"] == "gw-a" and v["gateway"]["commit"] == v["gossipctl"]["commit"], r.stdout)
    gwv = subprocess.run([GW, "--version"], capture_output=True, text=True)
    check("gossipgw --version", gwv.returncode == 0 and gwv.stdout.startswith("gossipgw " + v["gossipctl"]["version"]),
          gwv.stdout)
    inf = gwtest.ctl_json(CTL, "info", sock=socks["a"])
    with open(os.path.join(tmp, "a.yaml"), "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    check("info: node, digest, uptime, keys, queues",
          inf["node"] == "gw-a" and inf["config_sha256"] == digest and inf["uptime_s"] >= 0 and
          inf["incarnation"] > 0 and inf["keys"] == [gwtest.key_id(CTL, os.path.join(tmp, "k1.key"))] and
          set(inf["queues"]) == {"handoff", "egress", "tx_ring"} and inf["live_members"] == 2, str(inf))
    # Issue 19: which AEAD implementation and instruction set each suite uses.
    check("info: suite and AEAD implementations",
          inf.get("suite") in ("aes256gcm", "chacha20poly1305") and
          inf.get("aead_chacha20poly1305", "").startswith("libsodium ") and
          (inf.get("aead_aes256gcm", "").startswith("ipsec-mb ") or inf.get("suite") == "chacha20poly1305"),
          str({k: inf.get(k) for k in ("suite", "aead_aes256gcm", "aead_chacha20poly1305")}))
    r = ctl("members", "--detailed", node="a")
    check("members --detailed", r.returncode == 0 and "protocol:" in r.stdout and "gw-b" in r.stdout, r.stdout)
    # Issue 52 item 10: every member shows the others' build (the version and
    # git revision `gossipgw --version` prints) and protocol version.
    build = gwv.stdout.split()[1] + "+" + gwv.stdout.split("(git ")[1].split(")")[0]
    mem = gwtest.ctl_json(CTL, "members", sock=socks["a"])
    b_entry = [m for m in mem["members"] if m["name"] == "gw-b"]
    check("members --json: gw-b's build and protocol", b_entry and b_entry[0].get("build") == build and
          b_entry[0].get("protocol_version") == 1, str(b_entry) + " want " + build)
    r = ctl("members", node="a")
    check("members: a BUILD column", r.returncode == 0 and "BUILD" in r.stdout and build in r.stdout, r.stdout)
    r = ctl("monitor", "--duration", "0.5", node="a")
    check("monitor streams the log", r.returncode == 0 and "control API on" in r.stdout, r.stdout[-500:] + r.stderr)
    r = ctl("--json", "monitor", "--duration", "0.3", "--level", "warn", node="b")
    lines = [json.loads(ln) for ln in r.stdout.splitlines() if ln.startswith("{")]
    check("monitor --level warn: only warn and above", r.returncode == 0 and lines and
          all(l["level"] in ("warning", "error", "critical") for l in lines), r.stdout[-500:])

    # ---- force-leave ----
    r = ctl("force-leave", "gw-b", node="a")
    check("force-leave of a live member: refused, exit 1", r.returncode == 1 and "alive" in r.stderr, r.stderr)
    r = ctl("force-leave", "gw-nobody", node="a")
    check("force-leave of an unknown member: exit 1", r.returncode == 1, r.stderr)
    procs["b"].kill()  # a crash: no leave
    procs["b"].wait()
    procs.pop("b")
    killed.append("b")
    wait_for("A declares gw-b failed", lambda: any(m["name"] == "gw-b" and m["state"] == "dead"
                                                 for m in gwtest.ctl_json(CTL, "members", sock=socks["a"])["members"]),
             timeout=60)
    r = ctl("--json", "force-leave", "gw-b", node="a")
    check("force-leave of the failed member: exit 0", r.returncode == 0 and json.loads(r.stdout)["state"] == "left",
          r.stdout + r.stderr)
    state_b = [m["state"] for m in gwtest.ctl_json(CTL, "members", sock=socks["a"])["members"] if m["name"] == "gw-b"]
    check("gw-b is left on A", state_b == ["left"], str(state_b))
    r = ctl("force-leave", "gw-b", node="a")
    check("force-leave again: exit 0 (already left)", r.returncode == 0 and "already" in r.stdout, r.stdout + r.stderr)

    # ---- the memif peer went away (SIGKILL above): A survives it ----
    st = wait_for("A sees its link down", lambda: (lambda s: s if s["port"]["link_up"] == 0 else None)(
        gwtest.ctl_json(CTL, "stats", sock=socks["a"])), timeout=10)
    check("peer gone: link_up 0, one link_down event, A still serving",
          st["port"] == {"link_up": 0, "link_down_events": 1} and procs["a"].poll() is None, str(st.get("port")))
    start("b", "10.0.0.2", "client")
    wait_for("A sees its link up again", lambda: gwtest.ctl_json(CTL, "stats", sock=socks["a"])["port"]["link_up"] == 1,
             timeout=20)
    r = ctl("join", "10.0.0.1:7946")
    check("the restarted peer joins again", r.returncode == 0, r.stdout + r.stderr)
    wait_for("A sees gw-b alive again (a restart is a newer incarnation)",
             lambda: any(m["name"] == "gw-b" and m["state"] == "alive"
                         for m in gwtest.ctl_json(CTL, "members", sock=socks["a"])["members"]))
    check("a force-left member comes back only by restarting", True)
    # ---- keys, node scope on A, and the persisted keyring ----
    k2 = os.path.join(tmp, "k2.key")
    subprocess.run([CTL, "keygen", "--out", k2], check=True, capture_output=True)
    id1, id2 = gwtest.key_id(CTL, os.path.join(tmp, "k1.key")), gwtest.key_id(CTL, k2)
    for step in (("keys", "install", k2), ("keys", "use", id2), ("keys", "remove", id1)):
        r = ctl(*step, node="a")
        check(f"{' '.join(step[:2])}: exit 0", r.returncode == 0, f"exit {r.returncode}: {r.stderr!r}")
        r = ctl(*step, node="a")
        check(f"{' '.join(step[:2])} again (idempotent): exit 0", r.returncode == 0, f"exit {r.returncode}: {r.stderr!r}")
    for bad in (("keys", "use", "zz"), ("keys", "remove", "123"), ("keys", "install", os.path.join(tmp, "nope.key"))):
        r = ctl(*bad, node="a")
        check(f"{' '.join(bad)}: bad input exits 2", r.returncode == 2, f"exit {r.returncode}: {r.stderr!r}")
    r = ctl("keys", "use", "0badc0de", node="a")
    check("keys use of a key not in the ring: refused, exit 1", r.returncode == 1, f"exit {r.returncode}: {r.stderr!r}")
    state = os.path.join(tmp, "a-state")
    ring_file = os.path.join(state, "keyring.json")
    wait_for("keyring.json written", lambda: os.path.exists(ring_file) and id1 not in str(
        gwtest.ctl_json(CTL, "keys", "list", sock=socks["a"])))
    check("state dir is 0700", (os.stat(state).st_mode & 0o777) == 0o700, oct(os.stat(state).st_mode))
    check("keyring.json is 0600", (os.stat(ring_file).st_mode & 0o777) == 0o600, oct(os.stat(ring_file).st_mode))
    stop("b")
    stop("a")
    with open(os.path.join(tmp, "a.json")) as f:
        check("A wrote its --stats-json on the way out", json.load(f)["port"]["link_down_events"] >= 1)
    start("a", "10.0.0.1", "server")
    keys = gwtest.ctl_json(CTL, "keys", "list", sock=socks["a"])["keys"]
    check("after a restart: the rotated keyring, not the config's k1",
          [(k["id"], k["primary"]) for k in keys] == [(id2, True)], str(keys))
    with open(os.path.join(tmp, "a.err")) as f:
        check("the start says where the keyring came from", "keyring from " + ring_file in f.read())
    stop("a")
    os.chmod(ring_file, 0o644)
    r = subprocess.run(
        [GW, "-l", "0,1", "--no-huge", "-m", "256", "--no-pci", f"--file-prefix=gwops-bad-{os.getpid()}",
         "--log-level=lib.eal:warning", "--vdev=net_null0", "--", "--config", os.path.join(tmp, "a.yaml")],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    check("a group-readable keyring.json: exit 2, one line naming it",
          r.returncode == 2 and r.stderr.strip().count("\n") == 0 and "keyring.json" in r.stderr, f"{r.returncode} {r.stderr!r}")
    r = subprocess.run([CTL, "config", "check", "--config", os.path.join(tmp, "a.yaml")], capture_output=True, text=True)
    check("gossipctl config check refuses it too (exit 2)", r.returncode == 2 and "keyring.json" in r.stderr,
          f"{r.returncode} {r.stderr!r}")
finally:
    for n in list(procs):
        stop(n)
    if gwtest.failures:
        for n in ("a", "b"):
            path = os.path.join(tmp, f"{n}.err")
            if os.path.exists(path):
                print(f"---- gw-{n} stderr ----\n" + open(path).read()[-3000:])
    for base in ("/var/run/dpdk", os.path.join(os.environ.get("XDG_RUNTIME_DIR", "/nonexistent"), "dpdk")):
        for n in killed:
            shutil.rmtree(os.path.join(base, f"gwops-{n}-{os.getpid()}"), ignore_errors=True)
    shutil.rmtree(tmp, ignore_errors=True)

gwtest.finish()
