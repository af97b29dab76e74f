#!/usr/bin/env python3
"""A lossy, slow L2 switch between a cluster's gateways (what `tc netem` on
each bridge port would do, on kernels built without sch_netem).

usage: linkemu.py --port NAME=MAC [--port ...] --loss P --delay-ms B --jitter-ms J
                  [--seed S] [--stats FILE]

Runs inside the cluster's switch namespace, on the gateways' bridge-side veth
ends (taken off the bridge first). Every frame received on a port goes to the
port whose MAC it is addressed to (broadcast, multicast and unknown
destinations to every other port); for each (frame, output port) independently
it is lost with probability P, else sent after B ms plus an exponential jitter
of mean J ms: the simulator's network model (perf/gossipsim, network.loss,
latency_base_ms, latency_jitter_ms), applied once per datagram on its way to
the receiver, as a netem qdisc on the receiver's bridge port would apply it.
A port that is down (`ip link set PORT down`) receives nothing and everything
sent to it is counted `link_down` (a partition made by taking links down).

--stats FILE is rewritten every second and at exit (SIGTERM/SIGINT) with the
per-port counters: rx, tx, lost (emulated), link_down, overrun (frames the
kernel dropped because this process fell behind: not emulated loss), the
delays actually applied from receipt to send (mean, max, ms) and how late
this process sent a frame past its due time at most (late_max_ms).
"""
import argparse
import heapq
import json
import os
import random
import select
import signal
import socket
import struct
import sys
import time

ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_STATISTICS = 6
PACKET_OUTGOING = 4


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--port", action="append", required=True, help="NAME=MAC of a gateway's bridge-side veth")
    ap.add_argument("--loss", type=float, default=0.0, help="probability a frame is lost on its way to a port")
    ap.add_argument("--delay-ms", type=float, default=0.0, help="fixed one-way delay")
    ap.add_argument("--jitter-ms", type=float, default=0.0, help="mean of the exponential jitter added")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--stats", default=None)
    a = ap.parse_args()
    if not 0.0 <= a.loss < 1.0 or a.delay_ms < 0 or a.jitter_ms < 0:
        print("linkemu: --loss in [0, 1), --delay-ms and --jitter-ms >= 0", file=sys.stderr)
        return 2

    rng = random.Random(a.seed)
    names, macs, socks = [], {}, []
    for spec in a.port:
        name, _, mac = spec.partition("=")
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        s.bind((name, 0))
        s.setblocking(False)
        macs[bytes.fromhex(mac.replace(":", ""))] = len(names)
        names.append(name)
        socks.append(s)
    by_fd = {s.fileno(): k for k, s in enumerate(socks)}
    stats = [dict(rx=0, tx=0, lost=0, link_down=0, overrun=0, delay_sum_ms=0.0, delay_max_ms=0.0,
                  late_max_ms=0.0)
             for _ in names]
    pending = []  # (due, seq, out_port, frame)
    seq = 0
    stop = []

    def on_signal(_s, _f):
        stop.append(1)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    def write_stats():
        for k, s in enumerate(socks):
            try:
                _, drops = struct.unpack("II", s.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8))
                stats[k]["overrun"] += drops
            except OSError:
                pass
        if not a.stats:
            return
        doc = {"loss": a.loss, "delay_ms": a.delay_ms, "jitter_ms": a.jitter_ms, "seed": a.seed,
               "ports": {names[k]: dict(stats[k], delay_mean_ms=(stats[k]["delay_sum_ms"] / stats[k]["tx"]
                                                                 if stats[k]["tx"] else 0.0))
                         for k in range(len(names))}}
        tmp = a.stats + ".tmp"
        with open(tmp, "w") as f:
            json.dump(doc, f)
        os.replace(tmp, a.stats)

    poller = select.poll()
    for s in socks:
        poller.register(s.fileno(), select.POLLIN)
    next_stats = time.monotonic() + 1.0
    print("linkemu: forwarding between " + " ".join(names), flush=True)
    while not stop:
        now = time.monotonic()
        while pending and pending[0][0] <= now:
            due, _, out, frame, t_rx = heapq.heappop(pending)
            try:
                socks[out].send(frame)
                st = stats[out]
                st["tx"] += 1
                d = (now - t_rx) * 1000.0
                st["delay_sum_ms"] += d
                st["delay_max_ms"] = max(st["delay_max_ms"], d)
                st["late_max_ms"] = max(st["late_max_ms"], (now - due) * 1000.0)
            except OSError:  # the port is down (or its peer is gone)
                stats[out]["link_down"] += 1
        if now >= next_stats:
            write_stats()
            next_stats = now + 1.0
        timeout = 1000 if not pending else max(0, (pending[0][0] - time.monotonic()) * 1000)
        try:
            events = poller.poll(min(timeout, 1000))
        except InterruptedError:
            continue
        for fd, _ in events:
            k = by_fd[fd]
            s = socks[k]
            while True:
                try:
                    frame, addr = s.recvfrom(65535)
                except BlockingIOError:
                    break
                except OSError:  # ENETDOWN once when the port goes down
                    break
                if addr[2] == PACKET_OUTGOING or len(frame) < 14:
                    continue  # our own transmissions on this port
                stats[k]["rx"] += 1
                dst = frame[:6]
                out_ports = [macs[dst]] if dst in macs else [p for p in range(len(names)) if p != k]
                t = time.monotonic()
                for out in out_ports:
                    if out == k:
                        continue
                    if a.loss and rng.random() < a.loss:
                        stats[out]["lost"] += 1
                        continue
                    delay = a.delay_ms + (rng.expovariate(1.0 / a.jitter_ms) if a.jitter_ms else 0.0)
                    seq += 1
                    heapq.heappush(pending, (t + delay / 1000.0, seq, out, frame, t))
    write_stats()
    return 0


if __name__ == "__main__":
    sys.exit(main())
