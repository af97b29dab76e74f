#!/usr/bin/env python3
"""Start-up and stop are trustworthy (issue 18 faults 1 and 7).

usage: startup_test.py GOSSIPGW GOSSIPCTL

- A device error (dataplane.port_id that does not exist) with every optional
  service enabled (control socket, Prometheus, telemetry, classifier, event
  handler, hosts file) exits 2 with one gossipgw line, never hangs, every
  time (the Prometheus listener used to start before the port and hang in
  its destructor; the exit status was 1).
- A Prometheus port already taken and a control socket still served exit 2;
  the port's line says why (issue 52).
- A second start with the file prefix of a running gateway exits 2 naming
  the prefix and the process that holds it (it said "Success").
- A control.state_dir that cannot be created exits 2 at start and in
  `gossipctl config check` (it used to start with one error line).
- A wrong EAL option: exit 2 and our one line is the last line of the
  combined output, also when stdout is a pipe (the journal).
- SIGTERM ends the process within its bound even when a stop step wedges
  (an event handler that ignores SIGTERM and whose timeout is an hour).
- Under systemd (NOTIFY_SOCKET, WATCHDOG_USEC set as systemd does): a start
  that fails sends no READY=1; a good one sends READY=1 once running, feeds
  the watchdog from the control lcore, and says STOPPING=1 on SIGTERM.
"""
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import gwtest
from gwtest import check, wait_for

GW, CTL = sys.argv[1:3]
tmp = tempfile.mkdtemp(prefix="gwstart-")
procs = []
pid_files = []


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def eal(tag, vdev="net_null0"):
    return [GW, "-l", "0,1", "--no-huge", "-m", "256", "--no-pci", f"--file-prefix=gwstart-{tag}-{os.getpid()}",
            "--log-level=lib.eal:warning", f"--vdev={vdev}"]


def config(name, extra="", prom_port=None, port_id=0):
    handler = os.path.join(tmp, "handler.sh")
    path = os.path.join(tmp, name + ".yaml")
    with open(path, "w") as f:
        f.write(f"""cluster:
  name: start
  suite: chacha20poly1305
  keys:
    - file: k.key
node:
  name: gw-{name}
  address: 10.0.0.1
dataplane:
  port_id: {port_id}
  mbufs: 2048
  idle_backoff_us: 200
membership:
  preset: local
  leave_timeout_ms: 200
metrics:
  prometheus_port: {prom_port if prom_port is not None else free_port()}
  telemetry: true
classifier:
  enabled: true
control:
  socket: {os.path.join(tmp, name + ".sock")}
events:
  handler: {handler}
  hosts_file: {{path: {os.path.join(tmp, name + ".hosts")}}}
{extra}""")
    return path


def run(argv, timeout=30, merged=False):
    try:
        r = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT if merged else subprocess.PIPE, text=True, timeout=timeout)
        return r.returncode, r.stdout if merged else r.stderr
    except subprocess.TimeoutExpired as e:
        return None, str(e.stderr or e.stdout)


try:
    subprocess.run([CTL, "keygen", "--out", os.path.join(tmp, "k.key")], check=True, capture_output=True)
    with open(os.path.join(tmp, "handler.sh"), "w") as f:
        # Ignores SIGTERM and outlives any stop unless the gateway bounds it.
        f.write(f"#!/bin/sh\necho $$ >> {tmp}/handler.pids\ntrap '' TERM\nsleep 300\n")
    os.chmod(os.path.join(tmp, "handler.sh"), 0o755)
    pid_files.append(os.path.join(tmp, "handler.pids"))

    # ---- a device error with everything enabled, many times ----
    bad_port = config("badport", port_id=3)
    outcomes = []
    for i in range(8):
        t0 = time.monotonic()
        rc, err = run(eal(f"bp{i}") + ["--", "--config", bad_port], timeout=30)
        outcomes.append((rc, round(time.monotonic() - t0, 1), err))
    check("bad port_id with every service: exit 2 every time (8 starts, none hangs)",
          all(o[0] == 2 for o in outcomes), str([(o[0], o[1]) for o in outcomes]))
    last_err = outcomes[-1][2]
    ours = [l for l in last_err.splitlines() if l.startswith("gossipgw:")]
    check("bad port_id: one gossipgw line naming dataplane.port_id",
          len(ours) == 1 and "dataplane.port_id" in ours[0], repr(last_err))
    check("bad port_id: our line is the last one", last_err.strip().splitlines()[-1:] == ours[:1], repr(last_err))
    check("bad port_id: control socket removed", not os.path.exists(os.path.join(tmp, "badport.sock")))

    # ---- a Prometheus port that is taken ----
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        rc, err = run(eal("prom") + ["--", "--config", config("prom", prom_port=taken.getsockname()[1])])
    check("Prometheus port taken: exit 2", rc == 2, f"exit {rc}: {err!r}")
    check("Prometheus port taken: one line naming metrics.prometheus_port",
          [l for l in err.splitlines() if l.startswith("gossipgw:")] != [] and "metrics.prometheus_port" in err,
          repr(err))
    check("Prometheus port taken: says why", "Address already in use: another process listens there" in err, repr(err))

    # ---- a state directory the gateway cannot create ----
    orphan = os.path.join(tmp, "no", "such", "state")
    state_cfg = config("state")
    with open(state_cfg) as f:
        text = f.read()
    with open(state_cfg, "w") as f:
        f.write(text.replace("control:\n", f"control:\n  state_dir: {orphan}\n"))
    rc, err = run(eal("state") + ["--", "--config", state_cfg])
    check("state_dir whose parent is missing: exit 2 with the reason",
          rc == 2 and f"control.state_dir '{orphan}': cannot create it" in err, f"exit {rc}: {err!r}")
    r = subprocess.run([CTL, "config", "check", "--config", state_cfg], capture_output=True, text=True)
    check("... and gossipctl config check refuses it too",
          r.returncode == 2 and f"control.state_dir '{orphan}'" in r.stderr, f"{r.returncode} {r.stderr!r}")

    # ---- a second start on the file prefix of a running gateway ----
    first_cfg = config("prefix1", prom_port=0)
    with open(first_cfg) as f:
        text = f.read()
    with open(first_cfg, "w") as f:
        f.write(text[:text.index("events:")])
    first = subprocess.Popen(eal("sameprefix") + ["--", "--config", first_cfg], stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    procs.append(first)
    wait_for("the first gateway serves", lambda: subprocess.run(
        [CTL, "info", "--socket", os.path.join(tmp, "prefix1.sock")], capture_output=True).returncode == 0)
    second_cfg = config("prefix2", prom_port=0)
    with open(second_cfg) as f:
        text = f.read()
    with open(second_cfg, "w") as f:
        f.write(text[:text.index("events:")])
    rc, err = run(eal("sameprefix") + ["--", "--config", second_cfg])
    check("same file prefix: exit 2, names the prefix and the process holding it",
          rc == 2 and f"EAL file prefix 'gwstart-sameprefix-{os.getpid()}' is in use by process {first.pid}" in err
          and "Success" not in err, f"exit {rc}: {err!r}")
    first.send_signal(signal.SIGTERM)
    first.wait(timeout=20)

    # ---- a wrong EAL option: our line last, also through a pipe ----
    rc, out = run(eal("eal") + ["--no-such-eal-option", "--", "--config", config("eal")], merged=True)
    lines = [l for l in out.splitlines() if l.strip()]
    check("bad EAL option: exit 2", rc == 2, f"exit {rc}")
    check("bad EAL option: our line is the last line of the combined output",
          bool(lines) and lines[-1].startswith("gossipgw: EAL initialisation failed"), repr(lines[-3:]))

    # ---- sd_notify: READY only when running, the watchdog, STOPPING ----
    notify_path = os.path.join(tmp, "sd-notify.sock")  # not <name>.sock: that is a control socket
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(notify_path)
    env = dict(os.environ, NOTIFY_SOCKET=notify_path, WATCHDOG_USEC="400000")

    def messages(until, timeout):
        got = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not until(got):
            notify.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                got.append(notify.recv(4096).decode())
            except socket.timeout:
                break
        return got

    r = subprocess.run(eal("nb") + ["--", "--config", bad_port], env=env, stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, timeout=30)
    check("a failed start: exit 2 and no READY=1", r.returncode == 2 and not any(
        "READY=1" in m for m in messages(lambda g: False, 0.5)), r.stderr)
    plain = config("notify", prom_port=0)
    with open(plain) as f:
        text = f.read()
    with open(plain, "w") as f:
        f.write(text[:text.index("events:")])  # no wedged handler here
    p = subprocess.Popen(eal("ok") + ["--", "--config", plain], env=env, stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    procs.append(p)
    got = messages(lambda g: sum("WATCHDOG=1" in m for m in g) >= 3, 30)
    ready = [i for i, m in enumerate(got) if "READY=1" in m]
    check("READY=1 once running, first, with a STATUS", ready == [0] and "STATUS=cluster start node" in got[0], str(got))
    check("the watchdog is fed (3 x WATCHDOG=1 within 30 s at WATCHDOG_USEC=400000)",
          sum("WATCHDOG=1" in m for m in got) >= 3, str(got))
    p.send_signal(signal.SIGTERM)
    got = messages(lambda g: any("STOPPING=1" in m for m in g), 20)
    check("STOPPING=1 on SIGTERM", any("STOPPING=1" in m for m in got), str(got))
    try:
        rc = p.wait(timeout=20)
    except subprocess.TimeoutExpired:
        rc = None
    check("then a clean exit 0", rc == 0, f"exit {rc}: {p.stderr.read()[-600:] if rc is not None else ''}")
    notify.close()

    # ---- SIGTERM with a wedged stop step ----
    # Two gateways over memif: B's join makes A run its handler, which
    # ignores SIGTERM for 300 s with a one-hour events.timeout_ms.
    memif = os.path.join(tmp, "memif.sock")
    cfgs = {}
    for name, ip in (("a", "10.0.0.1"), ("b", "10.0.0.2")):
        c = config(name, "  timeout_ms: 3600000\n" if name == "a" else "")
        with open(c) as f:
            text = f.read().replace("address: 10.0.0.1", f"address: {ip}")
            text = text.replace("  leave_timeout_ms: 200\n", "  leave_timeout_ms: 200\n  seeds: [10.0.0.1:7946]\n")
            if name == "b":
                text = text[:text.index("events:")]
        with open(c, "w") as f:
            f.write(text)
        cfgs[name] = c
    pair = {}
    for name, role in (("a", "server"), ("b", "client")):
        err = open(os.path.join(tmp, f"{name}.err"), "w")
        pair[name] = subprocess.Popen(
            eal(f"sig{name}", f"net_memif0,role={role},socket={memif},socket-abstract=no")
            + ["--", "--config", cfgs[name]], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
        procs.append(pair[name])
        if name == "a":
            wait_for("memif socket", lambda: os.path.exists(memif))
    a = pair["a"]
    wait_for("A's handler runs (B joined)", lambda: os.path.exists(pid_files[0]), timeout=60)
    t0 = time.monotonic()
    a.send_signal(signal.SIGTERM)
    try:
        rc = a.wait(timeout=30)
    except subprocess.TimeoutExpired:
        rc = None
    took = time.monotonic() - t0
    check("SIGTERM with a wedged handler: the process ends within its bound (1 + 7 s, test allows 30 s)",
          rc is not None and took < 15, f"exit {rc} after {took:.1f} s")
    check("SIGTERM past the bound: exit 1", rc == 1, f"exit {rc}")
    with open(os.path.join(tmp, "a.err")) as f:
        a_err = f.read()
    check("SIGTERM past the bound: says so", rc is None or "stop took longer than its bound" in a_err, a_err[-800:])
finally:
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait()
    for pf in pid_files:
        if os.path.exists(pf):
            for pid in open(pf).read().split():
                try:
                    os.killpg(int(pid), signal.SIGKILL)  # handlers run in their own process group
                except (ProcessLookupError, PermissionError, ValueError):
                    pass
    # A gateway ended by its stop bound leaves its EAL runtime directory.
    for base in ("/var/run/dpdk", os.path.join(os.environ.get("XDG_RUNTIME_DIR", "/nonexistent"), "dpdk")):
        if os.path.isdir(base):
            for d in os.listdir(base):
                if d.startswith("gwstart-") and d.endswith(f"-{os.getpid()}"):
                    shutil.rmtree(os.path.join(base, d), ignore_errors=True)
    if gwtest.failures:
        for n in ("a", "b"):
            path = os.path.join(tmp, f"{n}.err")
            if os.path.exists(path):
                print(f"---- gw-{n} stderr ----\n" + open(path).read()[-2000:])
    shutil.rmtree(tmp, ignore_errors=True)

gwtest.finish()
