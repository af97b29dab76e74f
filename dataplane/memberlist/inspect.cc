#include "dataplane/memberlist/inspect.h"

#include <cstring>
#include <span>

#include "crypto/aes_gcm.h"
#include "dataplane/memberlist/msgpack_reader.h"

namespace gw::dp::ml {
namespace {

constexpr std::size_t kNonce = 12;
constexpr std::size_t kTag = 16;
// memberlist's encryptedLength(vsn, 0): version, nonce, (a full padding
// block for version 0), tag.
constexpr std::size_t kMinSealed0 = 1 + kNonce + 16 + kTag;
constexpr std::size_t kMinSealed1 = 1 + kNonce + kTag;
// How deep an unknown field's value may nest before we call it malformed
// (memberlist's messages have no nested containers at all).
constexpr int kSkipDepth = 4;

bool is_probe(std::uint8_t t) {
  return t == static_cast<std::uint8_t>(MsgType::kPing) || t == static_cast<std::uint8_t>(MsgType::kIndirectPing) ||
         t == static_cast<std::uint8_t>(MsgType::kAck) || t == static_cast<std::uint8_t>(MsgType::kNack);
}

// The fields of memberlist's message structs (net.go) that the filter reads.
enum class Kind : std::uint8_t { kU32, kU16, kU8, kBool, kName, kBytes, kAddr, kMeta, kVsn };
struct Field {
  std::string_view name;
  Kind kind;
};
constexpr std::size_t kMaxFields = 8;

constexpr Field kPingFields[] = {{"SeqNo", Kind::kU32},
                                 {"Node", Kind::kName},
                                 {"SourceAddr", Kind::kAddr},
                                 {"SourcePort", Kind::kU16},
                                 {"SourceNode", Kind::kName}};
constexpr Field kIndirectFields[] = {
    {"SeqNo", Kind::kU32}, {"Target", Kind::kAddr},     {"Port", Kind::kU16},       {"Node", Kind::kName},
    {"Nack", Kind::kBool}, {"SourceAddr", Kind::kAddr}, {"SourcePort", Kind::kU16}, {"SourceNode", Kind::kName}};
constexpr Field kAckFields[] = {{"SeqNo", Kind::kU32}, {"Payload", Kind::kBytes}};
constexpr Field kNackFields[] = {{"SeqNo", Kind::kU32}};
constexpr Field kSuspectFields[] = {{"Incarnation", Kind::kU32}, {"Node", Kind::kName}, {"From", Kind::kName}};
constexpr Field kAliveFields[] = {{"Incarnation", Kind::kU32}, {"Node", Kind::kName}, {"Addr", Kind::kAddr},
                                  {"Port", Kind::kU16},        {"Meta", Kind::kMeta}, {"Vsn", Kind::kVsn}};
constexpr Field kCompressFields[] = {{"Algo", Kind::kU8}, {"Buf", Kind::kBytes}};

struct Parsed {
  std::uint64_t u[kMaxFields] = {};
  std::span<const std::uint8_t> b[kMaxFields] = {};
  bool present[kMaxFields] = {};
  std::size_t vsn_len = 0;
};

// Reads one msgpack map into `out` by `fields`. Refused: anything but a map
// (Go's codec would also take a struct as an array: no memberlist sends
// one), a known key twice (Go keeps the last: the filter would check one and
// the agent use the other), a value of the wrong type or range, bytes after
// the map.
Verdict parse_struct(std::span<const std::uint8_t> in, std::span<const Field> fields, const Config& cfg,
                     Parsed* out) noexcept {
  MsgpackReader r(in.data(), in.size());
  std::uint32_t n = 0;
  if (!r.read_map(&n) || n > r.remaining()) return Verdict::kMalformed;
  std::size_t hint = 0;
  for (std::uint32_t i = 0; i < n; ++i) {
    std::span<const std::uint8_t> key;
    if (!r.read_bytes(&key)) return Verdict::kMalformed;
    // Go's codec writes a struct's fields in declaration order: try the
    // field after the last one first, then the others.
    std::size_t f = fields.size();
    for (std::size_t k = 0; k < fields.size(); ++k) {
      const std::size_t j = hint + k < fields.size() ? hint + k : hint + k - fields.size();
      if (key_is(key, fields[j].name)) {
        f = j;
        break;
      }
    }
    hint = f + 1 < fields.size() ? f + 1 : 0;
    if (f == fields.size()) {
      // A field this memberlist does not know: Go's codec skips it too.
      if (!r.skip(kSkipDepth)) return Verdict::kMalformed;
      continue;
    }
    if (out->present[f]) return Verdict::kMalformed;
    out->present[f] = true;
    bool ok = true;
    switch (fields[f].kind) {
      case Kind::kU32:
        ok = r.read_uint(UINT32_MAX, &out->u[f]);
        break;
      case Kind::kU16:
        ok = r.read_uint(UINT16_MAX, &out->u[f]);
        break;
      case Kind::kU8:
        ok = r.read_uint(UINT8_MAX, &out->u[f]);
        break;
      case Kind::kBool: {
        bool v = false;
        ok = r.read_bool(&v);
        out->u[f] = v ? 1 : 0;
        break;
      }
      case Kind::kName:
        ok = r.read_bytes(&out->b[f]);
        if (ok && out->b[f].size() > cfg.max_name) return Verdict::kNameTooLong;
        break;
      case Kind::kBytes:
        ok = r.read_bytes(&out->b[f]);
        break;
      case Kind::kAddr:
        // An IP: none, IPv4 or IPv6 (net.IP of another length is no address).
        ok = r.read_bytes(&out->b[f]);
        if (ok && out->b[f].size() != 0 && out->b[f].size() != 4 && out->b[f].size() != 16) {
          return Verdict::kMalformed;
        }
        break;
      case Kind::kMeta:
        ok = r.read_bytes(&out->b[f]);
        if (ok && out->b[f].size() > cfg.max_meta) return Verdict::kMalformed;
        break;
      case Kind::kVsn: {
        // []uint8: Go writes it as a byte string and reads a byte string or
        // an array of small integers alike.
        if ((r.peek() >= 0x90 && r.peek() <= 0x9f) || r.peek() == 0xdc || r.peek() == 0xdd) {
          std::uint32_t m = 0;
          ok = r.read_array(&m) && m <= r.remaining();
          for (std::uint32_t k = 0; ok && k < m; ++k) {
            std::uint64_t v = 0;
            ok = r.read_uint(UINT8_MAX, &v);
          }
          out->vsn_len = m;
        } else {
          ok = r.read_bytes(&out->b[f]);
          out->vsn_len = out->b[f].size();
        }
        break;
      }
    }
    if (!ok) return Verdict::kMalformed;
  }
  if (!r.ok() || !r.at_end()) return Verdict::kMalformed;
  return Verdict::kAccepted;
}

base::Address make_addr(std::span<const std::uint8_t> ip, std::uint16_t port) noexcept {
  base::Address a;
  a.ip.assign(ip.begin(), ip.end());
  a.port = port;
  return fold_v4_mapped(a);
}

bool known(const Config& cfg, const base::Address& a) noexcept {
  return cfg.is_known_member != nullptr && cfg.is_known_member(cfg.member_ctx, a);
}

// Where the agent sends its reply to a ping or indirect ping: SourceAddr and
// SourcePort when both are set (net.go handlePing), else the sender. Only
// the sender itself or a known member may be named: anything else makes the
// agent a reflector.
Verdict check_reply(const Parsed& p, std::size_t addr_field, std::size_t port_field, const base::Address& source,
                    const Config& cfg) noexcept {
  const auto& ip = p.b[addr_field];
  const auto port = static_cast<std::uint16_t>(p.u[port_field]);
  if (ip.empty() || port == 0) return Verdict::kAccepted;
  const base::Address reply = make_addr(ip, port);
  if (reply == source || known(cfg, reply)) return Verdict::kAccepted;
  return Verdict::kProbeSource;
}

struct Walk {
  const base::Address& source;
  const Config& cfg;
  Scratch& scratch;
  Result& res;
  unsigned probes = 0;
};

// One message (no wrapper): type byte and msgpack body.
Verdict message(std::span<const std::uint8_t> m, Walk& w) noexcept {
  if (m.empty()) return Verdict::kMalformed;  // memberlist 0.2.2 reads buf[0] of it and panics
  const std::uint8_t t = m[0];
  const std::span<const std::uint8_t> body = m.subspan(1);
  const std::uint16_t index = w.res.messages;
  if (w.res.messages != UINT16_MAX) ++w.res.messages;
  if (t < 16) w.res.types = static_cast<std::uint16_t>(w.res.types | (1u << t));
  if (is_probe(t)) {
    // One probe per packet, first: memberlist's sendMsg puts the ping or ack
    // first and piggybacks broadcasts after it. More is amplification.
    if (++w.probes > w.cfg.max_probe_messages || index != 0) return Verdict::kProbeCount;
  }
  Parsed p;
  Verdict v = Verdict::kAccepted;
  switch (static_cast<MsgType>(t)) {
    case MsgType::kPing:
      if ((v = parse_struct(body, kPingFields, w.cfg, &p)) != Verdict::kAccepted) return v;
      return check_reply(p, 2, 3, w.source, w.cfg);
    case MsgType::kIndirectPing: {
      if ((v = parse_struct(body, kIndirectFields, w.cfg, &p)) != Verdict::kAccepted) return v;
      // The agent pings Target:Port for the requester: it must be an address.
      if (p.b[1].empty()) return Verdict::kMalformed;
      if ((v = check_reply(p, 5, 6, w.source, w.cfg)) != Verdict::kAccepted) return v;
      if (w.cfg.is_known_member != nullptr) {
        const auto port = static_cast<std::uint16_t>(p.u[2] == 0 ? w.cfg.agent_port : p.u[2]);
        if (!known(w.cfg, make_addr(p.b[1], port))) return Verdict::kProbeTarget;
      }
      return Verdict::kAccepted;
    }
    case MsgType::kAck:
      return parse_struct(body, kAckFields, w.cfg, &p);
    case MsgType::kNack:
      return parse_struct(body, kNackFields, w.cfg, &p);
    case MsgType::kSuspect:
    case MsgType::kDead:
      return parse_struct(body, kSuspectFields, w.cfg, &p);
    case MsgType::kAlive:
      if ((v = parse_struct(body, kAliveFields, w.cfg, &p)) != Verdict::kAccepted) return v;
      // memberlist 0.2.2 to 0.6 index Vsn[0..5] whenever it is not empty
      // (state.go aliveNode): 1 to 5 entries crash the agent; every sender
      // writes 6.
      if (p.vsn_len != 0 && p.vsn_len != 6) return Verdict::kBadVsn;
      // An alive names the member's address: no address, no member.
      if (p.b[2].empty()) return Verdict::kMalformed;
      return Verdict::kAccepted;
    case MsgType::kUser:
      // Serf's (or another delegate's) own bytes: not memberlist's to read.
      return Verdict::kAccepted;
    case MsgType::kCompound:
    case MsgType::kCompress:
    case MsgType::kHasCrc:
      return Verdict::kNesting;
    default:
      // Push-pull and err travel over TCP, encrypt is never a packet type:
      // memberlist drops them over UDP, and so does the filter.
      return Verdict::kUnexpectedType;
  }
}

Verdict compound(std::span<const std::uint8_t> c, Walk& w) noexcept {
  // c starts after the type byte.
  if (c.empty()) return Verdict::kBadCompound;
  const std::size_t n = c[0];
  if (n == 0) return Verdict::kBadCompound;
  if (c.size() < 1 + 2 * n) return Verdict::kBadCompound;
  const std::uint8_t* lens = c.data() + 1;
  std::size_t total = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t l = (static_cast<std::size_t>(lens[2 * i]) << 8) | lens[2 * i + 1];
    // An empty part crashes memberlist 0.2.2 (handleCommand reads buf[0]).
    if (l == 0) return Verdict::kBadCompound;
    total += l;
  }
  // memberlist handles the parts before a truncation and ignores bytes after
  // the last part; no sender writes either.
  if (total != c.size() - 1 - 2 * n) return Verdict::kBadCompound;
  // The probe rule on the parts' type bytes before any part is read: a
  // 255-ping compound costs 255 byte reads, not 255 msgpack decodes.
  std::size_t off = 1 + 2 * n;
  unsigned probes = w.probes;
  for (std::size_t i = 0, at = off; i < n; ++i) {
    const std::size_t l = (static_cast<std::size_t>(lens[2 * i]) << 8) | lens[2 * i + 1];
    if (is_probe(c[at]) && (++probes > w.cfg.max_probe_messages || i != 0 || w.res.messages != 0)) {
      return Verdict::kProbeCount;
    }
    at += l;
  }
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t l = (static_cast<std::size_t>(lens[2 * i]) << 8) | lens[2 * i + 1];
    const Verdict v = message(c.subspan(off, l), w);
    if (v != Verdict::kAccepted) return v;
    off += l;
  }
  return Verdict::kAccepted;
}

// A command: what follows the CRC. memberlist's senders write
// [compress [compound parts]], [compound parts] or one message; the filter
// takes exactly those shapes (a compress inside a compound, a compound in a
// compound, two compress layers: memberlist would read them, nobody sends them).
Verdict command(std::span<const std::uint8_t> c, bool inside_compress, Walk& w) noexcept {
  if (c.empty()) return Verdict::kMalformed;
  const auto t = static_cast<MsgType>(c[0]);
  if (t == MsgType::kCompound) return compound(c.subspan(1), w);
  if (t == MsgType::kCompress) {
    if (inside_compress) return Verdict::kNesting;
    w.res.compressed = true;
    Parsed p;
    const Verdict v = parse_struct(c.subspan(1), kCompressFields, w.cfg, &p);
    if (v != Verdict::kAccepted) return v;
    if (p.u[0] != 0) return Verdict::kBadCompression;  // only LZW exists
    std::size_t out_len = 0;
    const std::size_t cap = std::min(w.cfg.max_inflated, w.scratch.inflated_cap());
    switch (lzw_decode(p.b[1].data(), p.b[1].size(), w.scratch.inflated(), cap, &out_len, w.scratch.lzw())) {
      case LzwResult::kOk:
        break;
      case LzwResult::kTooLarge:
        return Verdict::kInflateLimit;
      case LzwResult::kCorrupt:
        return Verdict::kBadCompression;
    }
    return command({w.scratch.inflated(), out_len}, true, w);
  }
  if (t == MsgType::kHasCrc) return Verdict::kNesting;
  return message(c, w);
}

// The plaintext after the optional decryption.
Verdict plaintext(std::span<const std::uint8_t> p, Walk& w) noexcept {
  if (p.empty()) return Verdict::kTooShort;
  if (p[0] == static_cast<std::uint8_t>(MsgType::kHasCrc)) {
    // memberlist strips the CRC only from 5 bytes on; a shorter one would
    // reach its handler as an unknown type.
    if (p.size() < 5) return Verdict::kBadCrc;
    const std::uint32_t want = (static_cast<std::uint32_t>(p[1]) << 24) | (static_cast<std::uint32_t>(p[2]) << 16) |
                               (static_cast<std::uint32_t>(p[3]) << 8) | p[4];
    if (crypto::crc32_ieee(p.data() + 5, p.size() - 5) != want) return Verdict::kBadCrc;
    w.res.crc = true;
    p = p.subspan(5);
  }
  return command(p, false, w);
}

}  // namespace

base::Address fold_v4_mapped(const base::Address& a) noexcept {
  static constexpr std::uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (a.ip.size() != 16 || std::memcmp(a.ip.data(), kMapped, sizeof kMapped) != 0) return a;
  base::Address v4;
  v4.ip.assign(a.ip.begin() + 12, a.ip.end());
  v4.port = a.port;
  return v4;
}

namespace {

// Length and label header (memberlist label.go: 0xF4, a length of 1 to 255,
// the label): kAccepted with the label and what follows it, or the verdict.
Verdict read_label(const std::uint8_t* pkt, std::size_t len, const Config& cfg, std::string_view* label,
                   std::span<const std::uint8_t>* body) noexcept {
  if (len == 0) return Verdict::kTooShort;
  if (len > cfg.max_packet) return Verdict::kTooLong;
  *body = {pkt, len};
  *label = {};
  if (pkt[0] == kLabelByte) {
    if (len < 2 || pkt[1] == 0 || len < 2u + pkt[1]) return Verdict::kBadLabel;
    *label = {reinterpret_cast<const char*>(pkt + 2), pkt[1]};
    *body = body->subspan(2u + pkt[1]);
  }
  return *label == cfg.label ? Verdict::kAccepted : Verdict::kBadLabel;
}

}  // namespace

Verdict envelope(const std::uint8_t* pkt, std::size_t len, const Config& cfg) noexcept {
  std::string_view label;
  std::span<const std::uint8_t> body;
  if (const Verdict v = read_label(pkt, len, cfg, &label, &body); v != Verdict::kAccepted) return v;
  if (cfg.keyring == nullptr || cfg.keyring->empty() || cfg.allow_plaintext) return Verdict::kAccepted;
  if (body.empty()) return Verdict::kTooShort;
  if (body[0] > 1) return Verdict::kPlaintext;
  if (body.size() < (body[0] == 0 ? kMinSealed0 : kMinSealed1)) return Verdict::kTooShort;
  return Verdict::kAccepted;
}

Result inspect(const std::uint8_t* pkt, std::size_t len, const base::Address& source_in, const Config& cfg,
               Scratch& scratch) noexcept {
  Result res;
  const base::Address source = fold_v4_mapped(source_in);
  Walk w{source, cfg, scratch, res};
  const auto done = [&res](Verdict v) {
    res.verdict = v;
    return res;
  };
  std::span<const std::uint8_t> body;
  std::string_view label;
  if (const Verdict v = read_label(pkt, len, cfg, &label, &body); v != Verdict::kAccepted) return done(v);
  if (len > scratch.plain_cap()) return done(Verdict::kTooLong);

  if (cfg.keyring == nullptr || cfg.keyring->empty()) {
    const Verdict v = plaintext(body, w);
    return done(v);
  }

  // Sealed: version, nonce, ciphertext, tag; the AAD is the label (empty
  // without one: memberlist passes []byte(label)).
  const auto fallback = [&](Verdict refuse) {
    if (!cfg.allow_plaintext) return done(refuse);
    res.key_index = -1;
    const Verdict v = plaintext(body, w);
    return done(v == Verdict::kAccepted ? Verdict::kAcceptedPlaintext : v);
  };
  if (body.empty()) return done(Verdict::kTooShort);
  const std::uint8_t vsn = body[0];
  if (vsn > 1) return fallback(Verdict::kPlaintext);
  if (body.size() < (vsn == 0 ? kMinSealed0 : kMinSealed1)) return fallback(Verdict::kTooShort);
  const std::size_t ct_len = body.size() - 1 - kNonce - kTag;
  const std::uint8_t* nonce = body.data() + 1;
  const std::uint8_t* ct = nonce + kNonce;
  const std::uint8_t* tag = ct + ct_len;
  std::uint8_t* out = scratch.plain();
  const auto* aad = reinterpret_cast<const std::uint8_t*>(label.data());
  for (std::size_t k = 0; k < cfg.keyring->size(); ++k) {
    if (crypto::ipsecmb_gcm_open_to(cfg.keyring->key(k), nonce, aad, label.size(), ct, ct_len, out, tag)) {
      res.key_index = static_cast<std::int8_t>(k);
      break;
    }
  }
  if (res.key_index < 0) return fallback(Verdict::kBadAuth);
  std::size_t plain_len = ct_len;
  if (vsn == 0) {
    // PKCS7 to a 16-byte block: 1 to 16 bytes, each the count. memberlist
    // only subtracts the last byte (a larger one panics its slice).
    const std::uint8_t pad = out[plain_len - 1];
    if (pad == 0 || pad > 16 || pad > plain_len) return done(Verdict::kBadPadding);
    for (std::size_t i = plain_len - pad; i < plain_len; ++i) {
      if (out[i] != pad) return done(Verdict::kBadPadding);
    }
    plain_len -= pad;
  }
  return done(plaintext({out, plain_len}, w));
}

}  // namespace gw::dp::ml
