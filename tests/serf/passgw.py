#!/usr/bin/env python3
"""A transparent stand-in for gossipgw in the serf harness's gateway slot
(tests/serf/harness.sh up --front K --gateway tests/serf/passgw.py): it takes
the same command line (EAL options, then -- --config F --stats-json S),
reads the two vdevs' interface names, creates the tap with the NIC's MAC
and copies every frame both ways without looking at it.

What it is for: checking the harness's topology without the real filter
(the agent reaches the network only through the tap; up0's kernel side
takes nothing) and checking that the with-gateway assertions can fail: in
front of this, the crash packet kills the agent and the reflection arrives,
as without any gateway. At SIGTERM it writes {"to_agent": N, "to_network":
M} to --stats-json. Not fast (Python, one frame per system call); not for
floods.
"""
import fcntl
import json
import os
import re
import select
import signal
import socket
import struct
import subprocess
import sys

TUNSETIFF = 0x400454CA
IFF_TAP, IFF_NO_PI = 0x0002, 0x1000
ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4


def main():
    argv = sys.argv[1:]
    nic = tap = stats = None
    for a in argv:
        m = re.match(r"--vdev=net_af_packet\d+,iface=([^,]+)", a)
        if m:
            nic = m.group(1)
        m = re.match(r"--vdev=net_tap\d+,iface=([^,]+)", a)
        if m:
            tap = m.group(1)
    if "--stats-json" in argv:
        stats = argv[argv.index("--stats-json") + 1]
    if not nic or not tap:
        sys.exit("passgw: needs --vdev=net_af_packet0,iface=NIC and --vdev=net_tap0,iface=TAP")

    ps = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    ps.bind((nic, 0))
    tfd = os.open("/dev/net/tun", os.O_RDWR)
    fcntl.ioctl(tfd, TUNSETIFF, struct.pack("16sH", tap.encode(), IFF_TAP | IFF_NO_PI))
    with open(f"/sys/class/net/{nic}/address") as f:
        mac = f.read().strip()
    subprocess.run(["ip", "link", "set", nic, "up"], check=True)
    subprocess.run(["ip", "link", "set", tap, "address", mac, "up"], check=True)
    print(f"passgw: {nic} <-> {tap} ({mac}), every frame passes", flush=True)

    counts = {"to_agent": 0, "to_network": 0}
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    while not stop:
        try:
            ready, _, _ = select.select([ps, tfd], [], [], 0.2)
        except InterruptedError:
            continue
        if ps in ready:
            frame, addr = ps.recvfrom(65536)
            if addr[2] != PACKET_OUTGOING:
                os.write(tfd, frame)
                counts["to_agent"] += 1
        if tfd in ready:
            ps.send(os.read(tfd, 65536))
            counts["to_network"] += 1
    if stats:
        with open(stats, "w") as f:
            json.dump(counts, f)
    print(f"passgw: stopped, {json.dumps(counts)}", flush=True)


if __name__ == "__main__":
    main()
