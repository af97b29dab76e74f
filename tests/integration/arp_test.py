#!/usr/bin/env python3
"""ARP on the real gateway (dataplane/arp.h), frame bytes checked.

usage: arp_test.py GOSSIPGW

Feeds gossipgw (net_pcap, rx_pcap -> tx_pcap) a pcap of ARP frames:
  - requests for our address (10.0.0.1), from several askers: each must be
    answered once, with exactly the reply frame below;
  - requests for another address, an ARP reply to someone else, a request
    whose sender claims our own address, an IPv6-over-ARP oddity and a
    truncated frame: no reply;
  - replies addressed to us from new hosts: taken as transmit hints only
    with dataplane.arp_hints: true (off by default: ARP is unauthenticated).
Every frame keeps the drop_not_gossip verdict; arp.replies and arp.hints
count beside it, per lcore and in total.

Then where our datagrams go (issue 17 item 6): an outsider claims a seed's
address by ARP before we send to it. By default our datagrams to the seed go
to broadcast, never to the outsider's MAC; with the seed pinned in
dataplane.neighbors they go to the pinned MAC.
"""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

GW = sys.argv[1]
OUR_IP = bytes([10, 0, 0, 1])
failures = []


def check(name, cond, detail=""):
    print(("ok   " if cond else "FAIL ") + name + ("" if cond else f": {detail}"), flush=True)
    if not cond:
        failures.append(name)


def write_pcap(path, frames):
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for i, fr in enumerate(frames):
            f.write(struct.pack("<IIII", 1700000000, i, len(fr), len(fr)))
            f.write(fr)


def read_pcap(path):
    with open(path, "rb") as f:
        data = f.read()
    magic = struct.unpack("<I", data[:4])[0]
    endian = "<" if magic in (0xA1B2C3D4, 0xA1B23C4D) else ">"
    frames, off = [], 24
    while off + 16 <= len(data):
        _, _, incl, _ = struct.unpack(endian + "IIII", data[off:off + 16])
        frames.append(data[off + 16:off + 16 + incl])
        off += 16 + incl
    return frames


def mac(i):
    return bytes([0x02, 0x11, 0x22, 0x33, 0x44, i])


def arp(op, sha, spa, tha, tpa, dst=b"\xff" * 6, htype=1, ptype=0x0800, hlen=6, plen=4):
    body = struct.pack(">HHBBH", htype, ptype, hlen, plen, op) + sha + spa + tha + tpa
    frame = dst + sha + b"\x08\x06" + body
    return frame + b"\x00" * (60 - len(frame))  # padded like a real minimum frame


def expected_reply(req, our_mac):
    sha, spa = req[22:28], req[28:32]
    body = struct.pack(">HHBBH", 1, 0x0800, 6, 4, 2) + our_mac + OUR_IP + sha + spa
    return sha + our_mac + b"\x08\x06" + body + req[42:]  # same length, padding kept


tmp = tempfile.mkdtemp(prefix="gwarp-")
try:
    key = os.path.join(tmp, "k.key")
    fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, bytes(range(32)))
    os.close(fd)
    base = ("cluster:\n  name: arp\n  suite: chacha20poly1305\n  keys:\n    - file: k.key\n"
            "node:\n  address: 10.0.0.1\n  port: 7946\n")

    def run(name, cfg_text, frames, idle_ms=300):
        cfg = os.path.join(tmp, name + ".yaml")
        with open(cfg, "w") as f:
            f.write(cfg_text)
        rx = os.path.join(tmp, name + "-in.pcap")
        tx = os.path.join(tmp, name + "-out.pcap")
        write_pcap(rx, frames)
        stats_path = os.path.join(tmp, name + "-stats.json")
        cmd = [GW, "-l", "0,1", "--no-huge", "-m", "256", "--no-pci", f"--file-prefix=gwarp-{name}-{os.getpid()}",
               "--log-level=lib.eal:warning", f"--vdev=net_pcap0,rx_pcap={rx},tx_pcap={tx}", "--",
               "--config", cfg, "--idle-exit-ms", str(idle_ms), "--stats-json", stats_path]
        r = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
        check(f"{name}: gossipgw exits 0", r.returncode == 0, r.stderr[-2000:])
        with open(stats_path) as f:
            return json.load(f), read_pcap(tx)

    requests = [arp(1, mac(i), bytes([10, 0, 0, 10 + i]), b"\x00" * 6, OUR_IP) for i in range(1, 6)]
    ignored = [
        arp(1, mac(20), bytes([10, 0, 0, 20]), b"\x00" * 6, bytes([10, 0, 0, 2])),  # another host's address
        arp(2, mac(21), bytes([10, 0, 0, 21]), mac(22), bytes([10, 0, 0, 22])),     # reply to someone else
        arp(1, mac(23), OUR_IP, b"\x00" * 6, OUR_IP),                                 # claims our address
        arp(1, mac(24), bytes([10, 0, 0, 24]), b"\x00" * 6, OUR_IP, ptype=0x86DD),  # not IPv4
        arp(1, mac(25), bytes([10, 0, 0, 25]), b"\x00" * 6, OUR_IP)[:40],           # truncated
    ]
    hints = [arp(2, mac(30 + i), bytes([10, 0, 0, 30 + i]), b"\x02" * 6, OUR_IP, dst=b"\x02" * 6)
             for i in range(3)]
    frames = []
    for i in range(5):  # interleaved, so replies come from more than one burst position
        frames += [requests[i], ignored[i]]
    frames += hints
    plain = base + "membership:\n  enabled: false\n"
    # Default: ARP answered, nothing taken as a hint.
    stats, _ = run("default", plain, frames)
    check("default: arp.hints = 0 (ARP teaches no transmit MAC)", stats["arp"]["hints"] == 0, stats["arp"])
    check("default: arp.replies = requests for our address", stats["arp"]["replies"] == len(requests), stats["arp"])
    # Opted in: the askers of answered requests and the senders of replies to us, 8 new hosts.
    stats, sent = run("hints", plain + "dataplane:\n  arp_hints: true\n", frames)
    totals = stats["totals"]
    check("every ARP frame is drop_not_gossip", totals["drop_not_gossip"] == len(frames) == totals["rx_total"],
          f"{totals['drop_not_gossip']} of {totals['rx_total']}, sent {len(frames)}")
    check("arp.replies = requests for our address", stats["arp"]["replies"] == len(requests), stats["arp"])
    check("arp_hints: true: arp.hints = hosts that ARPed us", stats["arp"]["hints"] == len(requests) + len(hints),
          stats["arp"])
    workers = [l for l in stats["lcores"] if l["role"] == "worker"]
    check("per-lcore arp counters add up",
          sum(l["arp"]["replies"] for l in workers) == stats["arp"]["replies"] and
          sum(l["arp"]["hints"] for l in workers) == stats["arp"]["hints"], workers)

    # An outsider claims the seed 10.0.0.40 by ARP (a gratuitous reply and a
    # request) before the gateway has heard from it; the gateway then sends
    # its join to the seed. Which MACs do frames to 10.0.0.40 carry?
    seed_ip = bytes([10, 0, 0, 40])
    attacker = bytes([0x02, 0xBA, 0xD0, 0, 0, 0x66])
    pinned = bytes([0x02, 0, 0, 0, 0, 0x40])
    claims = [arp(2, attacker, seed_ip, b"\x02" * 6, OUR_IP, dst=b"\x02" * 6),
              arp(1, attacker, seed_ip, b"\x00" * 6, OUR_IP)]
    seeded = base + "membership:\n  preset: local\n  seeds: ['10.0.0.40:7946']\n"

    def to_seed(out):
        return [fr for fr in out if fr[12:14] == b"\x08\x00" and fr[30:34] == seed_ip]

    _, out = run("claim-default", seeded, claims, idle_ms=1500)
    got = to_seed(out)
    check("claimed seed, default: the gateway sent to the seed", len(got) >= 1, f"{len(out)} frames")
    check("claimed seed, default: none to the outsider's MAC (broadcast until the seed is heard)",
          all(fr[0:6] == b"\xff" * 6 for fr in got), [fr[0:6].hex(":") for fr in got])
    _, out = run("claim-pinned", seeded + "dataplane:\n  arp_hints: true\n  neighbors:\n"
                 "    - {address: 10.0.0.40, mac: '02:00:00:00:00:40'}\n", claims, idle_ms=1500)
    got = to_seed(out)
    check("claimed seed, pinned: the gateway sent to the seed", len(got) >= 1, f"{len(out)} frames")
    check("claimed seed, pinned: every frame to the pinned MAC (hints on, still ignored)",
          all(fr[0:6] == pinned for fr in got), [fr[0:6].hex(":") for fr in got])

    out = [fr for fr in sent if fr[12:14] == b"\x08\x06"]
    check("one reply per request", len(out) == len(requests), f"{len(out)} ARP frames sent")
    if out:
        our_mac = out[0][6:12]
        check("our MAC is a unicast, non-zero address", our_mac[0] & 1 == 0 and our_mac != b"\x00" * 6,
              our_mac.hex(":"))
        for i, (req, got) in enumerate(zip(requests, out)):
            want = expected_reply(req, our_mac)
            check(f"reply {i} bytes", got == want, f"\n got  {got.hex()}\n want {want.hex()}")
finally:
    shutil.rmtree(tmp, ignore_errors=True)

if failures:
    print(f"{len(failures)} check(s) failed: {', '.join(failures)}")
    sys.exit(1)
print("all ARP checks passed")
