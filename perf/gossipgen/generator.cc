#include "perf/gossipgen/generator.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <random>
#include <utility>

#include "crypto/datagram.h"
#include "crypto/nonce.h"
#include "gossip.pb.h"

namespace gw::perf {
namespace {

constexpr std::array<std::string_view, kKindCount> kKindNames = {
    "valid",
    "valid_secondary",
    "foreign",
    "unknown_key",
    "forged_header",
    "forged_tag",
    "forged_ciphertext",
    "unkeyed_random",
    "unkeyed_short",
    "unkeyed_version",
    "unkeyed_memberlist",
    "not_gossip",
    "malformed",
    "replayed",
    "stale",
    "flood",
    "wrong_receiver",
    "martian",
    "class_abuse",
    "drain",
    "drain_spoofed",
};

constexpr std::array<std::string_view, kVerdictCount> kVerdictNames = {
    "accepted",         "drop_not_gossip",     "drop_malformed", "drop_unkeyed",    "drop_foreign_cluster",
    "drop_unknown_key", "drop_bad_mac",        "drop_stale",     "drop_replay",     "drop_rate_limited",
    "drop_bad_auth",    "drop_wrong_receiver", "drop_martian",   "drop_auth_retry",
};

constexpr std::array<std::string_view, kUnkeyedLabelCount> kUnkeyedLabels = {
    "memberlist_ping",
    "memberlist_indirect_ping",
    "memberlist_ack",
    "memberlist_suspect",
    "memberlist_alive",
    "memberlist_dead",
    "memberlist_push_pull",
    "memberlist_compound",
    "serf",
    "memberlist_compressed",
    "memberlist_nack",
    "memberlist_err",
    "weave_mesh",
    "unmatched",
};
constexpr std::size_t kUnmatched = kUnkeyedLabelCount - 1;
// The gateway's minimum classifier.scan_bytes: signatures look no further.
constexpr std::size_t kScanBytes = 64;
// Replayed packets copy one of this many latest valid frames.
constexpr std::size_t kReplaySources = 64;

constexpr std::array<std::string_view, crypto::kClassCount> kClassNames = {"urgent", "probe", "gossip", "bulk"};

constexpr std::size_t kUnkeyedRandomMaxBytes = 300;
constexpr std::size_t kForgedPayloadMaxBytes = 300;

// The seed's stream, with bounded draws written out so the bytes produced do
// not depend on the standard library's distribution algorithms. Draw in
// separate statements, never twice in one expression or argument list: the
// order of those is unspecified (GCC and clang differ), and with it the bytes.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : engine_(seed) {}
  std::uint64_t next() { return engine_(); }
  // Uniform enough in [0, n) for test traffic; n > 0.
  std::uint64_t below(std::uint64_t n) { return engine_() % n; }
  // Inclusive range.
  std::size_t range(std::size_t lo, std::size_t hi) {
    return lo + static_cast<std::size_t>(below(static_cast<std::uint64_t>(hi - lo) + 1));
  }
  bool coin() { return (engine_() & 1) != 0; }
  void fill(std::uint8_t* p, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<std::uint8_t>(engine_() >> 56);
  }

 private:
  std::mt19937_64 engine_;
};

// SplitMix64 finaliser: the nonce epoch is a function of the seed that is not
// the seed itself, so epochs of neighbouring seeds do not look alike.
std::uint64_t mix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

struct Sealed {
  std::vector<std::uint8_t> datagram;
  crypto::PriorityClass cls = crypto::PriorityClass::kGossip;
  std::array<std::uint32_t, kMsgTypeCount> messages{};
};

enum class MalformedVariant : std::uint8_t {
  kEthTruncated,
  kIpTruncated,
  kL4Truncated,
  kIpv4Ihl,
  kIpLengthOver,
  kUdpLengthOver,
  kUdpLengthUnder,
  kIpv4Fragment,
  kHeaderLength,
  kHeaderField,
  kPayloadOverLimit,
};

enum class NotGossipVariant : std::uint8_t {
  kArp,
  kUdpOtherPort,
  kTcpOurPort,
  kIcmpEcho,
  kUdpOtherIp,
  kUnknownEtherType,
};

class Generator {
 public:
  explicit Generator(const GenOptions& o)
      : o_(o),
        rng_(o.seed),
        nonces_(mix64(o.seed)),
        cluster_id_(crypto::derive_cluster_id(o.cluster)),
        foreign_id_(crypto::derive_cluster_id(o.foreign_cluster)),
        v6_(o.dst_ip.v6) {
    for (const auto& kb : o.keys) keys_.emplace_back(kb, o.suite);
    // Epoch 0 is nonces_ itself, so the default output does not change.
    for (std::uint32_t e = 1; e < o.nonce_epochs; ++e) extra_nonces_.emplace_back(mix64(o.seed + 0x9E37ULL * e));
    src_base_ = o.src_ip ? *o.src_ip : *parse_ip(v6_ ? "fd00::2" : "10.0.0.2");
    // Whom valid datagrams are sealed for: the gateway (wire version 2).
    const std::size_t ip_len = v6_ ? 16 : 4;
    receiver_ = crypto::receiver_of(o.dst_ip.bytes.data(), ip_len, o.dst_port);
    // And another member, for wrong_receiver: the next address whose tag
    // differs from the gateway's (so the header alone refuses it).
    IpAddr other = o.dst_ip;
    do {
      ++other.bytes[ip_len - 1];
      other_receiver_ = crypto::receiver_of(other.bytes.data(), ip_len, o.dst_port);
    } while (other_receiver_.tag == receiver_.tag);
    ip_id_ = static_cast<std::uint16_t>(rng_.next());
    const std::size_t max_udp_payload = kMaxFrameBytes - udp_payload_offset(v6_);
    for (const auto& p : o.corpus) {
      // A payload starting with our magic would not be unkeyed; one that does
      // not fit a frame for this family cannot be replayed as is.
      const bool ours = p.size() >= 4 && std::equal(crypto::kWireMagic.begin(), crypto::kWireMagic.end(), p.begin());
      if (!ours && p.size() <= max_udp_payload) corpus_.push_back(&p);
    }
  }

  void run(const std::function<void(const Packet&)>& sink) {
    std::vector<Kind> order;
    for (std::size_t k = 0; k < kKindCount; ++k) {
      order.insert(order.end(), o_.mix[k], static_cast<Kind>(k));
    }
    // Fisher-Yates with our own draws (std::shuffle is implementation-defined).
    for (std::size_t i = order.size(); i > 1; --i) {
      std::swap(order[i - 1], order[rng_.below(i)]);
    }
    // A replay needs an earlier valid frame to copy: if the first replay
    // comes before the first valid packet, they trade places.
    const auto first_valid = std::find(order.begin(), order.end(), Kind::kValid);
    const auto first_replay = std::find(order.begin(), order.end(), Kind::kReplayed);
    if (first_replay < first_valid && first_valid != order.end()) std::iter_swap(first_replay, first_valid);
    for (const Kind k : order) {
      Packet p = make(k);
      if (p.verdict == Verdict::kDropUnkeyed) p.unkeyed_label = label_of(p.frame);
      sink(p);
    }
  }

 private:
  // ---- addresses -------------------------------------------------------

  Flow flow() {
    Flow f;
    f.dst = o_.dst_ip;
    f.dst_port = o_.dst_port;
    f.dst_mac = o_.dst_mac;
    f.src = src_base_;
    const std::size_t last = v6_ ? 15 : 3;
    // Many sources in the /24 of the base address, never our own address.
    do {
      f.src.bytes[last] = static_cast<std::uint8_t>(rng_.range(1, 254));
    } while (f.src == f.dst);
    f.src_mac = {0x02, 0x00, f.src.bytes[last - 3], f.src.bytes[last - 2], f.src.bytes[last - 1], f.src.bytes[last]};
    f.src_port = static_cast<std::uint16_t>(rng_.range(1024, 65535));
    f.ip_id = ip_id_++;
    return f;
  }

  // ---- messages --------------------------------------------------------

  std::string node_name() { return "node-" + std::to_string(rng_.below(1000)); }

  void fill_address(proto::Address* a) {
    std::array<std::uint8_t, 16> ip{};
    std::size_t n = 4;
    if (v6_) {
      n = 16;
      ip[0] = 0xFD;
      rng_.fill(ip.data() + 8, 8);
    } else {
      ip[0] = 10;
      rng_.fill(ip.data() + 1, 3);
    }
    a->set_ip(std::string(reinterpret_cast<const char*>(ip.data()), n));
    a->set_port(7946);
  }

  void fill_tags(google::protobuf::RepeatedPtrField<proto::Tag>* tags) {
    static constexpr std::array<std::pair<std::string_view, std::string_view>, 5> kTags = {
        {{"role", "control-plane"}, {"role", "worker"}, {"zone", "eu-west-1a"}, {"rack", "r17"}, {"dc", "fra1"}}};
    const std::size_t n = rng_.below(3);
    for (std::size_t i = 0; i < n; ++i) {
      const auto& [k, v] = kTags[rng_.below(kTags.size())];
      proto::Tag* t = tags->Add();
      t->set_key(std::string(k));
      t->set_value(std::string(v));
    }
  }

  void fill_members(google::protobuf::RepeatedPtrField<proto::MemberState>* members) {
    const std::size_t n = rng_.range(1, 3);
    for (std::size_t i = 0; i < n; ++i) {
      proto::MemberState* m = members->Add();
      m->set_node(node_name());
      fill_address(m->mutable_addr());
      m->set_incarnation(rng_.range(1, 1000));
      m->set_status(static_cast<proto::MemberStatus>(rng_.below(4)));
      fill_tags(m->mutable_tags());
    }
  }

  std::uint32_t seq_no() { return static_cast<std::uint32_t>(rng_.next()); }

  void fill_message(proto::Message* m, MsgType t) {
    switch (t) {
      case MsgType::kPing: {
        auto* b = m->mutable_ping();
        b->set_seq_no(seq_no());
        b->set_target(node_name());
        b->set_source(node_name());
        fill_address(b->mutable_source_addr());
        break;
      }
      case MsgType::kAck: {
        auto* b = m->mutable_ack();
        b->set_seq_no(seq_no());
        b->set_source(node_name());
        break;
      }
      case MsgType::kIndirectPing: {
        auto* b = m->mutable_indirect_ping();
        b->set_seq_no(seq_no());
        b->set_target(node_name());
        fill_address(b->mutable_target_addr());
        b->set_want_nack(rng_.coin());
        b->set_source(node_name());
        fill_address(b->mutable_source_addr());
        break;
      }
      case MsgType::kNack: {
        auto* b = m->mutable_nack();
        b->set_seq_no(seq_no());
        b->set_source(node_name());
        break;
      }
      case MsgType::kAlive: {
        auto* b = m->mutable_alive();
        b->set_incarnation(rng_.range(1, 1000));
        b->set_node(node_name());
        fill_address(b->mutable_addr());
        fill_tags(b->mutable_tags());
        b->set_protocol_version(1);
        break;
      }
      case MsgType::kSuspect: {
        auto* b = m->mutable_suspect();
        b->set_incarnation(rng_.range(1, 1000));
        b->set_node(node_name());
        b->set_from(node_name());
        break;
      }
      case MsgType::kDead: {
        auto* b = m->mutable_dead();
        b->set_incarnation(rng_.range(1, 1000));
        b->set_node(node_name());
        b->set_from(node_name());
        break;
      }
      case MsgType::kLeave: {
        auto* b = m->mutable_leave();
        b->set_incarnation(rng_.range(1, 1000));
        b->set_node(node_name());
        break;
      }
      case MsgType::kSyncRequest: {
        auto* b = m->mutable_sync_request();
        b->set_seq_no(seq_no());
        b->set_source(node_name());
        b->set_join(rng_.coin());
        b->set_parts(static_cast<std::uint32_t>(rng_.range(1, 4)));
        b->set_part(static_cast<std::uint32_t>(rng_.below(b->parts())));
        fill_members(b->mutable_members());
        break;
      }
      case MsgType::kSyncResponse: {
        auto* b = m->mutable_sync_response();
        b->set_seq_no(seq_no());
        b->set_source(node_name());
        b->set_parts(static_cast<std::uint32_t>(rng_.range(1, 4)));
        b->set_part(static_cast<std::uint32_t>(rng_.below(b->parts())));
        fill_members(b->mutable_members());
        break;
      }
      case MsgType::kUserData: {
        auto* b = m->mutable_user_data();
        b->set_source(node_name());
        std::string data(rng_.range(1, 64), '\0');
        rng_.fill(reinterpret_cast<std::uint8_t*>(data.data()), data.size());
        b->set_data(std::move(data));
        break;
      }
    }
  }

  // Appends a user_data message so the serialised compound is as close to
  // `target` bytes as protobuf's varint lengths allow, never above it.
  void pad_compound(proto::Compound& c, std::size_t target) {
    // The smallest padding message is 4 bytes (two tags, two lengths); a
    // smaller gap is closed by dropping the last message and padding more.
    constexpr std::size_t kMinPad = 4;
    std::size_t cur = c.ByteSizeLong();
    if (cur < target && target - cur < kMinPad && c.messages_size() > 1) {
      c.mutable_messages()->RemoveLast();
      cur = c.ByteSizeLong();
    }
    if (cur + kMinPad > target) return;
    proto::UserData* ud = c.add_messages()->mutable_user_data();
    if (target - cur >= 32) ud->set_source(node_name());
    std::size_t n = target - cur;
    for (int i = 0; i < 8; ++i) {
      ud->mutable_data()->assign(n, '\0');
      const std::size_t size = c.ByteSizeLong();
      if (size == target) break;
      if (size > target) {
        n -= std::min(n, size - target);
      } else if (i < 7) {
        n += target - size;
      }
    }
    while (n > 0 && c.ByteSizeLong() > target) ud->mutable_data()->assign(--n, '\0');
    rng_.fill(reinterpret_cast<std::uint8_t*>(ud->mutable_data()->data()), n);
  }

  // Largest payload_len (ciphertext + tag) that fits one frame.
  std::size_t frame_payload_room() const { return kMaxFrameBytes - udp_payload_offset(v6_) - crypto::kHeaderBytes; }

  // A sealed datagram of 1-4 random messages. `plaintext_target` (0: natural
  // size) pads it with a user_data message.
  Sealed seal(const crypto::Key& key, std::uint64_t cluster_id, std::size_t plaintext_target, bool count_types,
              std::optional<std::uint32_t> timestamp = std::nullopt) {
    proto::Compound c;
    const std::size_t n = rng_.range(1, 4);
    for (std::size_t i = 0; i < n; ++i) {
      // The first message of each valid packet cycles through the types, so
      // every type appears once there are 11 valid packets.
      MsgType t = static_cast<MsgType>(rng_.below(kMsgTypeCount));
      if (i == 0 && count_types) t = static_cast<MsgType>(valid_seq_++ % kMsgTypeCount);
      if (abuse_) {
        // Content that no urgent datagram carries.
        static constexpr std::array<MsgType, 4> kNotUrgent = {MsgType::kSuspect, MsgType::kUserData,
                                                              MsgType::kSyncRequest, MsgType::kSyncResponse};
        t = kNotUrgent[rng_.below(kNotUrgent.size())];
      }
      fill_message(c.add_messages(), t);
      // A sized datagram keeps only the messages that fit its target (the
      // first always stays), so the padding can make up the rest.
      if (plaintext_target > 0 && i > 0 && c.ByteSizeLong() > plaintext_target) {
        c.mutable_messages()->RemoveLast();
        break;
      }
    }
    if (plaintext_target > 0) pad_compound(c, plaintext_target);

    Sealed s;
    std::uint8_t best = static_cast<std::uint8_t>(crypto::PriorityClass::kBulk);
    for (const proto::Message& m : c.messages()) {
      const auto t = static_cast<MsgType>(static_cast<int>(m.body_case()) - 1);
      s.messages[static_cast<std::size_t>(t)]++;
      best = std::min(best, static_cast<std::uint8_t>(class_of(t)));
    }
    s.cls = abuse_ ? crypto::PriorityClass::kUrgent : static_cast<crypto::PriorityClass>(best);
    const std::string plain = c.SerializeAsString();
    s.datagram.resize(crypto::kHeaderBytes + plain.size() + crypto::kTagBytes);
    crypto::SealParams params;
    params.cluster_id = cluster_id;
    params.cls = s.cls;
    params.timestamp = timestamp.value_or(o_.timestamp);
    params.to = for_other_ ? other_receiver_ : receiver_;
    const std::size_t len = crypto::seal_datagram(
        key, params, nonce_override_ != nullptr ? *nonce_override_ : next_nonces(),
        reinterpret_cast<const std::uint8_t*>(plain.data()), plain.size(), s.datagram.data(), s.datagram.size());
    if (len != s.datagram.size()) throw GenError("internal error: sealing failed");
    return s;
  }

  // The plaintext size --size asks for, clamped to the frame and the limit.
  std::size_t sized_plaintext() const {
    if (o_.frame_size == 0) return 0;
    const std::size_t overhead = udp_payload_offset(v6_) + crypto::kHeaderBytes + crypto::kTagBytes;
    const std::size_t max_payload_len = std::min(o_.max_payload, frame_payload_room());
    const std::size_t want = o_.frame_size > overhead ? o_.frame_size - overhead : 0;
    return std::min(want, max_payload_len - crypto::kTagBytes);
  }

  // The UDP payload length --size asks for (random and forged payloads).
  std::size_t sized_udp_payload(std::size_t natural_max) {
    if (o_.frame_size == 0) return rng_.range(0, natural_max);
    const std::size_t off = udp_payload_offset(v6_);
    const std::size_t want = o_.frame_size > off ? o_.frame_size - off : 0;
    return std::min(want, kMaxFrameBytes - off);
  }

  Sealed seal_valid(const crypto::Key& key) { return seal(key, cluster_id_, sized_plaintext(), true); }
  Sealed seal_other(const crypto::Key& key, std::uint64_t cluster_id) {
    return seal(key, cluster_id, sized_plaintext(), false);
  }

  crypto::Key random_key() {
    for (;;) {
      crypto::KeyBytes kb{};
      rng_.fill(kb.data(), kb.size());
      crypto::Key k(kb, o_.suite);
      const bool ours =
          std::any_of(keys_.begin(), keys_.end(), [&](const crypto::Key& mine) { return mine.id() == k.id(); });
      if (!ours) return k;
    }
  }

  // Recomputes the header MAC with our primary key after a header edit, so
  // the edit is the only thing wrong with the datagram.
  void remac(std::vector<std::uint8_t>& d) {
    const std::uint64_t mac = keys_[0].header_mac(d.data());
    for (int i = 0; i < 8; ++i) {
      d[crypto::kMacOffset + static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(mac >> (56 - 8 * i));
    }
  }

  // ---- kinds -----------------------------------------------------------

  Packet make(Kind k) {
    Packet p;
    p.kind = k;
    p.verdict = expected_verdict(k);
    switch (k) {
      case Kind::kValid:
      case Kind::kValidSecondary: {
        Sealed s = seal_valid(keys_[k == Kind::kValid ? 0 : 1]);
        p.variant = k == Kind::kValid ? "primary_key" : "secondary_key";
        p.cls = s.cls;
        p.messages = s.messages;
        p.frame = build_udp_frame(flow(), s.datagram);
        if (k == Kind::kValid && o_.mix[static_cast<std::size_t>(Kind::kReplayed)] > 0) {
          if (recent_valid_.size() < kReplaySources) {
            recent_valid_.push_back(p.frame);
          } else {
            recent_valid_[recent_pos_++ % kReplaySources] = p.frame;
          }
        }
        break;
      }
      case Kind::kReplayed:
        // Byte for byte, source included: only the nonce window can tell.
        p.variant = "duplicate";
        p.frame = recent_valid_[rng_.below(recent_valid_.size())];
        break;
      case Kind::kStale: {
        // Outside the window by 1 s to an hour, in the past or the future.
        const std::uint32_t off = o_.replay_window_s + 1 + static_cast<std::uint32_t>(rng_.below(3600));
        const bool future = rng_.coin();
        p.variant = future ? "future" : "past";
        const std::uint32_t ts = future ? o_.timestamp + off : o_.timestamp - off;
        const Sealed s = seal(keys_[0], cluster_id_, sized_plaintext(), false, ts);
        p.frame = build_udp_frame(flow(), s.datagram);
        break;
      }
      case Kind::kFlood: {
        Sealed s = seal_valid(keys_[0]);
        Flow f = flow();
        f.src = *parse_ip(v6_ ? "fd01::1" : "198.18.0.1");  // never a member address we generate
        f.src_port = 7946;
        p.variant = "one_source";
        p.frame = build_udp_frame(f, s.datagram);
        if (flood_seen_++ < o_.unknown_burst) {
          p.cls = s.cls;
          p.messages = s.messages;
        } else {
          p.verdict = Verdict::kDropRateLimited;
        }
        break;
      }
      case Kind::kWrongReceiver: {
        // A member's real datagram for someone else, sent here.
        for_other_ = true;
        const Sealed s = seal_other(keys_[0], cluster_id_);
        p.frame = build_udp_frame(flow(), s.datagram);
        for_other_ = false;
        p.variant = "other_member";
        break;
      }
      case Kind::kDrain: {
        if (drain_dgram_.empty()) {
          // Sniffed once: a real datagram for us, one ciphertext bit flipped.
          // Under its own sender epoch (another member's sequence), so no
          // window of ours ever moves past its nonce: every later copy
          // meets the failed-header check, not the window.
          nonce_override_ = &drain_nonces_;
          drain_dgram_ = seal_other(keys_[0], cluster_id_).datagram;
          nonce_override_ = nullptr;
          drain_dgram_[crypto::kHeaderBytes] ^= 0x01;
          p.verdict = Verdict::kDropBadAuth;  // the only AEAD it buys
        }
        Flow f = flow();
        f.src = src_base_;  // a member's address: valid packets come from it too
        const std::size_t last = v6_ ? 15 : 3;
        f.src.bytes[last] = 2;
        f.src_mac = {0x02, 0x00, 0x00, 0x00, 0x00, 0x66};  // the attacker's
        p.variant = "tampered_copy";
        p.frame = build_udp_frame(f, drain_dgram_);
        break;
      }
      case Kind::kDrainSpoofed: {
        const std::size_t i = rng_.below(kSpoofedDrainDatagrams);
        if (spoofed_dgrams_.empty()) spoofed_dgrams_.resize(kSpoofedDrainDatagrams);
        if (spoofed_dgrams_[i].empty()) {
          // Sniffed once each, under their own sender epoch like drain's.
          nonce_override_ = &spoofed_nonces_;
          spoofed_dgrams_[i] = seal_other(keys_[0], cluster_id_).datagram;
          nonce_override_ = nullptr;
          spoofed_dgrams_[i][crypto::kHeaderBytes] ^= 0x01;
          p.verdict = Verdict::kDropBadAuth;
        }
        p.variant = "tampered_copy_spoofed";
        p.frame = build_udp_frame(flow(), spoofed_dgrams_[i]);  // a random source each copy
        break;
      }
      case Kind::kClassAbuse: {
        abuse_ = true;
        Sealed s = seal_other(keys_[0], cluster_id_);
        abuse_ = false;
        p.variant = "urgent_for_bulk";
        p.cls = s.cls;
        p.class_mismatch = true;  // its messages are not served
        p.frame = build_udp_frame(flow(), s.datagram);
        break;
      }
      case Kind::kMartian: {
        Flow f = flow();
        static constexpr std::array<std::string_view, 5> kV4 = {"255.255.255.255", "224.0.0.1", "0.0.0.0", "127.0.0.1",
                                                                ""};
        static constexpr std::array<std::string_view, 5> kV6 = {"ff02::1", "ff05::2", "::", "::1", ""};
        static constexpr std::array<std::string_view, 5> kNames = {"broadcast", "multicast", "unspecified", "loopback",
                                                                   "own_address"};
        const std::size_t v = rng_.below(kNames.size());
        f.src = kNames[v] == "own_address" ? o_.dst_ip : *parse_ip(v6_ ? kV6[v] : kV4[v]);
        p.variant = kNames[v];
        p.frame = build_udp_frame(f, seal_other(keys_[0], cluster_id_).datagram);
        break;
      }
      case Kind::kForeign: {
        // Half under our own key: the cluster id alone must reject it.
        const bool own_key = rng_.coin();
        p.variant = own_key ? "primary_key" : "other_key";
        Sealed s = own_key ? seal_other(keys_[0], foreign_id_) : seal_other(random_key(), foreign_id_);
        p.frame = build_udp_frame(flow(), s.datagram);
        break;
      }
      case Kind::kUnknownKey: {
        p.variant = "random_key";
        const crypto::Key key = random_key();
        const Sealed s = seal_other(key, cluster_id_);
        p.frame = build_udp_frame(flow(), s.datagram);
        break;
      }
      case Kind::kForgedHeader: {
        p.variant = "random_mac";
        const std::vector<std::uint8_t> d = forged_header();
        p.frame = build_udp_frame(flow(), d);
        break;
      }
      case Kind::kForgedTag:
      case Kind::kForgedCiphertext: {
        std::vector<std::uint8_t> d = seal_other(keys_[0], cluster_id_).datagram;
        const std::size_t tag_at = d.size() - crypto::kTagBytes;
        const std::size_t at = k == Kind::kForgedTag ? tag_at + rng_.below(crypto::kTagBytes)
                                                     : crypto::kHeaderBytes + rng_.below(tag_at - crypto::kHeaderBytes);
        d[at] ^= static_cast<std::uint8_t>(1U << rng_.below(8));
        p.variant = k == Kind::kForgedTag ? "tag_bit" : "ciphertext_bit";
        p.frame = build_udp_frame(flow(), d);
        break;
      }
      case Kind::kUnkeyedRandom: {
        std::vector<std::uint8_t> d(sized_udp_payload(kUnkeyedRandomMaxBytes));
        rng_.fill(d.data(), d.size());
        if (d.size() >= 4 && std::equal(crypto::kWireMagic.begin(), crypto::kWireMagic.end(), d.begin())) {
          d[0] ^= 0x80;
        }
        p.variant = "random";
        p.frame = build_udp_frame(flow(), d);
        break;
      }
      case Kind::kUnkeyedShort: {
        std::vector<std::uint8_t> d = seal_other(keys_[0], cluster_id_).datagram;
        d.resize(rng_.range(1, crypto::kHeaderBytes - 1));
        p.variant = "short_header";
        p.frame = build_udp_frame(flow(), d);
        break;
      }
      case Kind::kUnkeyedVersion: {
        // Version 1, the wire before receiver binding: another protocol now.
        std::vector<std::uint8_t> d = seal_other(keys_[0], cluster_id_).datagram;
        d[4] = 1;
        remac(d);
        p.variant = "version_1";
        p.frame = build_udp_frame(flow(), d);
        break;
      }
      case Kind::kUnkeyedMemberlist: {
        const std::vector<std::uint8_t>& d = *corpus_[corpus_pos_++ % corpus_.size()];
        p.variant = "memberlist";
        p.frame = build_udp_frame(flow(), d);
        break;
      }
      case Kind::kNotGossip:
        make_not_gossip(p);
        break;
      case Kind::kMalformed:
        make_malformed(p);
        break;
    }
    return p;
  }

  std::vector<std::uint8_t> forged_header() {
    crypto::WireHeader h;
    h.cls = static_cast<crypto::PriorityClass>(rng_.below(crypto::kClassCount));
    h.suite = o_.suite;
    h.cluster_id = cluster_id_;
    h.key_id = keys_[0].id();
    h.timestamp = o_.timestamp;
    h.receiver = receiver_.tag;  // addressed to the gateway: only the MAC is wrong
    rng_.fill(h.nonce.data(), h.nonce.size());
    std::size_t payload_len = 0;
    if (o_.frame_size == 0) {
      payload_len = rng_.range(crypto::kTagBytes, kForgedPayloadMaxBytes);
    } else {
      payload_len = std::max(sized_plaintext() + crypto::kTagBytes, crypto::kTagBytes);
    }
    h.payload_len = static_cast<std::uint16_t>(payload_len);
    std::vector<std::uint8_t> d(crypto::kHeaderBytes + payload_len);
    crypto::write_header(h, d.data());
    // A random MAC that is not, by a 2^-64 chance, the right one.
    h.mac = rng_.next();
    if (h.mac == keys_[0].header_mac(d.data())) h.mac ^= 1;
    crypto::write_header(h, d.data());
    rng_.fill(d.data() + crypto::kHeaderBytes, payload_len);
    return d;
  }

  void make_not_gossip(Packet& p) {
    Flow f = flow();
    switch (static_cast<NotGossipVariant>(rng_.below(6))) {
      case NotGossipVariant::kArp:
        p.variant = "arp_request";
        p.frame = build_arp_request(f);
        break;
      case NotGossipVariant::kUdpOtherPort:
        // A perfectly valid datagram: only the port makes it not ours.
        p.variant = "udp_other_port";
        do {
          f.dst_port = static_cast<std::uint16_t>(rng_.range(1, 65535));
        } while (f.dst_port == o_.dst_port);
        p.frame = build_udp_frame(f, seal_other(keys_[0], cluster_id_).datagram);
        break;
      case NotGossipVariant::kTcpOurPort:
        p.variant = "tcp_our_port";
        p.frame = build_tcp_syn_frame(f, static_cast<std::uint32_t>(rng_.next()));
        break;
      case NotGossipVariant::kIcmpEcho: {
        p.variant = "icmp_echo";
        std::vector<std::uint8_t> data(56);
        rng_.fill(data.data(), data.size());
        const auto seq = static_cast<std::uint16_t>(rng_.below(1000));
        const auto id = static_cast<std::uint16_t>(rng_.next());
        p.frame = build_icmp_echo_frame(f, id, seq, data);
        break;
      }
      case NotGossipVariant::kUdpOtherIp:
        // Valid datagram to our port, but another host's address.
        p.variant = "udp_other_ip";
        f.dst.bytes[v6_ ? 15 : 3] ^= static_cast<std::uint8_t>(rng_.range(1, 255));
        p.frame = build_udp_frame(f, seal_other(keys_[0], cluster_id_).datagram);
        break;
      case NotGossipVariant::kUnknownEtherType: {
        p.variant = "unknown_ethertype";
        std::vector<std::uint8_t> data(46);
        rng_.fill(data.data(), data.size());
        p.frame = build_ethernet_frame(f.src_mac, f.dst_mac, 0x88B5, data);  // IEEE local experimental
        break;
      }
    }
  }

  void make_malformed(Packet& p) {
    std::vector<MalformedVariant> variants = {
        MalformedVariant::kEthTruncated, MalformedVariant::kIpTruncated,   MalformedVariant::kL4Truncated,
        MalformedVariant::kIpLengthOver, MalformedVariant::kUdpLengthOver, MalformedVariant::kUdpLengthUnder,
        MalformedVariant::kHeaderLength, MalformedVariant::kHeaderField,
    };
    // IHL and fragments have no IPv6 analogue the gateway must call malformed
    // (a fragment header is another next-header, not UDP).
    if (!v6_) {
      variants.push_back(MalformedVariant::kIpv4Ihl);
      variants.push_back(MalformedVariant::kIpv4Fragment);
    }
    if (o_.max_payload + 3 <= frame_payload_room()) {
      variants.push_back(MalformedVariant::kPayloadOverLimit);
    }
    const MalformedVariant v = variants[rng_.below(variants.size())];
    const std::size_t ip_at = kEthHeaderBytes;
    const std::size_t l4 = l4_offset(v6_);

    if (v == MalformedVariant::kPayloadOverLimit) {
      // Padding lands at most 2 bytes under its target (varint lengths), so
      // aim 3 over the limit or more.
      const std::size_t room = frame_payload_room();
      const std::size_t payload_len = rng_.range(o_.max_payload + 3, std::min(room, o_.max_payload + 32));
      Sealed s = seal(keys_[0], cluster_id_, payload_len - crypto::kTagBytes, false);
      p.variant = "payload_over_limit";
      p.frame = build_udp_frame(flow(), s.datagram);
      return;
    }
    if (v == MalformedVariant::kHeaderLength || v == MalformedVariant::kHeaderField) {
      std::vector<std::uint8_t> d = seal_other(keys_[0], cluster_id_).datagram;
      if (v == MalformedVariant::kHeaderLength) {
        const std::uint16_t actual = load_be16(d.data() + 36);
        std::uint16_t lie = 0;
        switch (rng_.below(3)) {
          case 0:
            lie = static_cast<std::uint16_t>(actual + rng_.range(1, 64));
            p.variant = "header_payload_len_long";
            break;
          case 1:
            lie = static_cast<std::uint16_t>(rng_.range(crypto::kTagBytes, actual - 1u));
            p.variant = "header_payload_len_short";
            break;
          default:
            lie = static_cast<std::uint16_t>(rng_.below(crypto::kTagBytes));
            p.variant = "header_payload_len_below_tag";
            break;
        }
        store_be16(d.data() + 36, lie);
      } else {
        switch (rng_.below(4)) {
          case 0:
            d[5] = static_cast<std::uint8_t>(rng_.range(crypto::kClassCount, 255));
            p.variant = "header_bad_class";
            break;
          case 1: {
            static constexpr std::array<std::uint8_t, 4> kBadSuites = {0, 3, 7, 255};
            d[6] = kBadSuites[rng_.below(kBadSuites.size())];
            p.variant = "header_bad_suite";
            break;
          }
          case 2:
            d[7] = static_cast<std::uint8_t>(rng_.range(1, 255));
            p.variant = "header_flags_set";
            break;
          default:
            // Bytes 38..39 were reserved until wire version 2 made them the
            // receiver tag: the high flag bits instead.
            const auto high = 0x80u >> rng_.below(2);
            d[7] = static_cast<std::uint8_t>(high | (rng_.range(1, 255) & 0x3Fu));
            p.variant = "header_flags_high";
            break;
        }
      }
      remac(d);
      p.frame = build_udp_frame(flow(), d);
      return;
    }

    const Sealed sealed = seal_other(keys_[0], cluster_id_);
    Frame f = build_udp_frame(flow(), sealed.datagram);
    // End of the IP packet (frames carrying a datagram are never padded, but
    // do not rely on it).
    const std::size_t ip_end = v6_ ? l4 + load_be16(f.data() + ip_at + 4) : ip_at + load_be16(f.data() + ip_at + 2);
    switch (v) {
      case MalformedVariant::kEthTruncated:
        f.resize(rng_.range(1, kEthHeaderBytes - 1));
        p.variant = "eth_truncated";
        break;
      case MalformedVariant::kIpTruncated:
        f.resize(rng_.range(kEthHeaderBytes, l4 - 1));
        p.variant = "ip_truncated";
        break;
      case MalformedVariant::kL4Truncated:
        // The IP length now claims more than the frame holds.
        f.resize(rng_.range(l4, ip_end - 1));
        p.variant = "l4_truncated";
        break;
      case MalformedVariant::kIpv4Ihl:
        f[ip_at] = static_cast<std::uint8_t>(0x40 | rng_.below(5));
        fix_ipv4_checksum(f);
        p.variant = "ipv4_ihl_below_5";
        break;
      case MalformedVariant::kIpLengthOver: {
        const std::size_t extra = rng_.range(1, 64);
        if (v6_) {
          store_be16(f.data() + ip_at + 4, static_cast<std::uint16_t>(f.size() - l4 + extra));
        } else {
          store_be16(f.data() + ip_at + 2, static_cast<std::uint16_t>(f.size() - ip_at + extra));
          fix_ipv4_checksum(f);
        }
        p.variant = v6_ ? "ipv6_payload_len_over_frame" : "ipv4_total_len_over_frame";
        break;
      }
      case MalformedVariant::kUdpLengthOver:
        store_be16(f.data() + l4 + 4, static_cast<std::uint16_t>(ip_end - l4 + rng_.range(1, 64)));
        p.variant = "udp_len_over_ip";
        break;
      case MalformedVariant::kUdpLengthUnder:
        store_be16(f.data() + l4 + 4, static_cast<std::uint16_t>(rng_.below(kUdpHeaderBytes)));
        p.variant = "udp_len_below_8";
        break;
      case MalformedVariant::kIpv4Fragment:
        // First fragment (offset 0, more fragments): the UDP header says it
        // is for us, but the datagram is incomplete.
        store_be16(f.data() + ip_at + 6, 0x2000);
        fix_ipv4_checksum(f);
        p.variant = "ipv4_fragment";
        break;
      default:
        break;
    }
    p.frame = std::move(f);
  }

  // The nonce source for the next sealed packet: the epochs in turn.
  crypto::NonceSource& next_nonces() {
    if (extra_nonces_.empty()) return nonces_;
    const std::size_t i = epoch_turn_++ % (extra_nonces_.size() + 1);
    return i == 0 ? nonces_ : extra_nonces_[i - 1];
  }

  const GenOptions& o_;
  Rng rng_;
  crypto::NonceSource nonces_;
  std::vector<crypto::NonceSource> extra_nonces_;
  crypto::Receiver receiver_;                                // the gateway: what sealed packets are bound to
  crypto::Receiver other_receiver_;                          // another member (wrong_receiver)
  bool for_other_ = false;                                   // seal() binds to other_receiver_
  bool abuse_ = false;                                       // seal() makes class_abuse content under an urgent header
  std::vector<std::uint8_t> drain_dgram_;                    // the one tampered datagram the drain kind repeats
  crypto::NonceSource drain_nonces_{0xD7A1D7A1D7A1D7A1ULL};  // its sender's epoch
  static constexpr std::size_t kSpoofedDrainDatagrams = 16;
  std::vector<std::vector<std::uint8_t>> spoofed_dgrams_;  // drain_spoofed's, sealed on first use
  crypto::NonceSource spoofed_nonces_{0x5B00F5B00F5B00F5ULL};
  crypto::NonceSource* nonce_override_ = nullptr;  // seal() uses it when set
  std::size_t epoch_turn_ = 0;
  std::vector<crypto::Key> keys_;
  std::uint64_t cluster_id_;
  std::uint64_t foreign_id_;
  bool v6_;
  IpAddr src_base_;
  std::uint16_t ip_id_ = 0;
  std::vector<const std::vector<std::uint8_t>*> corpus_;
  std::size_t corpus_pos_ = 0;
  std::size_t valid_seq_ = 0;
  std::vector<Frame> recent_valid_;
  std::size_t recent_pos_ = 0;
  std::uint64_t flood_seen_ = 0;

  // The UDP payload of a frame this generator built (no VLAN tag).
  std::size_t label_of(const Frame& f) const {
    const std::size_t off = udp_payload_offset(v6_);
    if (f.size() < off) return kUnmatched;
    const std::size_t udp_len = load_be16(f.data() + l4_offset(v6_) + 4);
    if (udp_len < kUdpHeaderBytes || off + udp_len - kUdpHeaderBytes > f.size()) return kUnmatched;
    return unkeyed_label(f.data() + off, udp_len - kUdpHeaderBytes);
  }
};

}  // namespace

void check_options(const GenOptions& o) {
  const auto count = [&](Kind k) { return o.mix[static_cast<std::size_t>(k)]; };
  std::uint64_t total = 0;
  for (const std::uint32_t n : o.mix) total += n;
  if (total > kMaxPackets) {
    throw GenError("too many packets: " + std::to_string(total) + " (at most " + std::to_string(kMaxPackets) + ")");
  }
  if (o.cluster.empty()) throw GenError("no cluster name");
  if (o.keys.empty()) throw GenError("no key: give at least one");
  if (count(Kind::kValidSecondary) > 0 && o.keys.size() < 2) {
    throw GenError("valid_secondary needs a second key");
  }
  if (o.foreign_cluster == o.cluster) {
    throw GenError("foreign cluster '" + o.foreign_cluster + "' is our own cluster");
  }
  if (o.dst_port == 0) throw GenError("destination port 0");
  if (o.nonce_epochs == 0 || o.nonce_epochs > 1'000'000) throw GenError("nonce epochs must be 1..1000000");
  if (count(Kind::kReplayed) > 0 && count(Kind::kValid) == 0) {
    throw GenError("replayed needs valid packets to copy");
  }
  if (count(Kind::kStale) > 0 &&
      (o.timestamp <= o.replay_window_s + 3601 || o.timestamp > UINT32_MAX - o.replay_window_s - 3601)) {
    throw GenError("stale needs a timestamp more than an hour plus the replay window from either end");
  }
  if (o.src_ip && o.src_ip->v6 != o.dst_ip.v6) {
    throw GenError("source and destination addresses are of different families");
  }
  if (o.max_payload < crypto::kTagBytes + 1) throw GenError("max payload too small");
  if (count(Kind::kUnkeyedMemberlist) > 0) {
    const std::size_t room = kMaxFrameBytes - udp_payload_offset(o.dst_ip.v6);
    const bool usable = std::any_of(o.corpus.begin(), o.corpus.end(), [&](const auto& p) {
      const bool ours = p.size() >= 4 && std::equal(crypto::kWireMagic.begin(), crypto::kWireMagic.end(), p.begin());
      return !ours && p.size() <= room;
    });
    if (!usable) throw GenError("unkeyed_memberlist needs a corpus with usable UDP payloads (--corpus)");
  }
  // Fail here with a clear message rather than inside Key's constructor.
  if (o.suite == crypto::Suite::kAes256Gcm && !crypto::aes256gcm_available()) {
    throw GenError("AES-256-GCM is not available on this CPU (needs AES-NI and PCLMUL)");
  }
}

std::string_view kind_name(Kind k) noexcept { return kKindNames[static_cast<std::size_t>(k)]; }

std::optional<Kind> parse_kind_name(std::string_view name) noexcept {
  for (std::size_t i = 0; i < kKindCount; ++i) {
    if (kKindNames[i] == name) return static_cast<Kind>(i);
  }
  return std::nullopt;
}

std::string_view verdict_name(Verdict v) noexcept { return kVerdictNames[static_cast<std::size_t>(v)]; }

Verdict expected_verdict(Kind k) noexcept {
  switch (k) {
    case Kind::kValid:
    case Kind::kValidSecondary:
    case Kind::kFlood:
      return Verdict::kAccepted;
    case Kind::kReplayed:
      return Verdict::kDropReplay;
    case Kind::kStale:
      return Verdict::kDropStale;
    case Kind::kForeign:
      return Verdict::kDropForeignCluster;
    case Kind::kUnknownKey:
      return Verdict::kDropUnknownKey;
    case Kind::kForgedHeader:
      return Verdict::kDropBadMac;
    case Kind::kForgedTag:
    case Kind::kForgedCiphertext:
      return Verdict::kDropBadAuth;
    case Kind::kUnkeyedRandom:
    case Kind::kUnkeyedShort:
    case Kind::kUnkeyedVersion:
    case Kind::kUnkeyedMemberlist:
      return Verdict::kDropUnkeyed;
    case Kind::kNotGossip:
      return Verdict::kDropNotGossip;
    case Kind::kMalformed:
      return Verdict::kDropMalformed;
    case Kind::kWrongReceiver:
      return Verdict::kDropWrongReceiver;
    case Kind::kMartian:
      return Verdict::kDropMartian;
    case Kind::kClassAbuse:
      return Verdict::kAccepted;
    case Kind::kDrain:
    case Kind::kDrainSpoofed:
      return Verdict::kDropAuthRetry;
  }
  return Verdict::kDropMalformed;
}

std::string_view msg_type_name(MsgType t) noexcept { return cp::engine::message_type_name(t); }

crypto::PriorityClass class_of(MsgType t) noexcept {
  switch (t) {
    case MsgType::kDead:
    case MsgType::kLeave:
      return crypto::PriorityClass::kUrgent;
    case MsgType::kPing:
    case MsgType::kAck:
    case MsgType::kIndirectPing:
    case MsgType::kNack:
      return crypto::PriorityClass::kProbe;
    case MsgType::kAlive:
    case MsgType::kSuspect:
    case MsgType::kUserData:
      return crypto::PriorityClass::kGossip;
    case MsgType::kSyncRequest:
    case MsgType::kSyncResponse:
      return crypto::PriorityClass::kBulk;
  }
  return crypto::PriorityClass::kBulk;
}

Mix default_mix(bool have_corpus) noexcept {
  Mix m{};
  const auto set = [&](Kind k, std::uint32_t n) { m[static_cast<std::size_t>(k)] = n; };
  set(Kind::kValid, 200);
  set(Kind::kValidSecondary, 0);
  set(Kind::kForeign, 50);
  set(Kind::kUnknownKey, 30);
  set(Kind::kForgedHeader, 30);
  set(Kind::kForgedTag, 30);
  set(Kind::kForgedCiphertext, 30);
  set(Kind::kUnkeyedRandom, 50);
  set(Kind::kUnkeyedShort, 20);
  set(Kind::kUnkeyedVersion, 10);
  set(Kind::kUnkeyedMemberlist, have_corpus ? 50 : 0);
  set(Kind::kNotGossip, 40);
  set(Kind::kMalformed, 60);
  return m;
}

Mix parse_mix(std::string_view spec) {
  Mix m{};
  std::array<bool, kKindCount> seen{};
  if (spec.empty()) throw GenError("--mix: empty");
  while (!spec.empty()) {
    const std::size_t comma = spec.find(',');
    const std::string_view item = spec.substr(0, comma);
    spec = comma == std::string_view::npos ? std::string_view{} : spec.substr(comma + 1);
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      throw GenError("--mix: '" + std::string(item) + "' is not kind=count");
    }
    const std::string_view name = item.substr(0, eq);
    const std::string_view num = item.substr(eq + 1);
    const auto kind = parse_kind_name(name);
    if (!kind) throw GenError("--mix: unknown kind '" + std::string(name) + "'");
    const auto idx = static_cast<std::size_t>(*kind);
    if (seen[idx]) throw GenError("--mix: kind '" + std::string(name) + "' given twice");
    seen[idx] = true;
    std::uint32_t n = 0;
    const auto [ptr, ec] = std::from_chars(num.data(), num.data() + num.size(), n);
    if (num.empty() || ec != std::errc{} || ptr != num.data() + num.size()) {
      throw GenError("--mix: count '" + std::string(num) + "' of '" + std::string(name) +
                     "' is not a non-negative integer");
    }
    m[idx] = n;
  }
  return m;
}

void generate(const GenOptions& opts, const std::function<void(const Packet&)>& sink) {
  check_options(opts);
  Generator g(opts);
  g.run(sink);
}

std::vector<Packet> generate(const GenOptions& opts) {
  std::vector<Packet> out;
  generate(opts, [&](const Packet& p) { out.push_back(p); });
  return out;
}

void TruthCounts::add(const Packet& p) noexcept {
  ++packets_;
  kinds_[static_cast<std::size_t>(p.kind)]++;
  verdicts_[static_cast<std::size_t>(p.verdict)]++;
  if (p.verdict == Verdict::kDropUnkeyed) unkeyed_[p.unkeyed_label]++;
  if (p.verdict != Verdict::kAccepted) return;
  if (p.cls) classes_[static_cast<std::size_t>(*p.cls)]++;
  if (p.class_mismatch) {
    ++class_mismatch_;
    return;
  }
  for (std::size_t t = 0; t < kMsgTypeCount; ++t) messages_[t] += p.messages[t];
}

nlohmann::ordered_json TruthCounts::json(std::uint64_t seed) const {
  nlohmann::ordered_json j;
  j["seed"] = seed;
  j["packets"] = packets_;
  nlohmann::ordered_json jk = nlohmann::ordered_json::object();
  for (std::size_t k = 0; k < kKindCount; ++k) jk[std::string(kKindNames[k])] = kinds_[k];
  j["kinds"] = jk;
  nlohmann::ordered_json e;
  e["rx_total"] = packets_;
  for (std::size_t v = 0; v < kVerdictCount; ++v) e[std::string(kVerdictNames[v])] = verdicts_[v];
  e["drop_ring_full"] = 0;
  e["class_drop_mismatch"] = class_mismatch_;
  for (std::size_t t = 0; t < kMsgTypeCount; ++t)
    e["msg_" + std::string(msg_type_name(static_cast<MsgType>(t)))] = messages_[t];
  e["msg_decode_error"] = 0;
  j["expected"] = e;
  nlohmann::ordered_json jc;
  for (std::size_t c = 0; c < crypto::kClassCount; ++c) jc[std::string(kClassNames[c])] = classes_[c];
  j["classes"] = jc;
  nlohmann::ordered_json ju;
  for (std::size_t l = 0; l < kUnkeyedLabelCount; ++l) ju[std::string(kUnkeyedLabels[l])] = unkeyed_[l];
  j["unkeyed"] = ju;
  return j;
}

const std::array<std::string_view, kUnkeyedLabelCount>& unkeyed_labels() noexcept { return kUnkeyedLabels; }

std::size_t unkeyed_label(const std::uint8_t* payload, std::size_t len) noexcept {
  const std::size_t n = std::min(len, kScanBytes);
  const auto at = [&](std::size_t i, unsigned lo, unsigned hi) {
    return i < n && payload[i] >= lo && payload[i] <= hi;
  };
  // A msgpack fixmap whose first key is a short string starting with a
  // capital: how Go's msgpack codec writes memberlist's message structs.
  const auto go_map = [&](std::size_t i) { return at(i, 0x81, 0x8f) && at(i + 1, 0xa1, 0xbf) && at(i + 2, 'A', 'Z'); };
  static constexpr char kWeave[] = "weave";
  if (n >= 7 && std::equal(kWeave, kWeave + 5, payload) && at(5, 1, 2) && at(6, 1, 2)) return 12;
  // hasCrc (12): four bytes of CRC32 in front of the message.
  const std::size_t m = at(0, 0x0c, 0x0c) ? 5 : 0;
  if (m >= n) return kUnmatched;
  switch (payload[m]) {
    case 0:
    case 1:
    case 2:
    case 3:
    case 4:
    case 5:
    case 6:
      return go_map(m + 1) ? payload[m] : kUnmatched;
    case 7: {  // compound: count, count uint16 lengths, first message
      if (!at(m + 1, 1, 16)) return kUnmatched;
      const std::size_t first = m + 2 + 2 * std::size_t{payload[m + 1]};
      return at(first, 0, 0x0b) && go_map(first + 1) ? 7 : kUnmatched;
    }
    case 8:  // user message carrying a Serf message
      return at(m + 1, 0, 9) && go_map(m + 2) ? 8 : kUnmatched;
    case 9:
      return go_map(m + 1) ? 9 : kUnmatched;
    case 11:
      return go_map(m + 1) ? 10 : kUnmatched;
    case 13:
      return go_map(m + 1) ? 11 : kUnmatched;
    default:
      return kUnmatched;
  }
}

nlohmann::ordered_json truth_json(const GenOptions& opts, const std::vector<Packet>& packets) {
  TruthCounts t;
  for (const Packet& p : packets) t.add(p);
  return t.json(opts.seed);
}

}  // namespace gw::perf
