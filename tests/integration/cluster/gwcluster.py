"""A gossipgw cluster on one machine, driven through scripts/cluster.sh.

Everything the scenario needs to read from a running gateway goes through
Cluster.members() and Cluster.stats(): with the control API (gossipctl
--socket PATH members|stats --json) when this build has it, else from the
gateway's log (member events) and, for counters, from --stats-json on exit.
DPDK telemetry (/ethdev/stats) gives the port's live receive counters.
"""
import datetime
import json
import math
import os
import re
import socket
import struct
import subprocess
import time

# Timing presets, as in control/engine/config.h (seconds).
PRESETS = {
    "local": dict(probe_interval=1.0, probe_timeout=0.2, suspicion_mult=3, suspicion_max_mult=6,
                  gossip_interval=0.1, sync_timeout=5.0),
    "lan": dict(probe_interval=1.0, probe_timeout=0.5, suspicion_mult=4, suspicion_max_mult=6,
                gossip_interval=0.2, sync_timeout=10.0),
    "wan": dict(probe_interval=5.0, probe_timeout=3.0, suspicion_mult=6, suspicion_max_mult=6,
                gossip_interval=0.5, sync_timeout=30.0),
}
LEAVE_TIMEOUT_S = 2.0  # membership.leave_timeout_ms in the generated configs


def bounds(preset, n):
    """Protocol bounds (seconds) for a cluster of n members, from the preset.

    failure: the dead member is probed by everyone within 2(n-1) probe
    intervals (randomised round robin, worst case across two rounds), one more
    for the direct and indirect probes, then the longest suspicion timeout
    (Lifeguard starts at max = suspicion_max_mult * min, min =
    suspicion_mult * max(1, log10 n) * probe interval), then dissemination
    (20 gossip intervals), plus 3 s for start-up jitter on a shared 2-core
    machine.
    join: two join attempts (sync_timeout each) plus dissemination.
    leave: the leave timeout plus dissemination.
    """
    p = PRESETS[preset]
    min_susp = p["suspicion_mult"] * max(1.0, math.log10(n)) * p["probe_interval"]
    max_susp = p["suspicion_max_mult"] * min_susp
    dissem = 20 * p["gossip_interval"]
    return {
        "failure": (2 * (n - 1) + 1) * p["probe_interval"] + p["probe_timeout"] + max_susp + dissem + 3.0,
        "join": 2 * p["sync_timeout"] + dissem + 5.0,
        "leave": LEAVE_TIMEOUT_S + dissem + 3.0,
        "suspicion_min": min_susp,
        "suspicion_max": max_susp,
    }


_LOG_EVENT = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+)\] \[gossipgw\] \[\w+\] member (\S+) (join|leave|failed|update) \(incarnation (\d+)\)")


def _log_time(text):
    return datetime.datetime.strptime(text, "%Y-%m-%d %H:%M:%S.%f").timestamp()


def telemetry(prefix, command):
    """One DPDK telemetry request to the gateway with this file prefix."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(2)
    try:
        s.connect(f"/var/run/dpdk/{prefix}/dpdk_telemetry.v2")
        info = json.loads(s.recv(16384).decode())
        s.send(command.encode())
        return json.loads(s.recv(max(16384, info.get("max_output_len", 16384))).decode())
    finally:
        s.close()


def read_pcap(path):
    """Frames of a classic pcap file (as tcpdump -w writes)."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 24:
        return []
    magic = data[:4]
    if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        endian = "<"
    elif magic in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
        endian = ">"
    else:
        raise ValueError(f"{path}: not a classic pcap file")
    frames, off = [], 24
    while off + 16 <= len(data):
        _, _, incl, _ = struct.unpack(endian + "IIII", data[off:off + 16])
        off += 16
        frames.append(data[off:off + incl])
        off += incl
    return frames


class Cluster:
    def __init__(self, script, bin_dir, nodes=3, preset="local", cluster_id=None, work_dir=None,
                 idle_backoff_us=500, log=print, seeds=1, framecnt=None):
        self.script = script
        self.bin_dir = bin_dir
        self.n = nodes
        self.preset = preset
        self.id = cluster_id or str(os.getpid() % 10_000_000)
        self.dir = work_dir or f"/tmp/gwc{self.id}"
        self.idle_backoff_us = idle_backoff_us
        self.seeds = seeds
        self.framecnt = framecnt
        self.log = log
        self.info = None
        self.helpers = []  # Popen of tcpdump etc., registered for teardown
        self.api = False

    # ---- cluster.sh ----

    def sh(self, *args, check=True, capture=True, timeout=120):
        cmd = ["bash", self.script, "--id", self.id, "--dir", self.dir, *args]
        r = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=capture, text=True, timeout=timeout)
        if check and r.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}): {(r.stderr or '').strip()}")
        return r

    def up(self):
        r = self.sh("up", "--nodes", str(self.n), "--preset", self.preset, "--bin-dir", self.bin_dir,
                    "--idle-backoff-us", str(self.idle_backoff_us), "--seeds", str(self.seeds),
                    *(["--framecnt", str(self.framecnt)] if self.framecnt else []), timeout=600)
        self.log(r.stdout.rstrip())
        self.info = json.loads(self.sh("status", "--json").stdout)
        self.api = self._detect_api()
        return self

    def _detect_api(self):
        if not self.info.get("control_api"):
            return False
        h = subprocess.run([self.info["ctl"], "--help"], capture_output=True, text=True)
        return re.search(r"^\s+members\b", h.stdout, re.M) is not None and \
            re.search(r"^\s+stats\b", h.stdout, re.M) is not None

    def down(self, keep_dir=False):
        for p in self.helpers:
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        self.helpers = []
        return self.sh("down", *(["--keep-dir"] if keep_dir else []), check=False, timeout=120)

    def node(self, i):
        return self.info["nodes"][i - 1]

    def name(self, i):
        return f"gw-{i}"

    def start(self, i):
        r = self.sh("start", str(i))
        self.log(r.stdout.rstrip())

    def stop(self, i, kill=False):
        args = ["stop", str(i)] + (["--kill"] if kill else [])
        r = self.sh(*args)
        self.log(r.stdout.rstrip())

    def ns(self, which):
        if which == "attacker":
            return self.info["attacker"]["namespace"]
        if which == "switch":
            return self.info["switch"]["namespace"]
        return self.node(which)["namespace"]

    def run_in(self, which, cmd, **kw):
        return subprocess.run(["ip", "netns", "exec", self.ns(which), *cmd], **kw)

    def spawn_in(self, which, cmd, **kw):
        p = subprocess.Popen(["ip", "netns", "exec", self.ns(which), *cmd], **kw)
        self.helpers.append(p)
        os.makedirs(os.path.join(self.dir, "pids"), exist_ok=True)
        with open(os.path.join(self.dir, "pids", f"{p.pid}.pid"), "w") as f:
            f.write(str(p.pid))
        return p

    def reap(self, p):
        try:
            os.unlink(os.path.join(self.dir, "pids", f"{p.pid}.pid"))
        except FileNotFoundError:
            pass
        if p in self.helpers:
            self.helpers.remove(p)

    # ---- logs ----

    def log_lines(self, i, current_only=True):
        try:
            with open(self.node(i)["log"], errors="replace") as f:
                lines = f.read().splitlines()
        except FileNotFoundError:
            return []
        if current_only:
            starts = [k for k, l in enumerate(lines) if l.startswith("=== start ")]
            if starts:
                lines = lines[starts[-1]:]
        return lines

    def events(self, i, current_only=True):
        """[(unix_time, member, kind, incarnation)] from node i's log."""
        out = []
        for line in self.log_lines(i, current_only):
            m = _LOG_EVENT.match(line)
            if m:
                out.append((_log_time(m.group(1)), m.group(2), m.group(3), int(m.group(4))))
        return out

    # ---- reading state: control API, else logs ----

    def ctl(self, i, *args, timeout=10):
        # --socket belongs to the first subcommand (gossipctl keys --socket S install FILE)
        r = subprocess.run([self.info["ctl"], args[0], "--socket", self.node(i)["socket"], *args[1:]],
                           capture_output=True, text=True, timeout=timeout)
        if r.returncode != 0:
            raise RuntimeError(f"gossipctl {' '.join(args)} on gw-{i}: {r.stderr.strip()}")
        return r.stdout

    def members(self, i):
        """{name: {"state": alive|suspect|dead|left, "incarnation": N or None}} as node i sees it."""
        if self.api:
            doc = json.loads(self.ctl(i, "members", "--json"))
            return {m["name"]: {"state": m["state"], "incarnation": m.get("incarnation")} for m in doc["members"]}
        view = {self.name(i): {"state": "alive", "incarnation": None}}
        for _, member, kind, inc in self.events(i):
            view[member] = {"state": {"join": "alive", "update": "alive", "failed": "dead", "leave": "left"}[kind],
                            "incarnation": inc}
        return view

    def stats(self, i):
        """The live counter document (same JSON as --stats-json), or None without the control API."""
        if not self.api:
            return None
        return json.loads(self.ctl(i, "stats", "--json"))

    def exit_stats(self, i):
        with open(self.node(i)["stats"]) as f:
            return json.load(f)

    def port_rx(self, i):
        """Frames the gateway's DPDK port has received (ethdev ipackets), live."""
        try:
            return telemetry(self.node(i)["prefix"], "/ethdev/stats,0")["/ethdev/stats"]["ipackets"]
        except (OSError, KeyError, TypeError, ValueError):
            return None
