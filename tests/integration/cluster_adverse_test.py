#!/usr/bin/env python3
"""Real gateways on a bad network agree with the simulator (issue 55 item 8).

usage: cluster_adverse_test.py --bin-dir BUILD [--nodes 16] [--preset local]
           [--loss 0.10] [--delay-ms 5] [--jitter-ms 5] [--soak-s 120]
           [--group 4] [--partition-s TTL+15] [--restart N/4] [--down-s 15]
           [--json FILE] [--keep]

N gateways (default 16) in network namespaces on DPDK net_af_packet with the
idle back-off (scripts/cluster.sh, tests/integration/cluster/gwcluster.py).
  1. join: every gateway sees all N alive (clean network).
  2. lossy, slow links: the gateways' bridge ports are handed to a link
     emulator (cluster/linkemu.py) that loses each frame on its way to a
     gateway with probability --loss and delays it --delay-ms plus an
     exponential jitter of mean --jitter-ms (gossipsim's network model); this
     kernel has no sch_netem, so `tc netem` is not available (docs/cluster.md).
     Soak --soak-s seconds.
  3. partition: the links of gw-1..gw-G (the seeds among them) are taken down
     (`ip link set gwcp<i> down` on the switch side) for --partition-s, longer
     than the preset's tombstone lifetime; 10 s in, gw-N crashes (kill -9) and
     stays dead. Links up: every running gateway's view (alive or suspect
     members) must be exactly the running set within --heal-bound (60 s).
  4. restarts: a quarter of the gateways (seeded choice among the running)
     are killed with SIGKILL at once and started again --down-s later: each
     must be back (alive, new incarnation) in every running view within 60 s.
  5. settle --settle-s, then the whole run's member events are judged as
     gossipsim judges them: a "failed" about a member's life that was still
     running is a false failure, counted apart when it was across the active
     partition or within the longest suspicion after the heal (gossipsim's
     false_positives_partition and _after_heal); a member announced alive
     again where it was declared gone (same life) is a resurrection. Checks:
     0 false failures, 0 resurrections, gw-N dead everywhere, every view exact.
Exit status 0 if every check passed, 1 if any failed, 77 (skip) without root
or network namespaces. The meson test 'cluster_adverse' (suite long) runs it;
docs/cluster.md and perf/RESULTS.md have the figures beside gossipsim's
(perf/scenarios/adverse/real-16.yaml).
"""
import argparse
import json
import os
import random
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(HERE, "cluster"))
import gwcluster  # noqa: E402

SKIP = 77
# control/engine/config.h: tombstone_ttl_ns per preset, awareness_max_multiplier.
TOMBSTONE_TTL_S = {"local": 60.0, "lan": 300.0, "wan": 600.0}
AWARENESS_MAX = 8

failures = []


def check(name, cond, detail=""):
    print(("ok   " if cond else "FAIL ") + name + ("" if cond or not detail else f": {detail}"), flush=True)
    if not cond:
        failures.append(name)
    return cond


def banner(text):
    print(f"\n=== {text} [{time.strftime('%H:%M:%S')}]", flush=True)


class Life:
    """One run of a gateway: its incarnations are >= inc0 (Unix seconds at start)."""

    def __init__(self, start, inc0):
        self.start = start
        self.inc0 = inc0
        self.end = None  # time it was killed; None while it runs


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin-dir", required=True)
    ap.add_argument("--script", default=os.path.join(HERE, "..", "..", "scripts", "cluster.sh"))
    ap.add_argument("--nodes", type=int, default=16)
    ap.add_argument("--preset", default="local", choices=sorted(TOMBSTONE_TTL_S))
    ap.add_argument("--seeds", type=int, default=3, help="the first S gateways are everyone's seeds")
    ap.add_argument("--loss", type=float, default=0.10)
    ap.add_argument("--delay-ms", type=float, default=5.0)
    ap.add_argument("--jitter-ms", type=float, default=5.0)
    ap.add_argument("--soak-s", type=float, default=120.0, help="lossy links before the partition")
    ap.add_argument("--group", type=int, default=None, help="gateways cut off (gw-1..gw-G); default N/4")
    ap.add_argument("--partition-s", type=float, default=None, help="default: tombstone lifetime + 15 s")
    ap.add_argument("--heal-bound", type=float, default=60.0)
    ap.add_argument("--restart", type=int, default=None, help="gateways restarted; default N/4")
    ap.add_argument("--down-s", type=float, default=15.0, help="how long the restarted ones stay down")
    ap.add_argument("--rejoin-bound", type=float, default=60.0)
    ap.add_argument("--settle-s", type=float, default=30.0)
    ap.add_argument("--idle-backoff-us", type=int, default=2000)
    ap.add_argument("--framecnt", type=int, default=2048, help="af_packet ring frames per gateway")
    ap.add_argument("--seed", type=int, default=55)
    ap.add_argument("--id", default=None)
    ap.add_argument("--json", default=None, help="write the figures here")
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()

    N = a.nodes
    G = a.group if a.group is not None else N // 4
    R = a.restart if a.restart is not None else N // 4
    ttl = TOMBSTONE_TTL_S[a.preset]
    part_s = a.partition_s if a.partition_s is not None else ttl + 15.0
    if not (3 <= N <= 32 and 1 <= G < N - 1 and 0 <= R < N - 1 and 1 <= a.seeds <= N):
        print("bad --nodes/--group/--restart/--seeds")
        return 2
    if os.geteuid() != 0:
        print("skip: needs root (network namespaces, DPDK af_packet)")
        return SKIP
    probe = f"gwc{os.getpid() % 10_000_000}-probe"
    if subprocess.run(["ip", "netns", "add", probe], capture_output=True).returncode != 0:
        print("skip: cannot create a network namespace here")
        return SKIP
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)

    rng = random.Random(a.seed)
    c = gwcluster.Cluster(os.path.abspath(a.script), os.path.abspath(a.bin_dir), nodes=N, preset=a.preset,
                          cluster_id=a.id, idle_backoff_us=a.idle_backoff_us, seeds=a.seeds, framecnt=a.framecnt)
    b = gwcluster.bounds(a.preset, N)
    p = gwcluster.PRESETS[a.preset]
    # gossipsim's healed_recently(): the longest suspicion plus two probe
    # rounds stretched by local health.
    after_heal_window = b["suspicion_max"] + 2 * AWARENESS_MAX * p["probe_interval"]

    def on_signal(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_signal)

    names = {i: c.name(i) for i in range(1, N + 1)}
    index = {v: k for k, v in names.items()}
    lives = {i: [Life(0.0, 0)] for i in range(1, N + 1)}
    running = set(range(1, N + 1))
    group = set(range(1, G + 1))
    crash_victim = N  # on the connected side, not a seed
    part = None  # (start, heal)
    fig = {"nodes": N, "preset": a.preset, "seeds": a.seeds, "loss": a.loss, "delay_ms": a.delay_ms,
           "jitter_ms": a.jitter_ms, "group": G, "partition_s": part_s, "tombstone_ttl_s": ttl,
           "restarted": R, "down_s": a.down_s, "idle_backoff_us": a.idle_backoff_us}
    emu = None
    emu_stats = os.path.join("/tmp", f"linkemu-{os.getpid()}.json")

    def views():
        out = {}
        for i in sorted(running):
            try:
                out[i] = c.members(i)
            except (RuntimeError, subprocess.TimeoutExpired, ValueError) as e:
                out[i] = {"error": str(e)}
        return out

    def view_set(v):
        return {n for n, m in v.items() if isinstance(m, dict) and m.get("state") in ("alive", "suspect")}

    def exact(vs):
        want = {names[i] for i in running}
        return all(view_set(v) == want for v in vs.values())

    def show_diff(vs):
        want = {names[i] for i in running}
        for i, v in sorted(vs.items()):
            got = view_set(v)
            if got != want:
                print(f"  {names[i]}: missing {sorted(want - got, key=index.get)} "
                      f"extra {sorted(got - want, key=lambda n: index.get(n, 99))}")
        sys.stdout.flush()

    def diff_line(vs):
        want = {names[i] for i in running}
        parts = []
        for i, v in sorted(vs.items()):
            got = view_set(v)
            if got != want:
                miss = ",".join(n[3:] for n in sorted(want - got, key=index.get))
                extra = ",".join(n[3:] for n in sorted(got - want, key=lambda n: index.get(n, 99)))
                parts.append(f"{i}:" + (f"-{miss}" if miss else "") + (f"+{extra}" if extra else ""))
        return " ".join(parts)

    def wait_exact(bound, what):
        # Every 5 s while it is not exact: which view misses (-) or holds too
        # much (+) of whom, e.g. "5:-1,2" (gw-5 misses gw-1 and gw-2).
        t0 = time.time()
        last = None
        next_print = t0 + 5.0
        while True:
            vs = views()
            if exact(vs):
                return time.time() - t0, vs
            last = vs
            if time.time() >= next_print:
                print(f"  {what} +{time.time() - t0:.0f} s: {diff_line(vs)}", flush=True)
                next_print += 5.0
            if time.time() - t0 > bound:
                print(f"  {what}: views not exact after {bound:.0f} s:")
                show_diff(last)
                return None, last
            time.sleep(1.0)

    def kill(i):
        c.stop(i, kill=True)
        lives[i][-1].end = time.time()
        running.discard(i)

    def start(i):
        t = time.time()
        lives[i].append(Life(t, int(t)))
        c.start(i)
        running.add(i)

    t_begin = time.time()
    try:
        banner(f"1. join: {N} gateways, preset {a.preset}, seeds gw-1..gw-{a.seeds}, "
               f"idle back-off {a.idle_backoff_us} us")
        c.up()
        t_up = time.time()
        fig["start_all_s"] = round(t_up - t_begin, 1)
        if not c.api:
            print("  this build has no control API: views from logs")
        dt, vs = wait_exact(b["join"] + N, "join")
        check(f"every gateway sees all {N} alive ({time.time() - t_begin:.1f} s after the first start)", dt is not None)
        fig["join_converged_after_last_start_s"] = None if dt is None else round(dt, 1)
        if dt is None:
            raise RuntimeError("no convergence: nothing to measure")

        banner(f"2. lossy links: loss {a.loss:.0%}, one-way delay {a.delay_ms} ms + exp(mean {a.jitter_ms} ms)")
        sw = c.ns("switch")
        for i in range(1, N + 1):
            subprocess.run(["ip", "-n", sw, "link", "set", f"gwcp{i}", "nomaster"], check=True)
        # The network is not what is under test: the emulator runs at a higher
        # priority (nice -10) so that CPU contention stretches its delays less.
        emu = c.spawn_in("switch", ["nice", "-n", "-10", sys.executable, os.path.join(HERE, "cluster", "linkemu.py"),
                                    *[f"--port=gwcp{i}={c.node(i)['mac']}" for i in range(1, N + 1)],
                                    "--loss", str(a.loss), "--delay-ms", str(a.delay_ms),
                                    "--jitter-ms", str(a.jitter_ms), "--seed", str(a.seed), "--stats", emu_stats],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        print("  " + emu.stdout.readline().strip(), flush=True)
        t_lossy = time.time()
        time.sleep(a.soak_s)
        vs = views()
        check(f"after {a.soak_s:.0f} s of lossy links every view is exact", exact(vs))
        if not exact(vs):
            show_diff(vs)

        banner(f"3. partition: links of gw-1..gw-{G} down for {part_s:.0f} s (tombstone lifetime {ttl:.0f} s); "
               f"gw-{crash_victim} crashes 10 s in")
        t_part = time.time()
        for i in sorted(group):
            subprocess.run(["ip", "-n", sw, "link", "set", f"gwcp{i}", "down"], check=True)
        time.sleep(10.0)
        t_crash = time.time()
        kill(crash_victim)
        time.sleep(max(0.0, t_part + part_s - time.time()))
        for i in sorted(group):
            subprocess.run(["ip", "-n", sw, "link", "set", f"gwcp{i}", "up"], check=True)
        t_heal = time.time()
        part = (t_part, t_heal)
        print(f"  links up after {t_heal - t_part:.1f} s")
        dt, vs = wait_exact(a.heal_bound, "heal")
        fig["heal_s"] = None if dt is None else round(dt, 1)
        check(f"every view exact within {a.heal_bound:.0f} s of the heal"
              + (f" ({dt:.1f} s)" if dt is not None else ""), dt is not None)
        if dt is None:
            # Keep going: the restarts and the final judgement still say something.
            dt2, vs = wait_exact(120.0, "heal (late)")
            fig["heal_late_s"] = None if dt2 is None else round(a.heal_bound + dt2, 1)

        banner(f"4. restarts: {R} gateways killed at once, started again after {a.down_s:.0f} s")
        victims = sorted(rng.sample(sorted(running), R))
        print(f"  restarting {', '.join(names[i] for i in victims)}")
        t_kill = time.time()
        for i in victims:
            kill(i)
        time.sleep(max(0.0, t_kill + a.down_s - time.time()))
        t_restart = time.time()
        for i in victims:
            start(i)
        t_started = time.time()

        def back():
            vs = views()
            for i in victims:
                for o, v in vs.items():
                    m = v.get(names[i]) if isinstance(v, dict) else None
                    if not m or m.get("state") not in ("alive", "suspect") or \
                            (m.get("incarnation") is not None and m["incarnation"] < lives[i][-1].inc0):
                        return False, vs
            return True, vs
        rejoin = None
        while time.time() - t_started <= a.rejoin_bound:
            ok, vs = back()
            if ok:
                rejoin = time.time() - t_restart
                break
            time.sleep(1.0)
        fig["restart_rejoin_s"] = None if rejoin is None else round(rejoin, 1)
        fig["restart_start_all_s"] = round(t_started - t_restart, 1)
        check(f"every restarted member back (alive, new incarnation) in every view within {a.rejoin_bound:.0f} s "
              f"of the last start" + (f" ({rejoin:.1f} s after the first start)" if rejoin is not None else ""),
              rejoin is not None)
        if rejoin is None:
            show_diff(vs)
        dt, vs = wait_exact(a.rejoin_bound, "after the restarts")
        check("every view exact after the restarts", dt is not None)

        banner(f"5. settle {a.settle_s:.0f} s, then judge the whole run")
        time.sleep(a.settle_s)
        vs = views()
        check("every view exact at the end", exact(vs))
        if not exact(vs):
            show_diff(vs)
        dead_somewhere = [names[o] for o, v in vs.items()
                          if v.get(names[crash_victim], {}).get("state") in ("alive", "suspect")]
        check(f"gw-{crash_victim} (crashed during the partition) is dead or forgotten in every view",
              not dead_somewhere, str(dead_somewhere))

        # ---- the whole run's member events, judged as gossipsim judges them ----
        events = []  # (t, observer, subject, kind, inc)
        for o in range(1, N + 1):
            for t, m, kind, inc in c.events(o, current_only=False):
                if m in index:
                    events.append((t, o, index[m], kind, inc))
        events.sort()

        def life_of(s, inc):
            ls = lives[s]
            k = 0
            while k + 1 < len(ls) and inc >= ls[k + 1].inc0:
                k += 1
            return k

        false_f, part_f, heal_f, detections, resurrections = [], [], [], [], []
        declared_gone = set()  # (observer, subject, life)
        for t, o, s, kind, inc in events:
            k = life_of(s, inc)
            life = lives[s][k]
            gone = life.end is not None and t >= life.end - 0.05
            if kind in ("failed", "leave"):
                if gone:
                    declared_gone.add((o, s, k))
                    detections.append((t, o, s, k))
                elif kind == "failed":
                    rec = (round(t - t_begin, 1), names[o], names[s], inc, t)
                    across = part and part[0] <= t < part[1] and ((o in group) != (s in group))
                    healed = part and part[1] <= t < part[1] + after_heal_window
                    # A partitioned member is cut from everyone (its link is
                    # down), not only from the other side.
                    cut = part and part[0] <= t < part[1] and (o in group or s in group)
                    if across or cut:
                        part_f.append(rec)
                    elif healed:
                        heal_f.append(rec)
                    else:
                        false_f.append(rec)
            elif kind == "join":
                if (o, s, k) in declared_gone and gone:
                    resurrections.append((round(t - t_begin, 1), names[o], names[s], inc))
                if not gone:  # a refuted death: the life goes on
                    declared_gone.discard((o, s, k))

        member_hours = sum(((l.end or time.time()) - max(l.start, t_begin)) for ls in lives.values() for l in ls) / 3600
        fig["false_failures"] = len(false_f)
        fig["false_failures_partition"] = len(part_f)
        fig["false_failures_after_heal"] = len(heal_f)
        fig["resurrections"] = len(resurrections)
        fig["member_hours"] = round(member_hours, 2)
        # Detection of the crash during the partition, on the connected side.
        seen = {o: t for t, o, s, k in detections if s == crash_victim and k == 0 and o not in group}
        conn = [o for o in range(1, N + 1) if o not in group and o != crash_victim]
        if all(o in seen for o in conn):
            fig["crash_detect_first_s"] = round(min(seen[o] for o in conn) - t_crash, 1)
            fig["crash_detect_all_s"] = round(max(seen[o] for o in conn) - t_crash, 1)
        check(f"gw-{crash_victim}'s crash recorded by every connected member", all(o in seen for o in conn),
              str(sorted(set(conn) - set(seen))))
        print(f"  false failures: {len(false_f)} (partition: {len(part_f)}, "
              f"after heal within {after_heal_window:.0f} s: {len(heal_f)}) in {member_hours:.2f} member-hours")
        for rec in false_f[:20]:
            print(f"    at {rec[0]} s {rec[1]} declared {rec[2]} (incarnation {rec[3]}) failed")
        fig["false_failure_list"] = [r[:4] for r in false_f[:50]]
        # How long each declaration after the heal stood: until the observer
        # saw the member alive again (its refutation).
        flaps = []
        for rec in heal_f:
            t_rec = rec[4]
            back_at = next((t for t, o, s, kind, _ in events if t >= t_rec and names[o] == rec[1]
                            and names[s] == rec[2] and kind in ("join", "update")), None)
            flaps.append(None if back_at is None else back_at - t_rec)
        if heal_f:
            fig["after_heal_back_within_s"] = (None if None in flaps else round(max(flaps), 1))
            fig["after_heal_first_s"] = round(heal_f[0][4] - part[1], 2)
            fig["after_heal_last_s"] = round(heal_f[-1][4] - part[1], 2)
        for rec, fl in list(zip(heal_f, flaps))[:10]:
            print(f"    after heal: at {rec[0]} s {rec[1]} declared {rec[2]} failed"
                  + (f", alive again there {fl:.1f} s later" if fl is not None else ", never alive there again"))
        check("every member declared failed after the heal is alive again where it was declared",
              None not in flaps, str([r[:4] for r, f in zip(heal_f, flaps) if f is None][:10]))
        check("0 false failures of live members (outside the partition and its aftermath)", not false_f,
              f"{len(false_f)}")
        check("0 resurrections", not resurrections, str(resurrections[:10]))

        try:
            with open(emu_stats) as f:
                es = json.load(f)
            ports = es["ports"].values()
            tx = sum(x["tx"] for x in ports)
            lost = sum(x["lost"] for x in ports)
            fig["link"] = {"frames_sent": tx, "lost": lost, "loss_measured": round(lost / max(1, tx + lost), 4),
                           "link_down": sum(x["link_down"] for x in ports),
                           "overrun": sum(x["overrun"] for x in ports),
                           "delay_mean_ms": round(sum(x["delay_sum_ms"] for x in ports) / max(1, tx), 2),
                           "delay_max_ms": round(max(x["delay_max_ms"] for x in ports), 1),
                           "late_max_ms": round(max(x["late_max_ms"] for x in ports), 1)}
            print(f"  link emulator: {fig['link']}")
            check("the link emulator kept up (no frame dropped by the kernel for it)", fig["link"]["overrun"] == 0,
                  str(fig["link"]["overrun"]))
        except (OSError, ValueError, KeyError) as e:
            check("link emulator statistics", False, str(e))
        fig["timeline_s"] = {"lossy": round(t_lossy - t_begin, 1), "partition": round(t_part - t_begin, 1),
                             "crash": round(t_crash - t_begin, 1), "heal": round(t_heal - t_begin, 1),
                             "restart_kill": round(t_kill - t_begin, 1), "restart_start": round(t_restart - t_begin, 1),
                             "end": round(time.time() - t_begin, 1)}
        try:
            load = open("/proc/loadavg").read().split()[:3]
            fig["loadavg"] = load
        except OSError:
            pass
        print("figures: " + json.dumps(fig), flush=True)
        if a.json:
            with open(a.json, "w") as f:
                json.dump(fig, f, indent=1)
    except KeyboardInterrupt as e:
        print(f"\ninterrupted ({e}): tearing down", flush=True)
        failures.append("interrupted")
    except Exception as e:  # noqa: BLE001 -- any failure still tears down
        print(f"\nerror: {type(e).__name__}: {e}", flush=True)
        failures.append("error")
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)
        if failures and c.info:
            for i in range(1, N + 1):
                tail = c.log_lines(i, current_only=False)[-5:]
                print(f"  {names[i]} log tail:\n    " + "\n    ".join(tail))
            if a.keep:
                print(f"  work directory kept: {c.dir}")
        r = c.down(keep_dir=a.keep)  # stops the link emulator too (a registered helper)
        try:
            os.unlink(emu_stats)
        except OSError:
            pass
        banner("teardown")
        print("  " + (r.stdout or "").strip().replace("\n", "\n  ") + (r.stderr or "").strip())
        left = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        check("no namespace left behind", f"gwc{c.id}-" not in left, left)
        check("no DPDK runtime dir left behind",
              not any(os.path.exists(f"/var/run/dpdk/gwc{c.id}-n{i}") for i in range(1, N + 1)))
    print(f"\n{'PASS' if not failures else 'FAIL: ' + ', '.join(failures)} ({time.time() - t_begin:.0f} s)")
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
