#!/usr/bin/env python3
"""The shipped systemd units run what they ship (issue 52 items 3 and 8).

usage: unit_sandbox_test.py GOSSIPGW GOSSIPCTL

A gateway is started the way scripts/gossipgw.service starts it (launch.sh,
the unit's Environment=, user, capabilities and file system), with the
shipped sample event handler and a hosts file (with an alias) at the path
docs/events.md documents; a second gateway joins it over net_memif. Then:
the handler wrote its log at its default path, the hosts file lists the
member and its alias and another unprivileged user (a DNS server) can read
it, the stats land in the state directory on SIGTERM. The hugepages unit's
ExecStart and ExecStartPost run in its own sandbox. The drop-ins
docs/events.md documents are valid for systemd (systemd-analyze verify).

systemd is usually not PID 1 where tests run (containers, CI), so the unit's
settings are read from the unit file and reproduced with bubblewrap and
setpriv (a private mount, PID and network namespace):

  reproduced: User=/Group= (a stand-in uid, nobody), AmbientCapabilities=,
    CapabilityBoundingSet=, NoNewPrivileges=, UMask=, Environment= (and a
    clean environment), ProtectSystem=strict (everything read-only but the
    unit's directories and ReadWritePaths=), RuntimeDirectory=,
    StateDirectory=, CacheDirectory=, LogsDirectory= with their *Mode= and
    owner, PrivateTmp=, ProtectHome=, ProtectKernelTunables= (read-only
    /sys), IPAddressDeny=any + IPAddressAllow=localhost (as a network
    namespace with only lo), ProtectProc= (a PID namespace);
  not reproduced: SystemCallFilter=, RestrictAddressFamilies=,
    MemoryDenyWriteExecute=, DevicePolicy=, ProtectKernelModules/Logs=,
    ProtectClock=, LockPersonality= and the cgroup itself (those are checked
    offline by systemd-analyze verify/security in scripts_test.sh).

Exit 77 (skipped) without root, bwrap or setpriv.
"""
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import gwtest
from gwtest import check, wait_for

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
SCRIPTS = os.path.join(ROOT, "scripts")
GW, CTL = (os.path.abspath(p) for p in sys.argv[1:3])
SKIP = 77
UID = GID = 65534       # stands in for the unit's User=gossipgw
READER_UID = 65533      # another service (dnsmasq, CoreDNS)
# Where docs/events.md and config/examples/gossipgw.yaml tell operators of the
# unit to put the hosts file.
DOCUMENTED_HOSTS = "/var/cache/gossipgw/control-plane.hosts"
DEFAULT_HANDLER_LOG = "/var/log/gossipgw/events.log"  # scripts/examples/event-handler.sh

DIRECTORY_KINDS = (("RuntimeDirectory", "/run"), ("StateDirectory", "/var/lib"),
                   ("CacheDirectory", "/var/cache"), ("LogsDirectory", "/var/log"))


class Exited(Exception):
    """A gateway ended while the test waited for it (not retried by wait_for)."""


def parse_unit(path):
    """{section: {key: [values in order]}}; an empty assignment resets the list."""
    out, section = {}, None
    with open(path) as f:
        for raw in f:
            line = raw.strip()
            if not line or line[0] in "#;":
                continue
            if line.startswith("[") and line.endswith("]"):
                section = out.setdefault(line[1:-1], {})
                continue
            key, _, value = line.partition("=")
            values = section.setdefault(key.strip(), [])
            if value.strip() == "":
                values.clear()
            else:
                values.append(value.strip())
    return out


def caps_of(values):
    caps = []
    for v in values:
        caps += [c.lower().removeprefix("cap_") for c in v.split()]
    return caps


def unit_env(service):
    env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
    for v in service.get("Environment", []):
        for word in shlex.split(v):
            k, _, val = word.partition("=")
            env[k] = val
    return env


def sandbox(service, tmp, binds=(), ro_binds=(), as_root=False, env=None):
    """The bwrap + setpriv prefix that reproduces `service`'s settings. The
    unit's directories are host folders under tmp, created as systemd creates
    them (owner, mode), and bound at their real paths. /run is a tmpfs in
    any case: the test stages its files there (ro_binds)."""
    protect = (service.get("ProtectSystem") or ["no"])[-1]
    if protect == "strict":
        root = ["--ro-bind", "/", "/"]
    else:  # the test's units use strict or nothing; "yes"/"full" would also need /usr, /etc read-only
        root = ["--bind", "/", "/"] + (["--ro-bind", "/usr", "/usr"] if protect in ("yes", "full") else [])
    if service.get("ProtectKernelTunables") == ["yes"] and protect != "strict":
        root += ["--ro-bind", "/sys", "/sys"]
    cmd = ["bwrap", "--die-with-parent", *root, "--dev-bind", "/dev", "/dev",
           "--unshare-pid", "--proc", "/proc", "--clearenv", "--tmpfs", "/run"]
    if service.get("IPAddressDeny") == ["any"]:
        cmd += ["--unshare-net"]  # only lo: what IPAddressAllow=localhost leaves
    if service.get("PrivateTmp") == ["yes"]:
        cmd += ["--tmpfs", "/tmp", "--tmpfs", "/var/tmp"]
    if service.get("ProtectHome") == ["yes"]:
        for d in ("/home", "/root"):
            cmd += ["--tmpfs", d, "--remount-ro", d]
    for kind, base in DIRECTORY_KINDS:
        names = " ".join(service.get(kind, [])).split()
        if not names:
            continue
        if base != "/run":
            cmd += ["--tmpfs", base]
        mode = int((service.get(kind + "Mode") or ["0755"])[-1], 8)
        for name in names:
            host = os.path.join(tmp, "unit", kind, name)
            if not os.path.isdir(host):
                os.makedirs(host)
                os.chown(host, 0 if as_root else UID, 0 if as_root else GID)
            os.chmod(host, mode)
            cmd += ["--bind", host, os.path.join(base, name)]
    for p in " ".join(service.get("ReadWritePaths", [])).split():
        optional = p.startswith("-")
        p = p.lstrip("-")
        if os.path.exists(p):
            cmd += ["--bind", p, p]
        elif not optional:
            raise RuntimeError(f"ReadWritePaths={p} does not exist here")
    for src, dst in ro_binds:
        cmd += ["--ro-bind", src, dst]
    for src, dst in binds:
        cmd += ["--bind", src, dst]
    for k, v in {**unit_env(service), **(env or {})}.items():
        cmd += ["--setenv", k, v]
    bounding = caps_of(service.get("CapabilityBoundingSet", []))
    ambient = caps_of(service.get("AmbientCapabilities", []))
    cmd += ["setpriv"]
    if not as_root:
        cmd += [f"--reuid={UID}", f"--regid={GID}", "--clear-groups"]
    if "CapabilityBoundingSet" in service:
        cmd += ["--bounding-set=-all" + "".join(f",+{c}" for c in bounding)]
    if ambient:
        cmd += ["--inh-caps=-all" + "".join(f",+{c}" for c in ambient),
                "--ambient-caps=-all" + "".join(f",+{c}" for c in ambient)]
    if service.get("NoNewPrivileges") == ["yes"]:
        cmd += ["--no-new-privs"]
    umask = (service.get("UMask") or ["0022"])[-1]
    return cmd + ["--", "sh", "-c", f'umask {umask} && exec "$@"', "sh"]


def descendant(pid, comm):
    """The PID of the first process named `comm` below `pid` (breadth first)."""
    children = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        children.setdefault(ppid, []).append((int(d), name))
    queue = [pid]
    while queue:
        for child, name in children.get(queue.pop(0), []):
            if name == comm:
                return child
            queue.append(child)
    return None


def host_path(tmp, kind, inside):
    """The host folder behind a path inside one of the unit's directories."""
    for k, base in DIRECTORY_KINDS:
        if k == kind and inside.startswith(base + "/"):
            return os.path.join(tmp, "unit", kind, inside[len(base) + 1:])
    raise ValueError(inside)


def main():
    if os.geteuid() != 0:
        print("skip: needs root (namespaces, another uid)")
        return SKIP
    for tool in ("bwrap", "setpriv"):
        if shutil.which(tool) is None:
            print(f"skip: {tool} not installed (scripts/setup-deps.sh installs bubblewrap)")
            return SKIP

    probe = subprocess.run(["bwrap", "--ro-bind", "/", "/", "--dev-bind", "/dev", "/dev", "--unshare-pid", "--proc",
                            "/proc", "--unshare-net", "--tmpfs", "/run", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        print(f"skip: bwrap cannot make namespaces here: {probe.stderr.strip()}")
        return SKIP

    unit = parse_unit(os.path.join(SCRIPTS, "gossipgw.service"))
    service = unit["Service"]
    # The documented paths are the ones under test.
    for doc in ("docs/events.md", "config/examples/gossipgw.yaml"):
        check(f"{doc} documents the hosts file at {DOCUMENTED_HOSTS}",
              DOCUMENTED_HOSTS in open(os.path.join(ROOT, doc)).read())
    check("the sample handler logs to " + DEFAULT_HANDLER_LOG,
          DEFAULT_HANDLER_LOG in open(os.path.join(SCRIPTS, "examples", "event-handler.sh")).read())

    tmp = tempfile.mkdtemp(prefix="gwunit-")
    os.chmod(tmp, 0o755)
    procs = {}
    try:
        run_gateway_in_unit(service, tmp, procs)
        run_hugepages_unit(tmp)
        verify_documented_dropins(tmp)
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    gwtest.finish()


def run_gateway_in_unit(service, tmp, procs):
    stage = os.path.join(tmp, "stage")  # read-only inside: binaries, scripts, config
    os.makedirs(os.path.join(stage, "bin"))
    os.makedirs(os.path.join(stage, "scripts"))  # mount point of scripts/
    for b in (GW, CTL):
        shutil.copy2(b, os.path.join(stage, "bin"))
    key = os.path.join(stage, "k.key")
    subprocess.run([CTL, "keygen", "--out", key], check=True, capture_output=True)
    os.chown(key, UID, GID)  # the config folder belongs to the gateway's user (docs/operations.md)
    inside = "/run/gwunit"   # on the sandbox's /run tmpfs
    runtime = "/run/gossipgw"
    memif_in = f"{runtime}/memif.sock"
    sock_in = f"{runtime}/gossipgw.sock"
    stats_in = "/var/lib/gossipgw/stats.json"
    with open(os.path.join(stage, "a.yaml"), "w") as f:
        f.write(f"""cluster:
  name: sbx
  suite: chacha20poly1305
  keys:
    - file: k.key
      primary: true
node:
  name: gw-a
  address: 10.0.0.1
dataplane:
  mbufs: 2048
  idle_backoff_us: 200
membership:
  preset: local
  tags: {{role: edge}}
control:
  socket: {sock_in}
events:
  handler: {inside}/scripts/examples/event-handler.sh
  hosts_file:
    path: {DOCUMENTED_HOSTS}
    tag: role=control-plane
    aliases:
      - tag: role=control-plane
        name: api.internal.{{cluster}}
  hosts_min_interval_ms: 0
""")
    # The unit's ExecStart, as written (launch.sh execs the gateway).
    exec_start = shlex.split(service["ExecStart"][-1].replace("${GOSSIPGW_CONFIG}", f"{inside}/a.yaml")
                             .replace("$GOSSIPGW_LAUNCH_ARGS", ""))
    check("gossipgw.service runs launch.sh", exec_start[0] == "/opt/gossipgw/scripts/launch.sh", exec_start[0])
    exec_start[0] = f"{inside}/scripts/launch.sh"
    prefix = f"gwunit-{os.getpid()}"
    cmd = sandbox(service, tmp, ro_binds=[(stage, inside), (SCRIPTS, f"{inside}/scripts")],
                  env={"GOSSIPGW_BIN_DIR": f"{inside}/bin"})
    cmd += exec_start + ["--vdev", f"net_memif0,role=server,socket={memif_in},socket-abstract=no",
                         "--file-prefix", prefix, "--", "--log-level", "info"]
    a_err = open(os.path.join(tmp, "a.err"), "w")
    procs["a"] = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=a_err, stderr=subprocess.STDOUT,
                                  start_new_session=True)
    memif = host_path(tmp, "RuntimeDirectory", memif_in)
    sock = host_path(tmp, "RuntimeDirectory", sock_in)

    def a_log():
        return open(os.path.join(tmp, "a.err")).read()[-3000:]
    def a_listening():
        if procs["a"].poll() is not None:
            raise Exited(f"gateway A exited with {procs['a'].returncode}")
        return os.path.exists(memif)
    try:
        wait_for("gateway A (in the unit's sandbox) listening on memif", a_listening, timeout=60)
    except (TimeoutError, Exited) as e:
        check("gateway A starts under the unit's settings", False, f"{e}\n{a_log()}")
        return

    # B: an ordinary gateway outside, a control-plane member joining A.
    b_key = os.path.join(tmp, "b.key")
    shutil.copy2(key, b_key)
    os.chown(b_key, 0, 0)
    b_cfg = os.path.join(tmp, "b.yaml")
    with open(b_cfg, "w") as f:
        f.write(f"""cluster:
  name: sbx
  suite: chacha20poly1305
  keys:
    - file: b.key
      primary: true
node:
  name: gw-b
  address: 10.0.0.2
dataplane:
  mbufs: 2048
  idle_backoff_us: 200
membership:
  preset: local
  seeds: [10.0.0.1:7946]
  tags: {{role: control-plane}}
control:
  socket: {tmp}/b.sock
""")
    procs["b"] = subprocess.Popen(
        [GW, "-l", "0,1", "--no-huge", "-m", "256", "--no-pci", f"--file-prefix={prefix}-b", "--log-level=lib.eal:warning",
         f"--vdev=net_memif0,role=client,socket={memif},socket-abstract=no", "--", "--config", b_cfg],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=open(os.path.join(tmp, "b.err"), "w"))

    def members():
        return {m["name"]: m["state"] for m in gwtest.ctl_json(CTL, "members", sock=sock)["members"]}
    try:
        wait_for("A sees B alive", lambda: members().get("gw-b") == "alive", timeout=60)
        check("gateway A runs under the unit's settings and B joins it", True)
    except TimeoutError as e:
        check("gateway A runs under the unit's settings and B joins it", False, f"{e}\n{a_log()}")
        return

    log = host_path(tmp, "LogsDirectory", DEFAULT_HANDLER_LOG)
    try:
        wait_for("the sample handler logged gw-b's join", lambda: os.path.exists(log) and "member=gw-b" in open(log).read())
        check(f"the shipped sample handler wrote {DEFAULT_HANDLER_LOG} (its default) in the sandbox", True)
    except TimeoutError as e:
        check(f"the shipped sample handler wrote {DEFAULT_HANDLER_LOG} (its default) in the sandbox", False,
              f"{e}\n{a_log()}")
    hosts = host_path(tmp, "CacheDirectory", DOCUMENTED_HOSTS)
    want = ["10.0.0.2 gw-b", "10.0.0.2 api.internal.sbx"]
    try:
        wait_for("hosts file with gw-b and its alias", lambda: os.path.exists(hosts)
                 and all(w in open(hosts).read().splitlines() for w in want))
        check(f"{DOCUMENTED_HOSTS} lists gw-b and api.internal.sbx", True)
    except TimeoutError as e:
        check(f"{DOCUMENTED_HOSTS} lists gw-b and api.internal.sbx", False, f"{e}\n{a_log()}")

    # Another service's user reads it where it lives on the host (the unit's
    # directory modes, the file's own mode under UMask=0077).
    reader = ["bwrap", "--ro-bind", "/", "/", "--dev-bind", "/dev", "/dev", "--proc", "/proc"]
    for kind, base in DIRECTORY_KINDS:
        reader += ["--tmpfs", base]
        for name in " ".join(service.get(kind, [])).split():
            reader += ["--ro-bind", os.path.join(tmp, "unit", kind, name), os.path.join(base, name)]
    as_reader = ["setpriv", f"--reuid={READER_UID}", f"--regid={READER_UID}", "--clear-groups", "--"]
    r = subprocess.run(reader + as_reader + ["cat", DOCUMENTED_HOSTS], capture_output=True, text=True)
    check(f"another user (uid {READER_UID}, e.g. dnsmasq) reads {DOCUMENTED_HOSTS}",
          r.returncode == 0 and "10.0.0.2 gw-b" in r.stdout, r.stderr.strip())
    # The control: the runtime directory (the control socket's) stays closed.
    r = subprocess.run(reader + as_reader + ["ls", "/run/gossipgw"], capture_output=True, text=True)
    check("another user cannot list /run/gossipgw (RuntimeDirectoryMode=0700)", r.returncode != 0, r.stdout)

    # SIGTERM to the gateway, as systemd sends it to its main process (bwrap
    # forwards no signals): the stats land in the state directory.
    gw_pid = descendant(procs["a"].pid, "gossipgw")
    check("the unit's main process is the gateway itself (launch.sh execs)", gw_pid is not None)
    if gw_pid is None:
        return
    os.kill(gw_pid, signal.SIGTERM)
    try:
        rc = procs["a"].wait(timeout=30)
    except subprocess.TimeoutExpired:
        rc = None
    check("A exits 0 on SIGTERM", rc == 0, f"rc {rc}\n{a_log()}")
    check(f"A wrote its stats to {stats_in} (StateDirectory)",
          os.path.exists(host_path(tmp, "StateDirectory", stats_in)), a_log())


def run_hugepages_unit(tmp):
    """gossipgw-hugepages.service's commands in its own sandbox, as root with
    only its capabilities. The reserve writes the real counter (one page more,
    put back after)."""
    unit = parse_unit(os.path.join(SCRIPTS, "gossipgw-hugepages.service"))
    service = unit["Service"]
    counter = "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages"
    if not os.path.exists(counter) or shutil.which("dpdk-hugepages.py") is None or \
            os.statvfs("/sys").f_flag & os.ST_RDONLY:
        print("skip hugepages unit: no 2 MB hugepages, a read-only /sys, or no dpdk-hugepages.py here")
        return
    before = int(open(counter).read())
    exec_start = shlex.split(service["ExecStart"][-1].replace("${GOSSIPGW_HUGEPAGES_2M}", str(before + 1)))
    exec_start[0] = exec_start[0].replace("/opt/gossipgw/scripts", "/run/gwunit-hp")
    cmd = sandbox(service, tmp, ro_binds=[(SCRIPTS, "/run/gwunit-hp")], as_root=True)
    try:
        r = subprocess.run(cmd + exec_start, capture_output=True, text=True, timeout=120)
        got = int(open(counter).read())
        if got == before and "found only" in r.stderr:
            print(f"skip hugepages reserve: the kernel has no free page now ({r.stderr.strip()})")
        else:
            check("gossipgw-hugepages.service ExecStart reserves in its sandbox",
                  r.returncode == 0 and got == before + 1, f"rc {r.returncode}, {before} -> {got}: {r.stderr.strip()}")
    finally:
        with open(counter, "w") as f:
            f.write(str(before))
    # ExecStartPost: hand a hugetlbfs mount point to the gateway's user, with
    # only the unit's capabilities (a stand-in folder for /dev/hugepages).
    mnt = os.path.join(tmp, "hugepages")
    os.makedirs(mnt)
    posts = [shlex.split(p.replace("gossipgw:gossipgw", f"{UID}:{GID}").replace("/dev/hugepages", mnt))
             for p in service.get("ExecStartPost", [])]
    check("gossipgw-hugepages.service hands /dev/hugepages over (chown, chmod)",
          [p[0] for p in posts] == ["/bin/chown", "/bin/chmod"], posts)
    for p in posts:
        r = subprocess.run(sandbox(service, tmp, binds=[(mnt, mnt)], as_root=True) + p, capture_output=True, text=True)
        check(f"ExecStartPost {' '.join(p)} in the unit's sandbox", r.returncode == 0, r.stderr.strip())
    st = os.stat(mnt)
    check("the mount point belongs to the gateway's user, mode 0700",
          (st.st_uid, st.st_gid, st.st_mode & 0o7777) == (UID, GID, 0o700), oct(st.st_mode))


def verify_documented_dropins(tmp):
    """Every drop-in docs/events.md shows for gossipgw.service is valid."""
    text = open(os.path.join(ROOT, "docs", "events.md")).read()
    blocks = re.findall(r"```ini\n(# /etc/systemd/system/gossipgw\.service\.d/([\w.-]+\.conf)\n.*?)```", text, re.S)
    check("docs/events.md shows drop-ins for handlers (network, writable path)", len(blocks) >= 2, len(blocks))
    if shutil.which("systemd-analyze") is None:
        print("skip drop-in verification: no systemd-analyze")
        return
    d = os.path.join(tmp, "units")
    os.makedirs(os.path.join(d, "gossipgw.service.d"))
    for name in ("gossipgw.service", "gossipgw-hugepages.service"):
        with open(os.path.join(SCRIPTS, name)) as f, open(os.path.join(d, name), "w") as g:
            g.write(f.read().replace("/opt/gossipgw", ROOT))
    for body, name in blocks:
        with open(os.path.join(d, "gossipgw.service.d", name), "w") as f:
            f.write(body)
    env = dict(os.environ, SYSTEMD_UNIT_PATH=d + ":")
    r = subprocess.run(["systemd-analyze", "verify", os.path.join(d, "gossipgw.service")], capture_output=True,
                       text=True, env=env)
    check("systemd-analyze verify gossipgw.service with the documented drop-ins",
          r.returncode == 0 and "Unknown" not in r.stderr and "ignoring" not in r.stderr.lower(), r.stderr.strip())


if __name__ == "__main__":
    sys.exit(main())
