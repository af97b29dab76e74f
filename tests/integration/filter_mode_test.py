#!/usr/bin/env python3
"""Filter mode (`mode: memberlist`, issue 54) end to end, in network namespaces.

usage: filter_mode_test.py GOSSIPGW GOLDEN_TXT

Namespace G holds the gateway: it owns one end of a veth pair through
net_af_packet (the "NIC", port 0) and creates the agent's port with
--vdev=net_tap0 (port 1); once it runs, the test gives the tap interface
10.0.0.1/24 (it must carry the NIC's MAC) and binds the "agent" there: UDP
sockets on 10.0.0.1:7946 (gossip) and 10.0.0.1:9999 (not gossip). Namespace
P, on the other veth end, is the network: 10.0.0.2 (allowed, plaintext
allowed), 10.0.0.4 (allowed, sealed only) and 10.0.0.3 (not allowed).

P sends packets a real memberlist 0.2.2 wrote (tests/memberlist/golden.txt):
sealed pings (AES-256, the keyring's key), a plaintext ping, the 3-entry-Vsn
crash alive, a 255-ping compound, garbage, an alive sealed under a key the
gateway lacks, plaintext from a source not allowed it, and a sealed ping
from a source outside the allow-list. What must pass arrives byte for byte,
nothing else arrives, and the stats JSON counts each verdict exactly. ARP and
ICMP work between P and the tap address through the gateway, the agent's UDP
replies reach P (outbound path), and the keyring file is watched: a broken
rewrite keeps the old keyring (keyring_reload failed), a good one adds the
AES-128 key (the alive then passes), SIGHUP reloads it again.

Needs root (namespaces, veths, tap); exits 77 (skipped) without it. Cleans up
the namespaces on every way out.
"""
import base64
import ctypes
import json
import os
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

GW = sys.argv[1]
GOLDEN = sys.argv[2]
TAG = f"gwml{os.getpid() % 100000}"
NS_G, NS_P = f"{TAG}g", f"{TAG}p"
NIC_IF, PEER_IF, TAP_IF = "gwmlnic", "gwmlpeer", "gwmltap"
NIC_MAC, PEER_MAC = "02:00:00:00:54:01", "02:00:00:00:54:02"
AGENT_IP, ALLOWED, SEALED_ONLY, OUTSIDER = "10.0.0.1", "10.0.0.2", "10.0.0.4", "10.0.0.3"
GOSSIP, OTHER, PROM = 7946, 9999, 19546
K256 = b"0123456789abcdef0123456789abcdef"
K128 = b"0123456789abcdef"

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gwtest import check, finish, wait_for  # noqa: E402


def sh(*cmd, check_rc=True):
    r = subprocess.run(list(cmd), capture_output=True, text=True, timeout=20)
    if check_rc and r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {r.stderr.strip()}")
    return r


libc = ctypes.CDLL("libc.so.6", use_errno=True)
CLONE_NEWNET = 0x40000000
OWN_NS = None


def in_ns(ns, fn):
    """Runs fn() with this thread in namespace `ns`: sockets it makes stay there."""
    fd = os.open(f"/var/run/netns/{ns}", os.O_RDONLY)
    try:
        if libc.setns(fd, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), f"setns {ns}")
        return fn()
    finally:
        libc.setns(OWN_NS, CLONE_NEWNET)
        os.close(fd)


def udp(ns, ip, port):
    def make():
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind((ip, port))
        s.setblocking(False)
        return s
    return in_ns(ns, make)


def drain(sock, timeout=0.0):
    """Every datagram waiting on sock (and, with a timeout, arriving until it passes)."""
    got = []
    deadline = time.monotonic() + timeout
    while True:
        left = max(0.0, deadline - time.monotonic())
        r, _, _ = select.select([sock], [], [], left)
        if not r:
            return got
        got.append(sock.recvfrom(65535))


def scrape():
    def get():
        s = socket.create_connection(("127.0.0.1", PROM), timeout=2)
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        data = b""
        while chunk := s.recv(65536):
            data += chunk
        s.close()
        return data.decode()
    text = in_ns(NS_G, get)
    head, _, body = text.partition("\r\n\r\n")
    if not head.startswith("HTTP/1.1 200"):
        raise ValueError(head)
    values = {}
    for line in body.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            values[name] = float(value)
    return values


def icmp_echo(ns, src, dst, ident, timeout=3.0):
    """One ICMP echo from `src` in `ns` to `dst`; True once its reply came back."""
    def checksum(b):
        b += b"\0" * (len(b) % 2)
        s = sum(struct.unpack(f"!{len(b) // 2}H", b))
        s = (s >> 16) + (s & 0xFFFF)
        s += s >> 16
        return ~s & 0xFFFF
    def make():
        s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
        s.bind((src, 0))
        return s
    sock = in_ns(ns, make)
    try:
        body = struct.pack("!HH", ident, 1) + b"gossipgw filter mode"
        sock.sendto(struct.pack("!BBH", 8, 0, checksum(b"\x08\x00\x00\x00" + body)) + body, (dst, 0))
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            r, _, _ = select.select([sock], [], [], left)
            if not r:
                break
            pkt, (addr, _) = sock.recvfrom(2048)
            icmp = pkt[(pkt[0] & 0x0F) * 4:]
            if addr == dst and icmp[0] == 0 and icmp[4:] == body:
                return True
        return False
    finally:
        sock.close()


def golden():
    packets = {}
    with open(GOLDEN) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 5:
                packets[parts[0]] = bytes.fromhex(parts[4])
    return packets


def keyring_json(*keys):
    return json.dumps([base64.b64encode(k).decode() for k in keys])


def write_file(path, text):
    tmp = path + ".new"
    with open(tmp, "w") as f:
        f.write(text)
    os.chmod(tmp, 0o600)
    os.rename(tmp, path)  # as an agent rewrites its keyring: a new inode


def cleanup(gw_proc, prefix):
    if gw_proc is not None and gw_proc.poll() is None:
        gw_proc.kill()
        gw_proc.wait(timeout=10)
    for ns in (NS_G, NS_P):
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)
    shutil.rmtree(f"/var/run/dpdk/{prefix}", ignore_errors=True)


def main():
    global OWN_NS
    if os.geteuid() != 0 or not shutil.which("ip") or not shutil.which("ethtool") or not os.path.exists("/dev/net/tun"):
        print("skipped: needs root, iproute2, ethtool and /dev/net/tun")
        sys.exit(77)
    OWN_NS = os.open("/proc/self/ns/net", os.O_RDONLY)
    pkts = golden()
    # 255 pings in one compound, each an empty map: refused on the parts'
    # type bytes before any is decoded. (The golden 255-ping compound is
    # 18 KB: IP fragments, which net_af_packet's fanout reassembles in the
    # kernel, so the gateway would not see what a NIC delivers.)
    pkts["ping255"] = b"\x07\xff" + b"\x00\x02" * 255 + b"\x00\x80" * 255
    tmp = tempfile.mkdtemp(prefix="gwml-")
    prefix = f"{TAG}-{os.getpid()}"
    gw = None
    log_path = os.path.join(tmp, "gw.log")
    try:
        # The two namespaces and the veth between them. G's end carries no
        # address and takes no ARP, and strict reverse-path filtering makes
        # G's kernel drop what arrives on it: af_packet copies frames to the
        # gateway but the kernel would see them too (a real NIC belongs to
        # DPDK alone).
        for ns in (NS_G, NS_P):
            sh("ip", "netns", "add", ns)
            sh("ip", "-n", ns, "link", "set", "lo", "up")
            sh("ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1",
               "net.ipv6.conf.default.disable_ipv6=1")
        sh("ip", "link", "add", "name", NIC_IF, "netns", NS_G, "address", NIC_MAC, "type", "veth",
           "peer", "name", PEER_IF, "netns", NS_P, "address", PEER_MAC)
        sh("ip", "-n", NS_G, "link", "set", NIC_IF, "arp", "off", "up")
        sh("ip", "netns", "exec", NS_G, "sysctl", "-qw", "net.ipv4.conf.all.rp_filter=1",
           f"net.ipv4.conf.{NIC_IF}.rp_filter=1")
        sh("ip", "-n", NS_P, "link", "set", PEER_IF, "up")
        # A veth leaves UDP checksums to an "offload" that never happens
        # (CHECKSUM_PARTIAL): af_packet would hand the gateway frames whose
        # checksum the tap's kernel then refuses. A NIC's wire carries
        # complete checksums; so does this veth once P computes them.
        sh("ip", "netns", "exec", NS_P, "ethtool", "-K", PEER_IF, "tx", "off")
        for ip in (ALLOWED, OUTSIDER, SEALED_ONLY):
            sh("ip", "-n", NS_P, "addr", "add", f"{ip}/24", "dev", PEER_IF)

        keyring = os.path.join(tmp, "keyring.json")
        write_file(keyring, keyring_json(K256))
        cfg = os.path.join(tmp, "filter.yaml")
        with open(cfg, "w") as f:
            f.write(f"""mode: memberlist
lcores:
  control: 0
  workers: [1]
dataplane:
  port_id: 0
  mbufs: 2048
  idle_backoff_us: 100
metrics:
  telemetry: false
  interval_ms: 50
  prometheus_address: 127.0.0.1
  prometheus_port: {PROM}
memberlist:
  ports: [{GOSSIP}]
  agent_port_id: 1
  allow_cidrs: ["{ALLOWED}/32", "{SEALED_ONLY}/32"]
  allow_plaintext_cidrs: ["{ALLOWED}/32"]
  keyring_file: keyring.json
""")
        stats_path = os.path.join(tmp, "stats.json")
        eal = [GW, "-l", "0,1", "--no-huge", "-m", "256", "--no-pci", f"--file-prefix={prefix}",
               "--log-level=lib.eal:warning", "--log-level=pmd.net.af_packet:warning",
               f"--vdev=net_af_packet0,iface={NIC_IF}"]

        # Without the agent's port: a start-up error naming the field, exit 2.
        r = subprocess.run(["ip", "netns", "exec", NS_G, *eal, "--", "--config", cfg], capture_output=True,
                           text=True, timeout=30)
        check("no agent port: exit 2 naming memberlist.agent_port_id",
              r.returncode == 2 and "memberlist.agent_port_id: port 1 does not exist" in r.stderr,
              f"{r.returncode}: {r.stderr[-1000:]}")
        log = open(log_path, "w")
        gw = subprocess.Popen(
            ["ip", "netns", "exec", NS_G, *eal, f"--vdev=net_tap0,iface={TAP_IF}", "--",
             "--config", cfg, "--stats-json", stats_path],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)

        def started():
            if gw.poll() is not None:
                raise RuntimeError(f"gossipgw exited {gw.returncode}: {open(log_path).read()[-2000:]}")
            return "memberlist filter:" in open(log_path).read()
        wait_for("the gateway's start-up line", started, timeout=20)
        line = [l for l in open(log_path).read().splitlines() if "memberlist filter:" in l][0]
        check("start-up line names both ports, the MAC and the keys",
              "NIC port 0 (net_af_packet)" in line and "agent port 1 (net_tap)" in line and NIC_MAC in line and
              "1 key(s)" in line and "allow-list 2 prefix(es)" in line, line)

        # The operator gives the tap interface the host's address.
        sh("ip", "-n", NS_G, "addr", "add", f"{AGENT_IP}/24", "dev", TAP_IF)
        sh("ip", "-n", NS_G, "link", "set", TAP_IF, "up")
        link = sh("ip", "-n", NS_G, "-o", "link", "show", TAP_IF).stdout
        check("the tap interface carries the NIC's MAC", f"link/ether {NIC_MAC}" in link, link)

        agent = udp(NS_G, AGENT_IP, GOSSIP)
        agent_other = udp(NS_G, AGENT_IP, OTHER)
        p_allowed = udp(NS_P, ALLOWED, GOSSIP)
        p_sealed = udp(NS_P, SEALED_ONLY, GOSSIP)
        p_outsider = udp(NS_P, OUTSIDER, GOSSIP)

        # Not gossip, both ways: ARP and ICMP between P and the agent's host.
        check("ICMP echo P -> agent host through the gateway", icmp_echo(NS_P, ALLOWED, AGENT_IP, 1))
        neigh = sh("ip", "-n", NS_P, "neigh", "show", AGENT_IP).stdout
        check("ARP from P resolves the agent's address to the NIC's MAC", NIC_MAC in neigh, neigh)
        check("ICMP echo agent host -> P through the gateway", icmp_echo(NS_G, AGENT_IP, ALLOWED, 2))

        def marker(tag):
            """A non-gossip datagram after the cases: one queue, in order, so
            once it arrived everything sent before it was decided."""
            p_allowed.sendto(tag, (AGENT_IP, OTHER))
            got = wait_for(f"marker {tag!r}", lambda: drain(agent_other), timeout=5)
            return check(f"marker {tag.decode()} (UDP to a non-gossip port) passes unchanged",
                         [d for d, _ in got] == [tag], got)

        # Phase 1: keyring [AES-256].
        must_pass = [
            (p_allowed, "ping_crc_aes256"),
            (p_allowed, "ping_compound_compressed_aes256"),
            (p_allowed, "plain_ping_compound_compress_false"),  # plaintext, allowed for this source
        ]
        must_not = [
            (p_allowed, "crash_alive_vsn3_plain"),
            (p_allowed, "ping255"),
            (p_allowed, None),  # garbage
            (p_sealed, "alive_aes128"),  # a key the gateway lacks (yet)
            (p_sealed, "plain_ping_compound_compress_true"),  # plaintext, not allowed for this source
            (p_outsider, "ping_crc_aes256"),  # outside the allow-list
        ]
        garbage = b"GARBAGE-" * 20
        for sock, name in must_pass[:2] + must_not[:3] + must_pass[2:] + must_not[3:]:
            sock.sendto(pkts[name] if name else garbage, (AGENT_IP, GOSSIP))
        marker(b"m1")
        got = drain(agent)
        want = [pkts[n] for _, n in must_pass]
        check("phase 1: exactly the three good packets reached the agent, byte for byte",
              [d for d, _ in got] == want, [(len(d), a) for d, a in got])
        check("phase 1: from the sender's address and port", all(a == (ALLOWED, GOSSIP) for _, a in got), got)

        # Outbound: the agent answers each one; P gets the replies unchanged.
        replies = [b"agent-reply-%d-" % i + b"x" * (40 * i) for i in range(len(got))]
        for rep in replies:
            agent.sendto(rep, (ALLOWED, GOSSIP))
        back = []
        wait_for("agent replies at P", lambda: back.extend(drain(p_allowed)) or len(back) >= len(replies), timeout=5)
        check("the agent's UDP replies reach P unchanged (outbound path)",
              [d for d, _ in back] == replies and all(a == (AGENT_IP, GOSSIP) for _, a in back), back)

        # Phase 2: a broken keyring file keeps the keyring in use.
        with open(keyring, "w") as f:
            f.write('["not base64!"]')
        wait_for("keyring_reload failed", lambda: scrape().get(
            'gossipgw_ml_keyring_reload_total{outcome="failed"}') == 1)
        p_sealed.sendto(pkts["alive_aes128"], (AGENT_IP, GOSSIP))
        marker(b"m2")
        check("broken keyring file: the AES-128 alive is still refused", drain(agent) == [])

        # A good rewrite adds the AES-128 key (as `serf keys install` does).
        write_file(keyring, keyring_json(K256, K128))
        wait_for("keyring_reload loaded", lambda: scrape().get(
            'gossipgw_ml_keyring_reload_total{outcome="loaded"}') == 1)
        check("the keyring now has 2 keys", scrape().get("gossipgw_ml_keyring_keys") == 2)
        p_sealed.sendto(pkts["alive_aes128"], (AGENT_IP, GOSSIP))
        got = wait_for("the AES-128 alive at the agent", lambda: drain(agent), timeout=5)
        check("rotated keyring: the AES-128 alive reaches the agent byte for byte",
              [d for d, _ in got] == [pkts["alive_aes128"]], got)

        # SIGHUP reads the file again.
        gw.send_signal(signal.SIGHUP)
        try:
            wait_for("SIGHUP reload", lambda: scrape().get('gossipgw_ml_keyring_reload_total{outcome="loaded"}') == 2)
            reloaded = True
        except TimeoutError:
            reloaded = False
        check("SIGHUP reloads the keyring file (keyring_reload loaded 2)", reloaded)

        gw.send_signal(signal.SIGTERM)
        rc = gw.wait(timeout=15)
        check("gossipgw exits 0 on SIGTERM", rc == 0, open(log_path).read()[-2000:])
        with open(stats_path) as f:
            stats = json.load(f)
        fr, ml = stats["frames"], stats["ml"]
        check("stats: mode memberlist", stats["mode"] == "memberlist", stats.get("mode"))
        check("stats: to_agent = 4 gossip packets", fr["to_agent"] == 4, fr)
        check("stats: drop_inspected = 6", fr["drop_inspected"] == 6, fr)
        check("stats: drop_not_allowed = 1", fr["drop_not_allowed"] == 1, fr)
        check("stats: nothing rate limited, no bad frames",
              fr["drop_rate_limited"] == 0 and fr["drop_frame"] == 0 and fr["drop_egress_budget"] == 0, fr)
        check("stats: pass_in counts ARP, ICMP and the markers", fr["pass_in"] >= 2 + 2 + 1, fr)
        check("stats: to_network counts the replies, ICMP and ARP", fr["to_network"] >= len(replies) + 3, fr)
        expect_ml = {"ml_accepted": 3, "ml_accepted_plaintext": 1, "ml_drop_bad_vsn": 1, "ml_drop_probe_count": 1,
                     "ml_drop_bad_auth": 2, "ml_drop_plaintext": 1}
        check("stats: inspector verdicts", all(ml[k] == v for k, v in expect_ml.items()), ml)
        check("stats: the garbage has one inspector verdict of its own",
              sum(ml.values()) == 10 and sum(ml[k] for k in expect_ml) == 9, ml)
        check("stats: opened by key 0 (AES-256) twice, key 1 (AES-128) once",
              stats["opened_by_key"][:2] == [2, 1], stats["opened_by_key"])
        frame = 14 + 20 + 8  # Ethernet, IPv4, UDP: bytes count whole frames
        check("stats: bytes to the agent (whole frames)",
              stats["bytes"]["to_agent"] == sum(len(pkts[n]) + frame for _, n in must_pass) +
              len(pkts["alive_aes128"]) + frame, stats["bytes"])
        check("stats: bytes to the network count the agent's gossip replies",
              stats["bytes"]["to_network"] == sum(len(r) + frame for r in replies), stats["bytes"])
        check("stats: keyring reloads (1 file change, 1 SIGHUP; 1 broken file)",
              stats["keyring"]["reload"] == {"loaded": 2, "failed": 1} and stats["keyring"]["keys"] == 2,
              stats["keyring"])
        check("stats: no tx_full, no multi-segment frames",
              stats["tx_full"] == {"to_agent": 0, "to_network": 0} and stats["multi_segment"] == {"in": 0, "out": 0},
              stats)
        check("stats: per-worker frames add up to the totals",
              all(sum(w["frames"][k] for w in stats["workers"]) == v for k, v in fr.items()), stats["workers"])
    except Exception:
        if gw is not None and gw.poll() is None:
            gw.send_signal(signal.SIGTERM)
            gw.wait(timeout=15)
        if os.path.exists(log_path):
            print("gossipgw's log:\n" + open(log_path).read()[-3000:])
        if os.path.exists(os.path.join(tmp, "stats.json")):
            print("stats: " + open(os.path.join(tmp, "stats.json")).read())
        raise
    finally:
        cleanup(gw, prefix)
        shutil.rmtree(tmp, ignore_errors=True)
    left = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    check("namespaces removed", NS_G not in left and NS_P not in left, left)
    finish()


if __name__ == "__main__":
    main()
