#!/usr/bin/env python3
"""DPDK telemetry exports every series the Prometheus text has (issue 18 fault 5).

usage: telemetry_test.py GOSSIPGW GOSSIPGEN GOSSIPCTL

One gateway (membership, classifier, control socket, Prometheus, telemetry)
reads a gossipgen mix forever (net_pcap infinite_rx), so labelled series of
every kind are non-zero. From one counter publication, every page of
/gossipgw/metrics is read through dpdk-telemetry.py and compared, series by
series and value by value, with the Prometheus text: the same names (labels
as /name/value path segments), the same values, nothing refused. The old
code lost every labelled series (the library refused names with '{', '=', ',').
"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import urllib.request

import gwtest
from gwtest import check, wait_for

GW, GEN, CTL = sys.argv[1:4]
tmp = tempfile.mkdtemp(prefix="gwtel-")
proc = None
SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def telemetry(prefix, commands):
    r = subprocess.run([TEL, "-f", prefix], input="".join(c + "\n" for c in commands), capture_output=True,
                       text=True, timeout=30)
    out = [json.loads(ln) for ln in r.stdout.splitlines() if ln.startswith("{")]
    if len(out) != len(commands):
        raise RuntimeError(f"dpdk-telemetry.py: {len(out)} replies for {len(commands)} commands: {r.stderr[-300:]}")
    return out


def prometheus_series(text):
    series = {}
    for ln in text.splitlines():
        if ln.startswith("#") or not ln:
            continue
        m = SAMPLE.match(ln)
        name = m.group(1)
        for k, v in LABEL.findall(m.group(2) or ""):
            name += f"/{k}/{v}"
        # docs/metrics.md: bytes telemetry refuses in names become '_' (only
        # gossipgw_build_info's version and commit have any).
        series[re.sub(r"[^A-Za-z0-9_/]", "_", name)] = float(m.group(3))
    return series


TEL = shutil.which("dpdk-telemetry.py")
try:
    if TEL is None:
        check("dpdk-telemetry.py installed (dpdk package)", False)
        gwtest.finish()
    subprocess.run([CTL, "keygen", "--out", os.path.join(tmp, "k.key")], check=True, capture_output=True)
    prom_port = free_port()
    prefix = f"gwtel-{os.getpid()}"
    cfg = os.path.join(tmp, "gw.yaml")
    with open(cfg, "w") as f:
        f.write(f"""cluster:
  name: tel
  suite: chacha20poly1305
  keys:
    - file: k.key
node:
  name: gw
  address: 10.0.0.1
  port: 7946
dataplane:
  idle_backoff_us: 200
classifier:
  enabled: true
  rules:
    - {{name: hello, pattern: "hello"}}
control:
  socket: {os.path.join(tmp, "gw.sock")}
metrics:
  interval_ms: 3000
  prometheus_port: {prom_port}
""")
    pcap = os.path.join(tmp, "in.pcap")
    subprocess.run([GEN, "--config", cfg, "--seed", "5", "--mix",
                    "valid=40,foreign=10,unkeyed_random=10,unknown_key=10,forged_tag=10,replayed=10,malformed=10",
                    "--out", pcap, "--truth", os.path.join(tmp, "truth.json")], check=True, capture_output=True)
    err = open(os.path.join(tmp, "gw.err"), "w")
    proc = subprocess.Popen([GW, "-l", "0,1", "--no-huge", "-m", "256", "--no-pci", f"--file-prefix={prefix}",
                             "--log-level=lib.eal:warning", f"--vdev=net_pcap0,rx_pcap={pcap},infinite_rx=1",
                             "--", "--config", cfg], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
    url = f"http://127.0.0.1:{prom_port}/metrics"
    wait_for("Prometheus serves a publication with traffic in it",
             lambda: "gossipgw_verdict_packets_total{" in urllib.request.urlopen(url, timeout=5).read().decode())

    # One publication seen by both: info before, the Prometheus text, every
    # page and info after must all name the same publication (3 s apart).
    compared = None
    for attempt in range(10):
        before = telemetry(prefix, ["/gossipgw/info"])[0]["/gossipgw/info"]["publications"]
        prom = prometheus_series(urllib.request.urlopen(url, timeout=5).read().decode())
        pages = telemetry(prefix, [f"/gossipgw/metrics,{p}" for p in range(8)] + ["/gossipgw/info"])
        info = pages.pop()["/gossipgw/info"]
        pages = [p["/gossipgw/metrics"] for p in pages]
        if info["publications"] != before or any(p["_publication"] != before for p in pages):
            continue
        tel = {}
        for p in pages[: pages[0]["_pages"]]:
            for k, v in p.items():
                if k not in ("_pages", "_publication"):
                    tel[k] = float(v)
        compared = (prom, tel, info, pages[0]["_pages"])
        break
    check("one publication read whole by both exporters", compared is not None)
    if compared:
        prom, tel, info, npages = compared
        labelled = [n for n in prom if "/" in n]
        print(f"     {len(prom)} series ({len(labelled)} labelled) on {npages} telemetry page(s)")
        check("page count fits (8 pages read)", npages <= 8, str(npages))
        check("there are labelled series", len(labelled) > 50, str(len(labelled)))
        check("telemetry has every Prometheus series", sorted(set(prom) - set(tel)) == [],
              str(sorted(set(prom) - set(tel))[:8]))
        check("telemetry has nothing Prometheus lacks", sorted(set(tel) - set(prom)) == [],
              str(sorted(set(tel) - set(prom))[:8]))
        diff = {n: (prom[n], tel[n]) for n in prom if n in tel and prom[n] != tel[n]}
        check("every value equal", not diff, str(list(diff.items())[:5]))
        check("nothing refused by the telemetry library", info["series_refused"] == 0, str(info))
        st = gwtest.ctl_json(CTL, "stats", sock=os.path.join(tmp, "gw.sock"))
        check("stats JSON has telemetry.refused == 0", st.get("telemetry") == {"refused": 0}, str(st.get("telemetry")))
finally:
    if proc is not None and proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    if gwtest.failures and os.path.exists(os.path.join(tmp, "gw.err")):
        print("---- gateway stderr ----\n" + open(os.path.join(tmp, "gw.err")).read()[-2000:])
    shutil.rmtree(tmp, ignore_errors=True)

gwtest.finish()
