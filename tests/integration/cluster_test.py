#!/usr/bin/env python3
"""A real gossipgw cluster on one machine: membership lifecycle and attacks.

usage: cluster_test.py --bin-dir BUILD [--nodes K] [--preset local|lan]
                       [--flood N] [--phantoms N] [--replay-loops N] [--keep]

K gateways (default 3) in their own network namespaces on DPDK net_af_packet,
joined by a Linux bridge, plus an attacker namespace (scripts/cluster.sh).
The scenario:
  1. join: every gateway joins through the seed and converges to the full view
  2. crash: kill -9 of gw-K is detected and disseminated as failed within the
     bound derived from the preset's probe and suspicion timing
  3. restart: gw-K comes back with a higher incarnation and rejoins
  4. attack: from the attacker namespace, at tcpreplay --topspeed, floods of
     unkeyed, foreign-cluster, unknown-key and forged frames to every gateway,
     phantom members sealed with a foreign key, and replays of frames captured
     on the bridge; no view changes, no member suspected, and every attacker
     frame is counted under its verdict
  5. key rotation through the control API (only where gossipctl has it)
  6. leave: SIGTERM of gw-2; every other member records "left", never "failed"
  7. stop: counters from every gateway's --stats-json, the verdict table
Exit status 0 if every check passed, 1 if any failed, 77 (skip) without root,
network namespaces, tcpreplay or tcpdump. Used by scripts/cluster-demo.sh
and the meson test 'cluster' (suite integration). See docs/cluster.md.
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(HERE, "cluster"))
import gwcluster  # noqa: E402

SKIP = 77
# Verdicts that only an attacker produces: the members' own traffic is keyed,
# ours and well formed, so every one of these counts is an attacker frame.
ATTACK_VERDICTS = ["drop_unkeyed", "drop_foreign_cluster", "drop_unknown_key", "drop_bad_mac", "drop_bad_auth"]
# A tampered datagram fails its AEAD (drop_bad_auth); a copy of one whose
# header already failed on that lcore is refused before the AEAD
# (drop_auth_retry, dataplane/replay.h FailedHeaders) while the lcore still
# remembers it. With the floods looped, which of the two a copy gets depends
# on that memory (1,024 4-way sets, least recently used forgotten), so the
# attacker's tampered frames are checked against the two together.
COMBINED = {"drop_bad_auth": ("drop_bad_auth", "drop_auth_retry")}


def attack_count(totals, v):
    """What the gateway counted for attack verdict v (summed with its alternative, see COMBINED)."""
    return sum(totals.get(k, 0) for k in COMBINED.get(v, (v,)))


def attack_label(v):
    return "+".join(COMBINED.get(v, (v,)))
# Verdicts a replayed frame may get, once the dataplane has a replay check.
REPLAY_VERDICTS = ["drop_replay", "drop_stale"]

failures = []


def check(name, cond, detail=""):
    print(("ok   " if cond else "FAIL ") + name + ("" if cond or not detail else f": {detail}"), flush=True)
    if not cond:
        failures.append(name)
    return cond


def banner(text):
    print(f"\n=== {text} [{time.strftime('%H:%M:%S')}]", flush=True)


def wait_for(pred, timeout, step=0.2):
    deadline = time.time() + timeout
    while True:
        v = pred()
        if v or time.time() >= deadline:
            return v
        time.sleep(step)


def print_views(c, running):
    names = [c.name(i) for i in range(1, c.n + 1)]
    print(f"  {'view of':8} " + " ".join(f"{n:>22}" for n in names))
    for i in running:
        v = c.members(i)
        cells = []
        for n in names:
            m = v.get(n)
            if m is None:
                cells.append(f"{'-':>22}")
            else:
                inc = m["incarnation"]
                cells.append(f"{m['state'] + ('/' + str(inc) if inc is not None else ''):>22}")
        print(f"  {c.name(i):8} " + " ".join(cells))
    sys.stdout.flush()


def print_counters(c, running):
    """Live verdict counters per gateway (control API only)."""
    if not c.api:
        return
    docs = {i: c.stats(i)["totals"] for i in running}
    rows = ["rx_total", "accepted"] + sorted({k for d in docs.values() for k, v in d.items()
                                              if k.startswith("drop_") and v})
    print(f"  {'counter':22}" + "".join(f"{'gw-' + str(i):>12}" for i in running))
    for r in rows:
        print(f"  {r:22}" + "".join(f"{docs[i].get(r, 0):>12}" for i in running))
    sys.stdout.flush()


def full_view(c, i, alive):
    v = c.members(i)
    return all(v.get(c.name(j), {}).get("state") == "alive" for j in alive)


def run_tcpreplay(c, files, extra=()):
    r = c.run_in("attacker", ["tcpreplay", "--topspeed", "-i", "gwc0", *extra, *files],
                 capture_output=True, text=True, timeout=600)
    out = r.stdout + r.stderr
    res = {"rc": r.returncode, "sent": 0, "failed": 0, "pps": 0.0, "seconds": 0.0}
    m = re.search(r"Successful packets:\s+(\d+)", out)
    if m:
        res["sent"] = int(m.group(1))
    m = re.search(r"Failed packets:\s+(\d+)", out)
    if m:
        res["failed"] = int(m.group(1))
    m = re.search(r"Rated: [\d.]+ Bps, [\d.]+ Mbps, ([\d.]+) pps", out)
    if m:
        res["pps"] = float(m.group(1))
    m = re.search(r"sent in ([\d.]+) seconds", out)
    if m:
        res["seconds"] = float(m.group(1))
    if r.returncode != 0:
        res["error"] = out.strip()[-400:]
    return res


def gen(c, i, out_base, mix, seed, key=None):
    node = c.node(i)
    cmd = [c.info["gen"], "--config", node["config"], "--dst-mac", node["mac"], "--src-ip", "10.77.0.100",
           "--seed", str(seed), "--mix", mix, "--timestamp", str(int(time.time())),
           "--out", out_base + ".pcap", "--truth", out_base + ".json"]
    if key:
        cmd += ["--key", key]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    with open(out_base + ".json") as f:
        return json.load(f)


def check_metrics_urls(c, running):
    """Issue 52 item 9: the metrics URL cluster.sh prints answers inside each
    gateway's namespace (it needs lo up there)."""
    for i in running:
        ns = c.ns(i)
        link = c.run_in(i, ["ip", "-o", "link", "show", "lo"], capture_output=True, text=True)
        check(f"gw-{i}: lo is up in {ns}", ",UP" in link.stdout or "<LOOPBACK,UP" in link.stdout, link.stdout.strip())
        url = c.node(i).get("metrics", "")
        if not c.info.get("control_api"):
            continue
        fetch = c.run_in(i, [sys.executable, "-c",
                             "import sys, urllib.request; "
                             "sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())", url],
                         capture_output=True, text=True, timeout=60)
        check(f"gw-{i}: the printed metrics URL {url or '(none)'} answers inside {ns}",
              fetch.returncode == 0 and "gossipgw_" in fetch.stdout, (fetch.stderr or fetch.stdout)[-300:])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin-dir", required=True, help="meson build dir with gossipgw, gossipctl, gossipgen")
    ap.add_argument("--script", default=os.path.join(HERE, "..", "..", "scripts", "cluster.sh"))
    ap.add_argument("--nodes", type=int, default=3, choices=[3, 4, 5])
    ap.add_argument("--preset", default="local", choices=["local", "lan"])
    ap.add_argument("--flood", type=int, default=1500, help="frames of each attack kind per gateway")
    ap.add_argument("--phantoms", type=int, default=1000, help="foreign-key phantom frames per gateway")
    ap.add_argument("--flood-loops", type=int, default=1,
                    help="send the floods this many times (above 1 the gateways must keep up with tcpreplay)")
    ap.add_argument("--replay-loops", type=int, default=200, help="times the captured frames are replayed")
    ap.add_argument("--capture-s", type=float, default=4.0, help="seconds of member traffic captured")
    ap.add_argument("--id", default=None, help="cluster id (default: from the PID)")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    ap.add_argument("--no-control-api", action="store_true",
                    help="read views from the logs and counters from --stats-json even where gossipctl has the API")
    a = ap.parse_args()

    if os.geteuid() != 0:
        print("skip: needs root (network namespaces, DPDK af_packet)")
        return SKIP
    for tool in ("ip", "tcpreplay", "tcpdump"):
        if shutil.which(tool) is None:
            print(f"skip: {tool} not installed")
            return SKIP
    probe = f"gwc{os.getpid() % 10_000_000}-probe"
    if subprocess.run(["ip", "netns", "add", probe], capture_output=True).returncode != 0:
        print("skip: cannot create a network namespace here")
        return SKIP
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    # Per-kind flood must fit the af_packet ring (framecnt 16384) even if the
    # gateway is not scheduled at all while it arrives: no loss by design.
    per_node = a.flood * 7 + a.phantoms
    if per_node > 16000:
        print("--flood/--phantoms too large for the af_packet ring (16384 frames per gateway)")
        return 2

    c = gwcluster.Cluster(os.path.abspath(a.script), os.path.abspath(a.bin_dir), nodes=a.nodes,
                          preset=a.preset, cluster_id=a.id)
    b = gwcluster.bounds(a.preset, a.nodes)

    def on_signal(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_signal)

    K = a.nodes
    running = list(range(1, K + 1))
    attack_expected = {i: {v: 0 for v in ATTACK_VERDICTS} for i in running}
    replay_expected = {i: 0 for i in running}
    exit_stats = {}
    try:
        banner(f"1. join: {K} gateways, preset {a.preset} (bounds: failure {b['failure']:.1f} s, "
               f"join {b['join']:.1f} s, leave {b['leave']:.1f} s)")
        t0 = time.time()
        c.up()
        if a.no_control_api:
            c.api = False
        print(f"  reading state through: {'control API (gossipctl --socket)' if c.api else 'logs and --stats-json on exit'}")
        t_up = time.time()
        ok = wait_for(lambda: all(full_view(c, i, running) for i in running), b["join"])
        check(f"every gateway sees all {K} alive ({time.time() - t0:.1f} s after the first start, "
              f"{time.time() - t_up:.1f} s after the last)", ok)
        print_views(c, running)
        print_counters(c, running)
        check_metrics_urls(c, running)
        first_inc = {}
        for i in running:
            for j in running:
                for _, m, kind, inc in c.events(j):
                    if m == c.name(i) and kind == "join":
                        first_inc[i] = inc

        banner(f"2. crash: kill -9 gw-{K}")
        t_kill = time.time()
        c.stop(K, kill=True)
        others = [i for i in running if i != K]

        suspect_at = {}

        def failed_at():
            out = {}
            if c.api:  # the suspicion itself is visible through the control API
                for i in others:
                    if i not in suspect_at and c.members(i).get(c.name(K), {}).get("state") in ("suspect", "dead"):
                        suspect_at[i] = time.time()
            for i in others:
                for t, m, kind, _ in c.events(i):
                    if m == c.name(K) and kind == "failed" and t >= t_kill - 0.5:
                        out[i] = t
                        break
            return out if len(out) == len(others) else None
        det = wait_for(failed_at, b["failure"])
        if check(f"gw-{K} recorded failed by every other member within {b['failure']:.1f} s", det is not None):
            for i, t in sorted(det.items()):
                sus = f" (suspect or dead by {suspect_at[i] - t_kill:.2f} s)" if i in suspect_at else ""
                print(f"  gw-{i}: failed after {t - t_kill:.2f} s{sus}")
            print(f"  detection: first {min(det.values()) - t_kill:.2f} s, all {max(det.values()) - t_kill:.2f} s "
                  f"(suspicion timeout {b['suspicion_min']:.0f}..{b['suspicion_max']:.0f} s)")
        left_early = [i for i in others for _, m, kind, _ in c.events(i)
                      if m == c.name(K) and kind == "leave"]
        check(f"nobody recorded gw-{K} as left (it crashed)", not left_early, str(left_early))
        print_views(c, others)
        print_counters(c, others)
        old_inc = next((inc for _, m, kind, inc in c.events(others[0]) if m == c.name(K) and kind == "failed"),
                       first_inc.get(K))

        banner(f"3. restart gw-{K}: rejoin with a higher incarnation")
        time.sleep(1.1)  # incarnations are Unix seconds: make the next one strictly higher
        t_start = time.time()
        c.start(K)

        def rejoined():
            out = {}
            for i in others:
                for t, m, kind, inc in c.events(i):
                    if m == c.name(K) and kind in ("join", "update") and t >= t_start - 0.5:
                        out[i] = inc
            return out if len(out) == len(others) and full_view(c, K, running) else None
        rj = wait_for(rejoined, b["join"])
        if check(f"gw-{K} rejoined everywhere within {b['join']:.1f} s", rj is not None):
            check(f"gw-{K}'s new incarnation is higher than its old one ({old_inc})",
                  all(inc > (old_inc or 0) for inc in rj.values()), str(rj))
        print_views(c, running)
        print_counters(c, running)

        banner("4. attack from gwc-atk: floods, phantoms, replays at tcpreplay --topspeed")
        adir = os.path.join(c.dir, "attack")
        os.makedirs(adir, exist_ok=True)
        views_before = {i: {n: m["state"] for n, m in c.members(i).items()} for i in running}
        incs_before = {i: {n: m["incarnation"] for n, m in c.members(i).items()} for i in running}
        events_before = {i: len(c.events(i)) for i in running}
        stats_before = {i: c.stats(i) for i in running}

        # Capture real member traffic on every bridge port (what each gateway sent).
        caps, procs = {}, []
        for i in running:
            caps[i] = os.path.join(adir, f"capture-gw{i}.pcap")
            p = c.spawn_in("switch", ["tcpdump", "-i", f"gwcp{i}", "-Q", "in", "-U", "-n", "-w", caps[i],
                                      "udp port 7946 and not ether broadcast"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            procs.append(p)
        for p in procs:  # "listening on ..." once the capture runs
            p.stderr.readline()
        time.sleep(a.capture_s)
        for p in procs:
            p.terminate()
            p.wait(timeout=10)
            c.reap(p)
        mac_to_node = {bytes.fromhex(c.node(i)["mac"].replace(":", "")): i for i in running}
        captured = 0
        for i in running:
            for fr in gwcluster.read_pcap(caps[i]):
                j = mac_to_node.get(fr[:6])
                if j is not None:
                    replay_expected[j] += a.replay_loops
                    captured += 1
        print(f"  captured {captured} member frames in {a.capture_s:.0f} s; each replayed {a.replay_loops} times")

        floods, truths = [], {}
        kinds = (f"foreign={a.flood},unknown_key={a.flood},forged_header={a.flood},forged_tag={a.flood},"
                 f"forged_ciphertext={a.flood},unkeyed_random={a.flood},unkeyed_short={a.flood // 2},"
                 f"unkeyed_version={a.flood - a.flood // 2}")
        foreign_key = os.path.join(c.dir, "keys", "foreign.key")
        for i in running:
            t = gen(c, i, os.path.join(adir, f"flood-gw{i}"), kinds, 100 + i)
            p = gen(c, i, os.path.join(adir, f"phantom-gw{i}"), f"valid={a.phantoms}", 200 + i, key=foreign_key)
            truths[i] = (t, p)
            for v in ATTACK_VERDICTS:
                attack_expected[i][v] += t["expected"][v]
            # Sealed with a key that is in nobody's keyring: unknown key.
            attack_expected[i]["drop_unknown_key"] += p["expected"]["accepted"]
            floods += [os.path.join(adir, f"flood-gw{i}.pcap"), os.path.join(adir, f"phantom-gw{i}.pcap")]
        for i in running:
            for v in ATTACK_VERDICTS:
                attack_expected[i][v] *= a.flood_loops
        port_before = {i: c.port_rx(i) for i in running}
        suspects_seen = []
        rf = run_tcpreplay(c, floods, extra=["--loop", str(a.flood_loops)] if a.flood_loops > 1 else [])
        if c.api:
            for i in running:
                suspects_seen += [(i, n) for n, m in c.members(i).items() if m["state"] == "suspect"]
        rr = run_tcpreplay(c, [caps[i] for i in running], extra=["--loop", str(a.replay_loops)])
        total_attack = sum(sum(e.values()) for e in attack_expected.values())
        check("tcpreplay sent every flood frame", rf["rc"] == 0 and rf["failed"] == 0 and rf["sent"] == total_attack,
              json.dumps(rf))
        check("tcpreplay sent every replayed frame", rr["rc"] == 0 and rr["failed"] == 0, json.dumps(rr))
        print(f"  floods+phantoms: {rf['sent']} frames in {rf['seconds']:.2f} s ({rf['pps']:.0f} pps)")
        print(f"  replays:         {rr['sent']} frames in {rr['seconds']:.2f} s ({rr['pps']:.0f} pps)")
        # Let a few probe rounds pass under the aftermath, then compare.
        settle = 3 * gwcluster.PRESETS[a.preset]["probe_interval"]
        deadline = time.time() + settle
        while time.time() < deadline:
            if c.api:
                for i in running:
                    suspects_seen += [(i, n) for n, m in c.members(i).items() if m["state"] == "suspect"]
            time.sleep(0.25)
        port_after = {i: c.port_rx(i) for i in running}
        for i in running:
            if port_before[i] is not None and port_after[i] is not None:
                print(f"  gw-{i}: port received {port_after[i] - port_before[i]} frames during the attack "
                      f"(sent to it: {sum(attack_expected[i].values())} attack + {replay_expected[i]} replayed)")
        views_after = {i: {n: m["state"] for n, m in c.members(i).items()} for i in running}
        incs_after = {i: {n: m["incarnation"] for n, m in c.members(i).items()} for i in running}
        new_events = {i: c.events(i)[events_before[i]:] for i in running}
        check("no member view changed during the attack", views_after == views_before and incs_after == incs_before,
              f"before {views_before} after {views_after}")
        check("no member event (join/leave/failed/update) during the attack",
              all(not e for e in new_events.values()), str(new_events))
        if c.api:
            check("no member suspected during the attack (polled through the control API)", not suspects_seen,
                  str(suspects_seen))
        print_views(c, running)
        print_counters(c, running)
        if c.api:
            for i in running:
                after = c.stats(i)["totals"]
                before = stats_before[i]["totals"]
                for v in ATTACK_VERDICTS:
                    d = attack_count(after, v) - attack_count(before, v)
                    check(f"gw-{i} live: {attack_label(v)} +{d} == {attack_expected[i][v]} sent",
                          d == attack_expected[i][v])

        rotation_done = False
        if c.api and re.search(r"^\s+keys\b", subprocess.run([c.info["ctl"], "--help"], capture_output=True,
                                                              text=True).stdout, re.M):
            banner("5. key rotation while the cluster runs")
            rotation_done = rotate_keys(c, running)
        else:
            banner("5. key rotation: skipped (no control API: not in this build, or --no-control-api)")

        banner("6. leave: SIGTERM gw-2")
        t_term = time.time()
        c.stop(2)
        running = [i for i in running if i != 2]
        exit_stats[2] = c.exit_stats(2)

        def left_all():
            return all(any(m == "gw-2" and kind == "leave" and t >= t_term - 0.5 for t, m, kind, _ in c.events(i))
                       for i in running)
        ok = wait_for(left_all, b["leave"])
        check(f"every member recorded gw-2 as left within {b['leave']:.1f} s", ok)
        print_views(c, running)
        print_counters(c, running)

        banner("7. stop: counters from --stats-json")
        # gw-K first: its counters cover its whole second life (rejoin, attack,
        # gw-2's leave) and nothing of the crash before it.
        for i in sorted(running, key=lambda i: (i != K, i)):
            c.stop(i)
            exit_stats[i] = c.exit_stats(i)
        failed_2 = [i for i in range(1, K + 1) if i != 2
                    for _, m, kind, _ in c.events(i) if m == "gw-2" and kind == "failed"]
        check("nobody ever recorded gw-2 as failed (it left)", not failed_2, str(failed_2))
        ec = exit_stats[K]["membership"]["engine_counters"]
        check(f"gw-{K} (rejoin to stop, attack included): no suspicion started, received or refuted",
              ec.get("suspicions", 0) == 0 and ec.get("refutations", 0) == 0 and
              exit_stats[K]["totals"].get("msg_suspect", 0) == 0,
              f"suspicions {ec.get('suspicions')} refutations {ec.get('refutations')} "
              f"msg_suspect {exit_stats[K]['totals'].get('msg_suspect')}")

        verdict_table(c, exit_stats, attack_expected, replay_expected, rotation_done)
    except KeyboardInterrupt as e:
        print(f"\ninterrupted ({e}): tearing down", flush=True)
        failures.append("interrupted")
    finally:
        # Tear down before printing anything: stdout may be gone (a closed
        # pipe), and nothing may keep the cluster from being removed.
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)
        # Sanitizer reports (ASan/UBSan builds) in the gateways' logs, read
        # before the work directory goes.
        sanitizer = []
        if c.info:
            for i in range(1, K + 1):
                sanitizer += [f"gw-{i}: {line}" for line in c.log_lines(i, current_only=False)
                              if "Sanitizer" in line or "runtime error:" in line]
        r = c.down(keep_dir=a.keep)
        banner("teardown")
        print("  " + (r.stdout or "").strip().replace("\n", "\n  ") + (r.stderr or "").strip())
        left = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        check("no namespace left behind", f"gwc{c.id}-" not in left, left)
        check("no DPDK runtime dir left behind",
              not any(os.path.exists(f"/var/run/dpdk/gwc{c.id}-n{i}") for i in range(1, K + 1)))
        check("no sanitizer report in any gateway's log", not sanitizer, "\n".join(sanitizer[:10]))
        check("no gateway process left behind", not any(
            os.path.exists(f"/proc/{p}") and _is_gateway(p, c.id) for p in _pids()))

    print(f"{len(failures)} failed: {', '.join(failures)}" if failures else "all checks passed")
    return 1 if failures else 0


def _pids():
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def _is_gateway(pid, cid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read()
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return f"--file-prefix=gwc{cid}-n".encode() in cmd and state != "Z"


def rotate_keys(c, running):
    """Install a new key everywhere, make it primary everywhere, remove the old one."""
    ctl = c.info["ctl"]
    new_key = os.path.join(c.dir, "keys", "rotated.key")
    subprocess.run([ctl, "keygen", "--out", new_key], check=True, capture_output=True)

    def keyid(path):
        out = subprocess.run([ctl, "keyid", path], check=True, capture_output=True, text=True).stdout
        return out.strip().split()[-1]
    old_id, new_id = keyid(os.path.join(c.dir, "keys", "primary.key")), keyid(new_key)
    interval = gwcluster.PRESETS[c.preset]["probe_interval"]
    before = {i: c.stats(i)["totals"] for i in running}
    suspects = []

    def poll_suspects():
        for i in running:
            suspects.extend((i, n) for n, m in c.members(i).items() if m["state"] == "suspect")

    def using(i, kid):
        doc = json.loads(c.ctl(i, "keys", "list", "--json"))
        return next((k["members_using"] for k in doc["keys"] if k["id"] == kid), 0), doc["live_members"]
    try:
        for i in running:
            c.ctl(i, "keys", "install", new_key)
        print(f"  installed {new_id} on every member (old primary {old_id})")
        poll_suspects()
        for i in running:
            c.ctl(i, "keys", "use", new_id)
        print(f"  {new_id} is primary on every member")
        # Remove the old key only once every member has heard every live
        # member seal with the new one: nothing in flight still needs it.
        ok = wait_for(lambda: (poll_suspects(), all(
            (lambda u: u[0] == u[1])(using(i, new_id)) for i in running))[1], 10 * interval + 5)
        check(f"every member heard all live members use {new_id}", ok,
              str({i: using(i, new_id) for i in running}))
        for i in running:
            c.ctl(i, "keys", "remove", old_id)
        print(f"  removed {old_id} on every member")
        deadline = time.time() + 3 * interval
        while time.time() < deadline:
            poll_suspects()
            time.sleep(0.25)
        for i in running:
            doc = json.loads(c.ctl(i, "keys", "list", "--json"))
            keys = [(k["id"], k["primary"], k["members_using"]) for k in doc["keys"]]
            print(f"  gw-{i} keys (id, primary, members using): {keys}")
            check(f"gw-{i}: only {new_id} left, primary", [(k[0], k[1]) for k in keys] == [(new_id, True)], str(keys))
    except RuntimeError as e:
        check("key rotation through gossipctl", False, str(e))
        return False
    check("no member suspected during the key rotation", not suspects, str(suspects))
    for i in running:
        after = c.stats(i)["totals"]
        d = {v: after[v] - before[i][v] for v in ("drop_unknown_key", "drop_bad_auth", "drop_bad_mac")}
        check(f"gw-{i}: no member packet dropped during the rotation {d}", not any(d.values()))
    print_views(c, running)
    print_counters(c, running)
    return True


def verdict_table(c, stats, attack_expected, replay_expected, rotation_done):
    nodes = sorted(stats)
    has_replay = all(any(v in stats[i]["totals"] for v in REPLAY_VERDICTS) for i in nodes)
    print(f"\n  {'verdict':22}" + "".join(f"{'gw-' + str(i) + ' sent/counted':>26}" for i in nodes))
    rows = ["accepted", "drop_not_gossip", "drop_malformed"] + ATTACK_VERDICTS + \
        [v for v in REPLAY_VERDICTS + ["drop_rate_limited"] if any(v in stats[i]["totals"] for i in nodes)] + \
        ["drop_ring_full", "rx_total"]
    for v in rows:
        cells = []
        for i in nodes:
            t = stats[i]["totals"]
            sent = attack_expected[i].get(v)
            if v in REPLAY_VERDICTS and has_replay and v == REPLAY_VERDICTS[0]:
                sent = replay_expected[i]
            cells.append(f"{(str(sent) if sent is not None else '-') + ' / ' + str(t.get(v, '-')):>26}")
        print(f"  {v:22}" + "".join(cells))
    print("  (sent: attacker frames aimed at that gateway; accepted and drop_not_gossip also count the members'"
          " own traffic)\n")
    for i in nodes:
        t = stats[i]["totals"]
        verdict_sum = sum(val for k, val in t.items() if k == "accepted" or k.startswith("drop_"))
        check(f"gw-{i}: every received frame has exactly one verdict (sum {verdict_sum} == rx_total {t['rx_total']})",
              verdict_sum == t["rx_total"])
        for v in ATTACK_VERDICTS:
            got = attack_count(t, v)
            check(f"gw-{i}: {attack_label(v)} {got} == {attack_expected[i][v]} attacker frames",
                  got == attack_expected[i][v])
        check(f"gw-{i}: nothing malformed, rate-limited or lost on a full ring",
              t.get("drop_malformed") == 0 and t.get("drop_ring_full") == 0 and t.get("drop_rate_limited", 0) == 0,
              str({k: t.get(k) for k in ("drop_malformed", "drop_ring_full", "drop_rate_limited")}))
        if has_replay:
            got = sum(t.get(v, 0) for v in REPLAY_VERDICTS)
            check(f"gw-{i}: replayed frames {got} == {replay_expected[i]} ({' + '.join(REPLAY_VERDICTS)})",
                  got == replay_expected[i])
        else:
            print(f"  gw-{i}: no replay counters in this build (drop_replay/drop_stale): the "
                  f"{replay_expected[i]} replayed frames were opened and counted as accepted "
                  f"(accepted {t['accepted']} >= {replay_expected[i]}: {t['accepted'] >= replay_expected[i]})")


if __name__ == "__main__":
    sys.exit(main())
