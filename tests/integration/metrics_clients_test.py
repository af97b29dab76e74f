#!/usr/bin/env python3
"""The Prometheus endpoint of a running gateway under slow and idle clients (issue 51 item 9).

usage: metrics_clients_test.py GOSSIPGW GOSSIPCTL

One gateway (an empty capture to receive from) serves Prometheus on loopback.
First 16 slow clients (a request begun, one byte a second after), then 3,000
idle connections (connected, never a byte) are held open while a scraper
asks for /metrics five times: every scrape must be answered, each within a
second. Before (cpp-httplib: a pool thread per connection for its read
timeout, the rest queued without bound) scrapes timed out with the slow
clients and every scrape failed with the idle ones. Loopback only; every
socket is closed at the end.
"""
import os
import resource
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
tmp = tempfile.mkdtemp(prefix="gwmetrics-")
proc = None
held = []


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scrape(port, timeout=1.0):
    """Seconds one GET /metrics took, or None if it failed or took longer than `timeout`."""
    t0 = time.monotonic()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.settimeout(max(0.01, timeout - (time.monotonic() - t0)))
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: gw\r\nConnection: close\r\n\r\n")
            data = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
                if time.monotonic() - t0 > timeout:
                    return None
        if not data.startswith(b"HTTP/1.1 200") or b"gossipgw_" not in data:
            return None
        return time.monotonic() - t0
    except OSError:
        return None


try:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 8192)), hard))
    subprocess.run([CTL, "keygen", "--out", os.path.join(tmp, "k.key")], check=True, capture_output=True)
    port = free_port()
    cfg = os.path.join(tmp, "gw.yaml")
    with open(cfg, "w") as f:
        f.write(f"""cluster:
  name: metrics
  suite: chacha20poly1305
  keys:
    - file: k.key
node:
  name: gw
  address: 10.0.0.1
dataplane:
  idle_backoff_us: 1000
membership:
  enabled: false
control:
  socket: {os.path.join(tmp, "gw.sock")}
metrics:
  interval_ms: 500
  prometheus_port: {port}
""")
    # An empty capture to receive from: the workers idle.
    empty = os.path.join(tmp, "empty.pcap")
    with open(empty, "wb") as f:
        f.write(bytes.fromhex("d4c3b2a1020004000000000000000000ffff000001000000"))
    err = open(os.path.join(tmp, "gw.err"), "w")
    proc = subprocess.Popen([GW, "-l", "0,1", "--no-huge", "-m", "256", "--no-pci",
                             f"--file-prefix=gwmetrics-{os.getpid()}", "--log-level=lib.eal:warning",
                             f"--vdev=net_pcap0,rx_pcap={empty},tx_pcap={os.path.join(tmp, 'out.pcap')}", "--", "--config", cfg],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
    wait_for("Prometheus serves a publication", lambda: scrape(port, 5.0) is not None)

    # 16 slow clients: a request begun, one more byte a second.
    slow = []
    for _ in range(16):
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(b"GET /metr")
        slow.append(s)
    held += slow
    times = [scrape(port) for _ in range(5)]
    for s in slow:
        try:
            s.sendall(b"i")
        except OSError:
            pass
    print(f"     with 16 slow clients: {times}")
    check("16 slow clients: every scrape answered within 1 s", all(t is not None for t in times), str(times))

    # 3,000 idle connections, never a byte.
    idle_ok = 0
    for _ in range(3000):
        try:
            held.append(socket.create_connection(("127.0.0.1", port), timeout=5))
            idle_ok += 1
        except OSError:
            break
    times = [scrape(port) for _ in range(5)]
    print(f"     with {idle_ok} idle connections and the slow clients: {times}")
    check("3,000 idle connections made", idle_ok == 3000, str(idle_ok))
    check("idle connections: every scrape answered within 1 s", all(t is not None for t in times), str(times))
    check("gateway still running", proc.poll() is None)
finally:
    for s in held:
        try:
            s.close()
        except OSError:
            pass
    if proc is not None and proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    if gwtest.failures and os.path.exists(os.path.join(tmp, "gw.err")):
        print("---- gateway stderr ----\n" + open(os.path.join(tmp, "gw.err")).read()[-2000:])
    shutil.rmtree(tmp, ignore_errors=True)

gwtest.finish()
