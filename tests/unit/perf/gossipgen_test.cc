// gossipgen re-checked from the outside: every frame is parsed again here with
// a parser written independently of perf/gossipgen (Ethernet, IPv4/IPv6, UDP,
// then the wire header, header MAC, AEAD open and protobuf decode), and each
// packet must fail at exactly the stage its kind claims.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <pcap/pcap.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "crypto/keys.h"
#include "crypto/wire_header.h"
#include "gossip.pb.h"
#include "perf/gossipgen/frames.h"
#include "perf/gossipgen/generator.h"
#include "perf/gossipgen/pcap_io.h"

extern char** environ;

namespace gw::perf {
namespace {

namespace fs = std::filesystem;
using crypto::KeyBytes;
using crypto::PriorityClass;
using crypto::Suite;

// ---- helpers ---------------------------------------------------------------

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "gossipgenXXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string file(const std::string& name) const { return (fs::path(path_) / name).string(); }

 private:
  std::string path_;
};

std::uint16_t be16(const std::uint8_t* p) { return static_cast<std::uint16_t>((p[0] << 8) | p[1]); }

// Independent RFC 1071 sum (not the generator's): returns the folded sum, not inverted.
std::uint32_t ones_sum(const std::uint8_t* p, std::size_t n, std::uint32_t sum = 0) {
  for (std::size_t i = 0; i + 1 < n; i += 2) sum += be16(p + i);
  if (n % 2 != 0) sum += static_cast<std::uint32_t>(p[n - 1]) << 8;
  while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
  return sum;
}

KeyBytes random_key() {
  KeyBytes k{};
  randombytes_buf(k.data(), k.size());
  return k;
}

Suite best_suite() { return crypto::aes256gcm_available() ? Suite::kAes256Gcm : Suite::kChaCha20Poly1305; }

GenOptions base_options(const std::string& dst, Suite suite) {
  GenOptions o;
  o.seed = 42;
  o.cluster = "demo";
  o.keys = {random_key(), random_key()};
  o.suite = suite;
  o.dst_ip = *parse_ip(dst);
  o.dst_port = 7946;
  o.mix = default_mix(false);
  o.mix[static_cast<std::size_t>(Kind::kValidSecondary)] = 40;
  return o;
}

// What the independent parser found.
struct Outcome {
  Verdict verdict = Verdict::kDropMalformed;
  std::uint32_t key_id = 0;
  PriorityClass cls = PriorityClass::kBulk;
  std::array<std::uint32_t, kMsgTypeCount> messages{};
  bool decode_error = false;
  bool class_matches = false;
};

class Reference {
 public:
  explicit Reference(const GenOptions& o)
      : dst_(o.dst_ip),
        port_(o.dst_port),
        cluster_id_(crypto::derive_cluster_id(o.cluster)),
        max_payload_(o.max_payload) {
    for (std::size_t i = 0; i < o.keys.size(); ++i) ring_.add(crypto::Key(o.keys[i], o.suite), i == 0);
  }

  Outcome classify(const Frame& f) const {
    Outcome out;
    const std::size_t n = f.size();
    if (n < 14) return with(out, Verdict::kDropMalformed);
    const std::uint16_t et = be16(f.data() + 12);
    std::size_t l4 = 0;
    std::size_t ip_end = 0;
    if (et == 0x0800) {
      if (n < 34) return with(out, Verdict::kDropMalformed);
      const std::uint8_t* ip = f.data() + 14;
      const std::size_t ihl = static_cast<std::size_t>(ip[0] & 0x0F) * 4;
      const std::size_t total = be16(ip + 2);
      if ((ip[0] >> 4) != 4 || ihl < 20 || total < ihl || 14 + total > n) {
        return with(out, Verdict::kDropMalformed);
      }
      if (dst_.v6 || std::memcmp(ip + 16, dst_.bytes.data(), 4) != 0) return with(out, Verdict::kDropNotGossip);
      if (ip[9] != 17) return with(out, Verdict::kDropNotGossip);
      if ((be16(ip + 6) & 0x3FFF) != 0) return with(out, Verdict::kDropMalformed);
      l4 = 14 + ihl;
      ip_end = 14 + total;
    } else if (et == 0x86DD) {
      if (n < 54) return with(out, Verdict::kDropMalformed);
      const std::uint8_t* ip = f.data() + 14;
      if ((ip[0] >> 4) != 6 || 54u + be16(ip + 4) > n) return with(out, Verdict::kDropMalformed);
      if (!dst_.v6 || std::memcmp(ip + 24, dst_.bytes.data(), 16) != 0) return with(out, Verdict::kDropNotGossip);
      if (ip[6] != 17) return with(out, Verdict::kDropNotGossip);
      l4 = 54;
      ip_end = 54u + be16(ip + 4);
    } else {
      return with(out, Verdict::kDropNotGossip);
    }
    if (ip_end < l4 + 8) return with(out, Verdict::kDropMalformed);
    const std::size_t udp_len = be16(f.data() + l4 + 4);
    if (udp_len < 8 || l4 + udp_len > ip_end) return with(out, Verdict::kDropMalformed);
    if (be16(f.data() + l4 + 2) != port_) return with(out, Verdict::kDropNotGossip);
    // Sources no member can have (issue 17), written out independently.
    const std::uint8_t* src = f.data() + (et == 0x0800 ? 26 : 22);
    if (et == 0x0800) {
      const bool own = std::memcmp(src, dst_.bytes.data(), 4) == 0;
      if (src[0] == 0 || src[0] == 127 || src[0] >= 224 || own) return with(out, Verdict::kDropMartian);
    } else {
      static const std::array<std::uint8_t, 16> kZero{};
      std::array<std::uint8_t, 16> one{};
      one[15] = 1;
      const bool own = std::memcmp(src, dst_.bytes.data(), 16) == 0;
      if (src[0] == 0xFF || std::memcmp(src, kZero.data(), 16) == 0 || std::memcmp(src, one.data(), 16) == 0 || own) {
        return with(out, Verdict::kDropMartian);
      }
    }

    std::vector<std::uint8_t> payload(f.begin() + static_cast<long>(l4 + 8),
                                      f.begin() + static_cast<long>(l4 + udp_len));
    crypto::WireHeader h;
    switch (crypto::parse_header(payload.data(), payload.size(), &h)) {
      case crypto::HeaderStatus::kOk:
        break;
      case crypto::HeaderStatus::kTooShort:
      case crypto::HeaderStatus::kBadMagic:
      case crypto::HeaderStatus::kBadVersion:
        return with(out, Verdict::kDropUnkeyed);
      case crypto::HeaderStatus::kBadField:
      case crypto::HeaderStatus::kBadLength:
        return with(out, Verdict::kDropMalformed);
    }
    out.key_id = h.key_id;
    if (h.payload_len > max_payload_) return with(out, Verdict::kDropMalformed);
    if (h.cluster_id != cluster_id_) return with(out, Verdict::kDropForeignCluster);
    const crypto::Key* key = ring_.find(h.key_id);
    if (key == nullptr) return with(out, Verdict::kDropUnknownKey);
    if (!key->verify_header_mac(payload.data())) return with(out, Verdict::kDropBadMac);
    // Wire version 2: sealed for us (the gateway's address and port) or not.
    const crypto::Receiver me = crypto::receiver_of(dst_.bytes.data(), dst_.v6 ? 16 : 4, port_);
    if (h.receiver != me.tag) return with(out, Verdict::kDropWrongReceiver);
    std::uint8_t* body = payload.data() + crypto::kHeaderBytes;
    if (!key->open_in_place(payload.data(), h.nonce, body, h.payload_len, me)) {
      return with(out, Verdict::kDropBadAuth);
    }
    proto::Compound c;
    if (!c.ParseFromArray(body, static_cast<int>(h.payload_len - crypto::kTagBytes)) || c.messages_size() == 0) {
      out.decode_error = true;
      return with(out, Verdict::kAccepted);
    }
    PriorityClass most_urgent = PriorityClass::kBulk;
    for (const proto::Message& m : c.messages()) {
      std::size_t t = 0;
      PriorityClass cls = PriorityClass::kBulk;
      switch (m.body_case()) {
        case proto::Message::kPing:
          t = 0;
          cls = PriorityClass::kProbe;
          break;
        case proto::Message::kAck:
          t = 1;
          cls = PriorityClass::kProbe;
          break;
        case proto::Message::kIndirectPing:
          t = 2;
          cls = PriorityClass::kProbe;
          break;
        case proto::Message::kNack:
          t = 3;
          cls = PriorityClass::kProbe;
          break;
        case proto::Message::kAlive:
          t = 4;
          cls = PriorityClass::kGossip;
          break;
        case proto::Message::kSuspect:
          t = 5;
          cls = PriorityClass::kGossip;
          break;
        case proto::Message::kDead:
          t = 6;
          cls = PriorityClass::kUrgent;
          break;
        case proto::Message::kLeave:
          t = 7;
          cls = PriorityClass::kUrgent;
          break;
        case proto::Message::kSyncRequest:
          t = 8;
          cls = PriorityClass::kBulk;
          break;
        case proto::Message::kSyncResponse:
          t = 9;
          cls = PriorityClass::kBulk;
          break;
        case proto::Message::kUserData:
          t = 10;
          cls = PriorityClass::kGossip;
          break;
        case proto::Message::BODY_NOT_SET:
          out.decode_error = true;
          break;
      }
      out.messages[t]++;
      if (static_cast<int>(cls) < static_cast<int>(most_urgent)) most_urgent = cls;
    }
    out.cls = h.cls;
    out.class_matches = h.cls == most_urgent;
    return with(out, Verdict::kAccepted);
  }

  std::uint32_t key_id(std::size_t i) const { return ring_.ids()[i]; }
  bool in_ring(std::uint32_t id) const { return ring_.find(id) != nullptr; }

 private:
  static Outcome with(Outcome o, Verdict v) {
    o.verdict = v;
    return o;
  }

  IpAddr dst_;
  std::uint16_t port_;
  std::uint64_t cluster_id_;
  std::size_t max_payload_;
  crypto::Keyring ring_;
};

// Checksums a well-formed frame must carry: IPv4 header always (when present),
// UDP for every frame whose lengths are consistent.
void expect_checksums(const Frame& f, const Packet& p) {
  if (f.size() < 34 || be16(f.data() + 12) != 0x0800) return;
  const std::uint8_t* ip = f.data() + 14;
  const std::size_t ihl = std::max<std::size_t>(20, static_cast<std::size_t>(ip[0] & 0x0F) * 4);
  EXPECT_EQ(ones_sum(ip, ihl), 0xFFFFu) << "IPv4 header checksum, variant " << p.variant;
}

void expect_udp_checksum(const Frame& f) {
  const bool v6 = be16(f.data() + 12) == 0x86DD;
  const std::uint8_t* ip = f.data() + 14;
  const std::size_t l4 = v6 ? 54 : 14 + static_cast<std::size_t>(ip[0] & 0x0F) * 4;
  if ((v6 ? ip[6] : ip[9]) != 17) return;
  const std::size_t udp_len = be16(f.data() + l4 + 4);
  std::uint32_t sum = 17 + static_cast<std::uint32_t>(udp_len);
  sum = v6 ? ones_sum(ip + 8, 32, sum) : ones_sum(ip + 12, 8, sum);
  EXPECT_EQ(ones_sum(f.data() + l4, udp_len, sum), 0xFFFFu) << "UDP checksum";
  EXPECT_NE(be16(f.data() + l4 + 6), 0) << "UDP checksum present";
}

// Checks every packet against the reference parser and returns the verdict
// and message totals it found.
struct Totals {
  std::array<std::uint64_t, kVerdictCount> verdicts{};
  std::array<std::uint64_t, kMsgTypeCount> messages{};
  std::array<std::uint64_t, crypto::kClassCount> classes{};
  std::map<Kind, std::set<std::string>> variants;
  std::uint64_t class_mismatch = 0;
};

Totals check_all(const GenOptions& o, const std::vector<Packet>& packets) {
  const Reference ref(o);
  Totals t;
  for (std::size_t i = 0; i < packets.size(); ++i) {
    const Packet& p = packets[i];
    SCOPED_TRACE("packet " + std::to_string(i) + " kind " + std::string(kind_name(p.kind)) + " variant " +
                 std::string(p.variant));
    EXPECT_LE(p.frame.size(), kMaxFrameBytes);
    EXPECT_EQ(p.verdict, expected_verdict(p.kind));
    const Outcome got = ref.classify(p.frame);
    EXPECT_EQ(verdict_name(got.verdict), verdict_name(p.verdict));
    expect_checksums(p.frame, p);
    if (got.verdict != Verdict::kDropMalformed && p.frame.size() >= 34 &&
        (be16(p.frame.data() + 12) == 0x0800 || be16(p.frame.data() + 12) == 0x86DD)) {
      expect_udp_checksum(p.frame);
    }
    t.verdicts[static_cast<std::size_t>(got.verdict)]++;
    t.variants[p.kind].insert(std::string(p.variant));
    switch (p.kind) {
      case Kind::kValid:
        EXPECT_EQ(got.key_id, ref.key_id(0));
        break;
      case Kind::kValidSecondary:
        EXPECT_EQ(got.key_id, ref.key_id(1));
        break;
      case Kind::kForeign:
        if (p.variant == "primary_key") {
          EXPECT_EQ(got.key_id, ref.key_id(0));
        } else {
          EXPECT_FALSE(ref.in_ring(got.key_id));
        }
        break;
      default:
        break;
    }
    if (got.verdict == Verdict::kAccepted && p.class_mismatch) {
      // class_abuse: urgent header, content that is not (the control lcore drops it).
      EXPECT_FALSE(got.class_matches);
      EXPECT_EQ(got.cls, PriorityClass::kUrgent);
      EXPECT_EQ(got.messages[static_cast<std::size_t>(MsgType::kDead)], 0u);
      EXPECT_EQ(got.messages[static_cast<std::size_t>(MsgType::kLeave)], 0u);
      EXPECT_EQ(got.messages[static_cast<std::size_t>(MsgType::kAlive)], 0u);
      t.classes[static_cast<std::size_t>(got.cls)]++;
      ++t.class_mismatch;
    } else if (got.verdict == Verdict::kAccepted) {
      EXPECT_FALSE(got.decode_error);
      EXPECT_TRUE(got.class_matches);
      EXPECT_TRUE(p.cls.has_value());
      EXPECT_EQ(p.cls.value_or(PriorityClass::kBulk), got.cls);
      EXPECT_EQ(p.messages, got.messages);
      for (std::size_t m = 0; m < kMsgTypeCount; ++m) t.messages[m] += got.messages[m];
      t.classes[static_cast<std::size_t>(got.cls)]++;
    }
  }
  return t;
}

std::uint64_t mix_total(const Mix& m) {
  std::uint64_t n = 0;
  for (auto c : m) n += c;
  return n;
}

void expect_truth_matches(const GenOptions& o, const std::vector<Packet>& packets, const Totals& t) {
  const auto j = truth_json(o, packets);
  const std::uint64_t total = packets.size();
  EXPECT_EQ(j["packets"].get<std::uint64_t>(), total);
  EXPECT_EQ(j["seed"].get<std::uint64_t>(), o.seed);
  std::uint64_t kinds = 0;
  for (std::size_t k = 0; k < kKindCount; ++k) {
    const auto& v = j["kinds"][std::string(kind_name(static_cast<Kind>(k)))];
    EXPECT_EQ(v.get<std::uint64_t>(), o.mix[k]);
    kinds += v.get<std::uint64_t>();
  }
  EXPECT_EQ(kinds, total);
  EXPECT_EQ(j["kinds"].size(), kKindCount);
  const auto& e = j["expected"];
  EXPECT_EQ(e["rx_total"].get<std::uint64_t>(), total);
  std::uint64_t verdicts = 0;
  for (std::size_t v = 0; v < kVerdictCount; ++v) {
    const auto name = std::string(verdict_name(static_cast<Verdict>(v)));
    EXPECT_EQ(e[name].get<std::uint64_t>(), t.verdicts[v]) << name;
    verdicts += e[name].get<std::uint64_t>();
  }
  EXPECT_EQ(verdicts, total);
  EXPECT_EQ(e["drop_ring_full"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(e["msg_decode_error"].get<std::uint64_t>(), 0u);
  for (std::size_t m = 0; m < kMsgTypeCount; ++m) {
    const auto name = "msg_" + std::string(msg_type_name(static_cast<MsgType>(m)));
    EXPECT_EQ(e[name].get<std::uint64_t>(), t.messages[m]) << name;
  }
  EXPECT_EQ(e["class_drop_mismatch"].get<std::uint64_t>(), t.class_mismatch);
  EXPECT_EQ(e.size(), 1 + kVerdictCount + 1 + 1 + kMsgTypeCount + 1);
  std::uint64_t classes = 0;
  const char* names[] = {"urgent", "probe", "gossip", "bulk"};
  for (std::size_t c = 0; c < 4; ++c) {
    EXPECT_EQ(j["classes"][names[c]].get<std::uint64_t>(), t.classes[c]) << names[c];
    classes += t.classes[c];
  }
  EXPECT_EQ(classes, e["accepted"].get<std::uint64_t>());
  EXPECT_EQ(j["unkeyed"].size(), kUnkeyedLabelCount);
  std::uint64_t unkeyed = 0;
  for (const auto& [name, n] : j["unkeyed"].items()) unkeyed += n.get<std::uint64_t>();
  EXPECT_EQ(unkeyed, e["drop_unkeyed"].get<std::uint64_t>());
  EXPECT_EQ(j.size(), 6u);
}

std::vector<std::uint8_t> bytes_of(const std::string& s) { return {s.begin(), s.end()}; }

// A small corpus of "other protocol" payloads, as a memberlist capture would give.
std::vector<std::vector<std::uint8_t>> fake_corpus() {
  return {bytes_of("\x01\x02\x03 memberlist ping"), bytes_of(std::string(400, 'm')),
          bytes_of("GSGW this one is skipped: it starts with our magic"), bytes_of("\x0c compressed")};
}

// ---- the generator, parsed back -------------------------------------------

struct FamilyCase {
  const char* dst;
  bool aes;
};

class GeneratorTest : public ::testing::TestWithParam<FamilyCase> {
 protected:
  static void SetUpTestSuite() { ASSERT_TRUE(crypto::init()); }
};

TEST_P(GeneratorTest, EveryPacketFailsAtTheStageItsKindClaims) {
  const Suite suite = GetParam().aes ? best_suite() : Suite::kChaCha20Poly1305;
  for (const std::uint64_t seed : {1ULL, 2ULL, 1234567ULL}) {
    GenOptions o = base_options(GetParam().dst, suite);
    o.seed = seed;
    o.corpus = fake_corpus();
    o.mix[static_cast<std::size_t>(Kind::kUnkeyedMemberlist)] = 20;
    o.mix[static_cast<std::size_t>(Kind::kMalformed)] = 300;
    o.mix[static_cast<std::size_t>(Kind::kNotGossip)] = 120;
    const auto packets = generate(o);
    ASSERT_EQ(packets.size(), mix_total(o.mix));
    const Totals t = check_all(o, packets);
    expect_truth_matches(o, packets, t);

    // Every sub-case shows up in a mix this large.
    const bool v6 = o.dst_ip.v6;
    EXPECT_EQ(t.variants.at(Kind::kMalformed).size(), v6 ? 14u : 16u);
    EXPECT_EQ(t.variants.at(Kind::kNotGossip).size(), 6u);
    EXPECT_EQ(t.variants.at(Kind::kForeign), (std::set<std::string>{"primary_key", "other_key"}));
    // All 11 message types appear in the valid packets.
    for (std::size_t m = 0; m < kMsgTypeCount; ++m) EXPECT_GT(t.messages[m], 0u) << m;
    for (std::size_t c = 0; c < 4; ++c) EXPECT_GT(t.classes[c], 0u) << c;
  }
}

TEST_P(GeneratorTest, SizedFramesHitTheTargetAndStayWithinLimits) {
  const Suite suite = GetParam().aes ? best_suite() : Suite::kChaCha20Poly1305;
  for (const std::size_t size : {128u, 512u, 1400u, 1514u, 9000u}) {
    GenOptions o = base_options(GetParam().dst, suite);
    o.frame_size = size;
    const auto packets = generate(o);
    const Totals t = check_all(o, packets);
    expect_truth_matches(o, packets, t);
    const std::size_t max_frame = udp_payload_offset(o.dst_ip.v6) + crypto::kHeaderBytes + o.max_payload;
    for (const Packet& p : packets) {
      if (p.kind != Kind::kValid && p.kind != Kind::kForeign && p.kind != Kind::kForgedTag) continue;
      const std::size_t want = std::min(size, max_frame);
      EXPECT_LE(p.frame.size(), std::max(want, max_frame));
      // One message can be longer than a small target; from 512 bytes on the
      // padding lands within a few bytes under it.
      if (size >= 512) {
        EXPECT_LE(p.frame.size(), want) << kind_name(p.kind);
        EXPECT_GE(p.frame.size() + 3, want) << kind_name(p.kind);
      }
    }
  }
}

TEST_P(GeneratorTest, SameSeedSameBytesOtherSeedOtherBytes) {
  const Suite suite = GetParam().aes ? best_suite() : Suite::kChaCha20Poly1305;
  GenOptions o = base_options(GetParam().dst, suite);
  const auto a = generate(o);
  const auto b = generate(o);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i].frame, b[i].frame) << i;
  EXPECT_EQ(truth_json(o, a).dump(), truth_json(o, b).dump());

  o.seed = 43;
  const auto c = generate(o);
  ASSERT_EQ(a.size(), c.size());
  std::size_t differ = 0;
  for (std::size_t i = 0; i < a.size(); ++i) differ += a[i].frame != c[i].frame ? 1 : 0;
  EXPECT_GT(differ, a.size() / 2);
}

INSTANTIATE_TEST_SUITE_P(Families, GeneratorTest,
                         ::testing::Values(FamilyCase{"10.0.0.1", false}, FamilyCase{"10.0.0.1", true},
                                           FamilyCase{"fd00::1", false}, FamilyCase{"fd00::1", true}),
                         [](const auto& param_info) {
                           return std::string(param_info.param.dst[0] == 'f' ? "ipv6" : "ipv4") +
                                  (param_info.param.aes ? "_best_suite" : "_chacha");
                         });

TEST(GeneratorOptions, PacketsAreShuffledAcrossKinds) {
  ASSERT_TRUE(crypto::init());
  const GenOptions o = base_options("10.0.0.1", Suite::kChaCha20Poly1305);
  const auto packets = generate(o);
  std::size_t changes = 0;
  for (std::size_t i = 1; i < packets.size(); ++i) changes += packets[i].kind != packets[i - 1].kind ? 1 : 0;
  EXPECT_GT(changes, packets.size() / 3);
}

TEST(GeneratorOptions, SourcesVaryWithinTheSlash24) {
  ASSERT_TRUE(crypto::init());
  GenOptions o = base_options("10.0.0.1", Suite::kChaCha20Poly1305);
  o.src_ip = parse_ip("192.168.7.9");
  std::set<std::uint8_t> hosts;
  for (const Packet& p : generate(o)) {
    if (p.kind != Kind::kValid) continue;
    const std::uint8_t* src = p.frame.data() + 14 + 12;
    EXPECT_EQ(src[0], 192);
    EXPECT_EQ(src[1], 168);
    EXPECT_EQ(src[2], 7);
    hosts.insert(src[3]);
  }
  EXPECT_GT(hosts.size(), 50u);
}

TEST(GeneratorOptions, RefusesWhatItCannotMeet) {
  ASSERT_TRUE(crypto::init());
  GenOptions o = base_options("10.0.0.1", Suite::kChaCha20Poly1305);
  o.keys.resize(1);
  EXPECT_THROW(generate(o), GenError);  // valid_secondary=40 with one key
  o.mix = default_mix(false);
  EXPECT_NO_THROW(generate(o));
  o.foreign_cluster = o.cluster;
  EXPECT_THROW(generate(o), GenError);
  o.foreign_cluster = "x";
  o.mix[static_cast<std::size_t>(Kind::kUnkeyedMemberlist)] = 1;
  EXPECT_THROW(generate(o), GenError);  // no corpus
  o.corpus = {bytes_of("GSGW only our own magic")};
  EXPECT_THROW(generate(o), GenError);  // nothing usable in it
  o.corpus = fake_corpus();
  EXPECT_NO_THROW(generate(o));
  o.src_ip = parse_ip("fd00::2");
  EXPECT_THROW(generate(o), GenError);  // families differ
}

// ---- kinds for the stateful ladder steps ----------------------------------

// Issue 17 item 1: the drain kind repeats one tampered datagram for us from
// a member's address; the reference parser calls every copy bad_auth (it
// keeps no state), the truth says the gateway tries the AEAD once.
TEST(GeneratorGuardKinds, DrainRepeatsOneTamperedDatagramFromAMember) {
  ASSERT_TRUE(crypto::init());
  GenOptions o = base_options("10.0.0.1", Suite::kChaCha20Poly1305);
  o.mix = Mix{};
  o.mix[static_cast<std::size_t>(Kind::kValid)] = 50;
  o.mix[static_cast<std::size_t>(Kind::kDrain)] = 40;
  const Reference ref(o);
  const auto packets = generate(o);
  std::size_t copies = 0;
  Frame first;
  for (const Packet& p : packets) {
    if (p.kind != Kind::kDrain) continue;
    EXPECT_EQ(ref.classify(p.frame).verdict, Verdict::kDropBadAuth);
    EXPECT_EQ(p.verdict, copies == 0 ? Verdict::kDropBadAuth : Verdict::kDropAuthRetry);
    // The same datagram (the IP id differs frame to frame).
    const Frame dgram(p.frame.begin() + 42, p.frame.end());
    if (copies == 0) first = dgram;
    EXPECT_EQ(dgram, first);
    EXPECT_EQ(p.frame[14 + 12 + 3], 2);  // from 10.0.0.2
    ++copies;
  }
  EXPECT_EQ(copies, 40u);
}

// The drain attack from many spoofed sources at once: 16 tampered datagrams,
// each copy from a random source; the truth says one AEAD per datagram.
TEST(GeneratorGuardKinds, DrainSpoofedRepeatsSixteenTamperedDatagramsFromManySources) {
  ASSERT_TRUE(crypto::init());
  GenOptions o = base_options("10.0.0.1", Suite::kChaCha20Poly1305);
  o.mix = Mix{};
  o.mix[static_cast<std::size_t>(Kind::kValid)] = 50;
  o.mix[static_cast<std::size_t>(Kind::kDrain)] = 20;
  o.mix[static_cast<std::size_t>(Kind::kDrainSpoofed)] = 400;
  const Reference ref(o);
  const auto packets = generate(o);
  std::set<Frame> datagrams, drain;
  std::set<std::pair<std::uint32_t, std::uint16_t>> sources;
  std::size_t bad_auth = 0, retries = 0;
  for (const Packet& p : packets) {
    const Frame dgram(p.frame.begin() + 42, p.frame.end());
    if (p.kind == Kind::kDrain) drain.insert(dgram);
    if (p.kind != Kind::kDrainSpoofed) continue;
    EXPECT_EQ(ref.classify(p.frame).verdict, Verdict::kDropBadAuth);
    // The first copy of each datagram buys its AEAD; every later one is refused.
    const bool first = datagrams.insert(dgram).second;
    EXPECT_EQ(p.verdict, first ? Verdict::kDropBadAuth : Verdict::kDropAuthRetry);
    (first ? bad_auth : retries) += 1;
    std::uint32_t src = 0;
    std::memcpy(&src, &p.frame[14 + 12], 4);
    sources.emplace(src, static_cast<std::uint16_t>(p.frame[34] << 8 | p.frame[35]));
  }
  EXPECT_EQ(datagrams.size(), 16u);
  EXPECT_EQ(bad_auth, 16u);
  EXPECT_EQ(retries, 384u);
  EXPECT_GT(sources.size(), 390u);  // nearly every copy from a source of its own
  ASSERT_EQ(drain.size(), 1u);
  EXPECT_EQ(datagrams.count(*drain.begin()), 0u);  // not drain's datagram
}

TEST(GeneratorGuardKinds, ReplayedStaleAndFlood) {
  ASSERT_TRUE(crypto::init());
  GenOptions o = base_options("10.0.0.1", Suite::kChaCha20Poly1305);
  o.mix = Mix{};
  o.mix[static_cast<std::size_t>(Kind::kValid)] = 100;
  o.mix[static_cast<std::size_t>(Kind::kReplayed)] = 60;
  o.mix[static_cast<std::size_t>(Kind::kStale)] = 40;
  o.mix[static_cast<std::size_t>(Kind::kFlood)] = 30;
  o.replay_window_s = 45;
  o.unknown_burst = 12;
  const Reference ref(o);
  const auto packets = generate(o);
  ASSERT_EQ(packets.size(), 230u);
  std::set<Frame> valid_so_far;
  std::size_t flood_seen = 0;
  std::size_t past = 0, future = 0;
  for (const Packet& p : packets) {
    switch (p.kind) {
      case Kind::kValid:
        valid_so_far.insert(p.frame);
        break;
      case Kind::kReplayed:
        // Byte for byte an earlier valid frame (the first replay never comes first).
        EXPECT_TRUE(valid_so_far.count(p.frame)) << "replay of a frame not sent before";
        EXPECT_EQ(p.verdict, Verdict::kDropReplay);
        EXPECT_EQ(ref.classify(p.frame).verdict, Verdict::kAccepted);  // statelessly it is valid
        break;
      case Kind::kStale: {
        EXPECT_EQ(p.verdict, Verdict::kDropStale);
        EXPECT_EQ(ref.classify(p.frame).verdict, Verdict::kAccepted);
        const std::uint32_t ts = (std::uint32_t{p.frame[42 + 20]} << 24) | (std::uint32_t{p.frame[42 + 21]} << 16) |
                                 (std::uint32_t{p.frame[42 + 22]} << 8) | p.frame[42 + 23];
        const std::uint32_t off = ts > o.timestamp ? ts - o.timestamp : o.timestamp - ts;
        EXPECT_GT(off, o.replay_window_s);
        (ts > o.timestamp ? future : past)++;
        break;
      }
      case Kind::kFlood: {
        const std::uint8_t* src = p.frame.data() + 14 + 12;
        EXPECT_EQ(std::vector<std::uint8_t>(src, src + 4), (std::vector<std::uint8_t>{198, 18, 0, 1}));
        EXPECT_EQ(ref.classify(p.frame).verdict, Verdict::kAccepted);
        if (flood_seen++ < o.unknown_burst) {
          EXPECT_EQ(p.verdict, Verdict::kAccepted);
          EXPECT_TRUE(p.cls.has_value());
        } else {
          EXPECT_EQ(p.verdict, Verdict::kDropRateLimited);
          EXPECT_FALSE(p.cls.has_value());
        }
        break;
      }
      default:
        ADD_FAILURE() << "unexpected kind";
    }
  }
  EXPECT_GT(past, 5u);
  EXPECT_GT(future, 5u);
  const auto j = truth_json(o, packets);
  EXPECT_EQ(j["expected"]["drop_replay"].get<std::uint64_t>(), 60u);
  EXPECT_EQ(j["expected"]["drop_stale"].get<std::uint64_t>(), 40u);
  EXPECT_EQ(j["expected"]["drop_rate_limited"].get<std::uint64_t>(), 30u - 12u);
  EXPECT_EQ(j["expected"]["accepted"].get<std::uint64_t>(), 100u + 12u);
  // Replays need something to copy.
  o.mix[static_cast<std::size_t>(Kind::kValid)] = 0;
  EXPECT_THROW(generate(o), GenError);
}

// --nonce-epochs (perf/bench/run.sh): sealed packets take the epochs in
// turn, each epoch's counter runs on its own, and 1 is the old output.
TEST(GeneratorOptions, NonceEpochsAreUsedInTurn) {
  ASSERT_TRUE(crypto::init());
  GenOptions o = base_options("10.0.0.1", Suite::kChaCha20Poly1305);
  o.mix = Mix{};
  o.mix[static_cast<std::size_t>(Kind::kValid)] = 12;
  const auto one = generate(o);
  o.nonce_epochs = 1;
  const auto again = generate(o);
  ASSERT_EQ(again.size(), one.size());
  for (std::size_t i = 0; i < one.size(); ++i) EXPECT_EQ(again[i].frame, one[i].frame);
  o.nonce_epochs = 3;
  const auto three = generate(o);
  ASSERT_EQ(three.size(), 12u);
  std::vector<std::uint64_t> epochs;
  std::map<std::uint64_t, std::vector<std::uint32_t>> counters;
  for (const Packet& p : three) {
    const std::size_t off = udp_payload_offset(false);
    crypto::WireHeader h;
    ASSERT_EQ(crypto::parse_header(p.frame.data() + off, p.frame.size() - off, &h), crypto::HeaderStatus::kOk);
    std::uint64_t e = 0;
    for (std::size_t i = 0; i < 8; ++i) e = (e << 8) | h.nonce[i];
    const std::uint32_t c = (std::uint32_t{h.nonce[8]} << 24) | (std::uint32_t{h.nonce[9]} << 16) |
                            (std::uint32_t{h.nonce[10]} << 8) | h.nonce[11];
    epochs.push_back(e);
    counters[e].push_back(c);
  }
  ASSERT_EQ(counters.size(), 3u);
  for (std::size_t i = 3; i < epochs.size(); ++i) EXPECT_EQ(epochs[i], epochs[i - 3]);
  for (const auto& [e, cs] : counters) EXPECT_EQ(cs, (std::vector<std::uint32_t>{0, 1, 2, 3}));
  o.nonce_epochs = 0;
  EXPECT_THROW(check_options(o), GenError);
}

TEST(GeneratorGuardKinds, UnkeyedLabelsDecodeMemberlistFraming) {
  const auto label = [](const std::vector<std::uint8_t>& b) {
    return std::string(unkeyed_labels()[unkeyed_label(b.data(), b.size())]);
  };
  EXPECT_EQ(label({0x00, 0x85, 0xa4, 'N', 'o'}), "memberlist_ping");
  EXPECT_EQ(label({0x0c, 1, 2, 3, 4, 0x02, 0x82, 0xa7, 'P'}), "memberlist_ack");
  EXPECT_EQ(label({0x07, 0x01, 0x00, 0x10, 0x0b, 0x81, 0xa5, 'S'}), "memberlist_compound");
  EXPECT_EQ(label({0x08, 0x03, 0x83, 0xa4, 'L'}), "serf");
  EXPECT_EQ(label({'w', 'e', 'a', 'v', 'e', 1, 2}), "weave_mesh");
  EXPECT_EQ(label({0x00, 0x85, 0xa4, 'n'}), "unmatched");
  EXPECT_EQ(label({}), "unmatched");
  // Only the first 64 bytes count, as in the gateway.
  std::vector<std::uint8_t> late(70, 'x');
  late[0] = 0x07;
  late[1] = 0x20;  // 32 parts: the first message would start past byte 64
  EXPECT_EQ(label(late), "unmatched");
}

TEST(GeneratorOptions, ParseMix) {
  const Mix m = parse_mix("valid=3,malformed=0,not_gossip=12");
  EXPECT_EQ(m[static_cast<std::size_t>(Kind::kValid)], 3u);
  EXPECT_EQ(m[static_cast<std::size_t>(Kind::kNotGossip)], 12u);
  EXPECT_EQ(mix_total(m), 15u);
  EXPECT_THROW(parse_mix("valid=3,bogus=1"), GenError);
  EXPECT_THROW(parse_mix("valid=3,valid=1"), GenError);
  EXPECT_THROW(parse_mix("valid=-1"), GenError);
  EXPECT_THROW(parse_mix("valid="), GenError);
  EXPECT_THROW(parse_mix("valid"), GenError);
  EXPECT_THROW(parse_mix(""), GenError);
  for (std::size_t k = 0; k < kKindCount; ++k) {
    EXPECT_EQ(parse_kind_name(kind_name(static_cast<Kind>(k))), static_cast<Kind>(k));
  }
}

// ---- pcap I/O ---------------------------------------------------------------

void write_capture(const std::string& path, int linktype, const std::vector<Frame>& frames) {
  pcap_t* dead = pcap_open_dead(linktype, 65535);
  ASSERT_NE(dead, nullptr);
  pcap_dumper_t* d = pcap_dump_open(dead, path.c_str());
  ASSERT_NE(d, nullptr);
  for (const Frame& f : frames) {
    pcap_pkthdr h{};
    h.caplen = static_cast<bpf_u_int32>(f.size());
    h.len = h.caplen;
    pcap_dump(reinterpret_cast<u_char*>(d), &h, f.data());
  }
  pcap_dump_close(d);
  pcap_close(dead);
}

TEST(PcapIo, ReadsUdpPayloadsFromEthernetLoopbackAndRawCaptures) {
  TempDir dir;
  Flow flow;
  flow.src = *parse_ip("127.0.0.1");
  flow.dst = flow.src;
  flow.src_port = 1000;
  flow.dst_port = 2000;
  const auto a = bytes_of("first payload");
  const auto b = bytes_of(std::string(300, 'b'));
  const Frame fa = build_udp_frame(flow, a);
  const Frame fb = build_udp_frame(flow, b);
  const Frame arp = build_arp_request(flow);
  const Frame tcp = build_tcp_syn_frame(flow, 1);
  const std::vector<std::vector<std::uint8_t>> want = {a, b};

  write_capture(dir.file("eth.pcap"), DLT_EN10MB, {fa, arp, tcp, fb});
  EXPECT_EQ(read_udp_payloads(dir.file("eth.pcap")), want);

  // Loopback: 4-byte family, then the IP packet (without Ethernet padding).
  const auto strip = [](const Frame& f, std::vector<std::uint8_t> prefix) {
    const std::size_t ip_len = 14u + be16(f.data() + 16);
    prefix.insert(prefix.end(), f.begin() + 14, f.begin() + static_cast<long>(ip_len));
    return prefix;
  };
  write_capture(dir.file("null.pcap"), DLT_NULL, {strip(fa, {2, 0, 0, 0}), strip(fb, {2, 0, 0, 0})});
  EXPECT_EQ(read_udp_payloads(dir.file("null.pcap")), want);
  write_capture(dir.file("raw.pcap"), DLT_RAW, {strip(fa, {}), strip(fb, {})});
  EXPECT_EQ(read_udp_payloads(dir.file("raw.pcap")), want);

  write_capture(dir.file("other.pcap"), DLT_IEEE802_11, {fa});
  EXPECT_THROW(read_udp_payloads(dir.file("other.pcap")), PcapError);
  EXPECT_THROW(read_udp_payloads(dir.file("missing.pcap")), PcapError);
}

TEST(PcapIo, RealMemberlistCorpus) {
  if (!fs::exists(GOSSIPGEN_CORPUS)) GTEST_SKIP() << GOSSIPGEN_CORPUS << " not present";
  ASSERT_TRUE(crypto::init());
  const auto payloads = read_udp_payloads(GOSSIPGEN_CORPUS);
  EXPECT_EQ(payloads.size(), 1383u);
  GenOptions o = base_options("10.0.0.1", Suite::kChaCha20Poly1305);
  o.corpus = payloads;
  o.mix = parse_mix("unkeyed_memberlist=100,valid=10");
  const auto packets = generate(o);
  const Totals t = check_all(o, packets);
  EXPECT_EQ(t.verdicts[static_cast<std::size_t>(Verdict::kDropUnkeyed)], 100u);
  // In corpus order: the first replayed payload is the corpus's first.
  for (const Packet& p : packets) {
    if (p.kind != Kind::kUnkeyedMemberlist) continue;
    const std::vector<std::uint8_t> got(p.frame.begin() + 42,
                                        p.frame.begin() + 42 + static_cast<long>(be16(p.frame.data() + 38) - 8));
    EXPECT_EQ(got, payloads[0]);
    break;
  }
}

// ---- the binary -------------------------------------------------------------

struct RunResult {
  int status = -1;
  std::string err;
};

RunResult run_gossipgen(const std::vector<std::string>& args, const std::string& err_file) {
  std::vector<std::string> argv_s = {GOSSIPGEN_PATH};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : argv_s) argv.push_back(s.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 2, err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  RunResult r;
  const int rc = posix_spawn(&pid, GOSSIPGEN_PATH, &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return r;
  int wstatus = 0;
  if (::waitpid(pid, &wstatus, 0) == pid && WIFEXITED(wstatus)) r.status = WEXITSTATUS(wstatus);
  std::ifstream in(err_file);
  std::stringstream ss;
  ss << in.rdbuf();
  r.err = ss.str();
  return r;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class BinaryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(crypto::init());
    k1_ = dir_.file("k1.key");
    k2_ = dir_.file("k2.key");
    crypto::write_key_file(k1_, false);
    crypto::write_key_file(k2_, false);
  }
  std::vector<std::string> explicit_args(const std::string& out) const {
    return {"--cluster",  "demo",
            "--key",      k1_,
            "--key",      k2_,
            "--suite",    "chacha20poly1305",
            "--dst-ip",   "10.0.0.1",
            "--dst-port", "7946",
            "--out",      out + ".pcap",
            "--truth",    out + ".json",
            "--mix",      "valid=20,valid_secondary=5,malformed=20,foreign=5",
            "--seed",     "7"};
  }
  RunResult run(const std::vector<std::string>& args) { return run_gossipgen(args, dir_.file("stderr")); }

  TempDir dir_;
  std::string k1_;
  std::string k2_;
};

TEST_F(BinaryTest, BadOptionsExitWithStatus2AndOneLine) {
  const std::string out = dir_.file("bad");
  const auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = explicit_args(out);
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  const std::vector<std::vector<std::string>> cases = {
      {"--bogus-flag"},
      {"--out", out + ".pcap"},  // no --truth
      with({"--mix", "valid=1,nonsense=3"}),
      with({"--suite", "rot13"}),
      with({"--dst-ip", "not-an-ip"}),
      with({"--dst-port", "70000"}),
      with({"--seed", "minus-one"}),
      with({"--key", dir_.file("missing.key")}),
      with({"--config", dir_.file("missing.yaml")}),
      with({"--mix", "unkeyed_memberlist=2"}),  // no --corpus
      with({"--corpus", dir_.file("missing.pcap")}),
      with({"--src-ip", "fd00::2"}),
      with({"--foreign-cluster", "demo"}),
      with({"--out", dir_.file("no/such/dir/x.pcap")}),
      {"--out", out + ".pcap", "--truth", out + ".json"},  // no cluster, key, destination
  };
  for (const auto& args : cases) {
    const RunResult r = run(args);
    std::string joined;
    for (const auto& a : args) joined += a + " ";
    EXPECT_EQ(r.status, 2) << joined << "\n" << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << joined << "\n" << r.err;
    EXPECT_EQ(r.err.rfind("gossipgen: ", 0), 0u) << r.err;
  }
  // valid_secondary with only one key.
  const RunResult one_key =
      run({"--cluster", "demo", "--key", k1_, "--suite", "chacha20poly1305", "--dst-ip", "10.0.0.1", "--dst-port",
           "7946", "--out", out + ".pcap", "--truth", out + ".json", "--mix", "valid_secondary=1"});
  EXPECT_EQ(one_key.status, 2) << one_key.err;
  // Refused before any output was created.
  EXPECT_FALSE(fs::exists(out + ".pcap"));
  EXPECT_FALSE(fs::exists(out + ".json"));
}

TEST_F(BinaryTest, WritesWhatTheLibraryGeneratesDeterministically) {
  const std::string a = dir_.file("a");
  const std::string b = dir_.file("b");
  ASSERT_EQ(run(explicit_args(a)).status, 0);
  ASSERT_EQ(run(explicit_args(b)).status, 0);
  EXPECT_EQ(slurp(a + ".pcap"), slurp(b + ".pcap"));
  EXPECT_EQ(slurp(a + ".json"), slurp(b + ".json"));

  GenOptions o;
  o.seed = 7;
  o.cluster = "demo";
  o.keys = {crypto::load_key_file(k1_), crypto::load_key_file(k2_)};
  o.suite = Suite::kChaCha20Poly1305;
  o.dst_ip = *parse_ip("10.0.0.1");
  o.dst_port = 7946;
  o.mix = parse_mix("valid=20,valid_secondary=5,malformed=20,foreign=5");
  const auto packets = generate(o);
  const PcapContents pc = read_pcap(a + ".pcap");
  EXPECT_EQ(pc.linktype, DLT_EN10MB);
  ASSERT_EQ(pc.frames.size(), packets.size());
  for (std::size_t i = 0; i < packets.size(); ++i) EXPECT_EQ(pc.frames[i], packets[i].frame) << i;
  EXPECT_EQ(nlohmann::ordered_json::parse(slurp(a + ".json")), truth_json(o, packets));
  check_all(o, packets);
}

TEST_F(BinaryTest, ConfigSuppliesClusterKeysAndDestination) {
  fs::create_directories(dir_.file("keys"));
  crypto::write_key_file(dir_.file("keys/primary.key"), false);
  crypto::write_key_file(dir_.file("keys/old.key"), false);
  {
    std::ofstream y(dir_.file("gw.yaml"));
    y << "cluster:\n  name: yamlcluster\n  suite: chacha20poly1305\n  keys:\n"
         "    - file: keys/old.key\n    - file: keys/primary.key\n      primary: true\n"
         "node:\n  address: fd00::7\n  port: 8000\nlimits:\n  max_payload_bytes: 1200\n";
  }
  const std::string out = dir_.file("c");
  const RunResult r = run({"--config", dir_.file("gw.yaml"), "--out", out + ".pcap", "--truth", out + ".json", "--mix",
                           "valid=30,valid_secondary=10,malformed=60,forged_tag=5", "--size", "1514"});
  ASSERT_EQ(r.status, 0) << r.err;

  GenOptions o;
  o.seed = 1;
  o.cluster = "yamlcluster";
  o.keys = {crypto::load_key_file(dir_.file("keys/primary.key")), crypto::load_key_file(dir_.file("keys/old.key"))};
  o.suite = Suite::kChaCha20Poly1305;
  o.dst_ip = *parse_ip("fd00::7");
  o.dst_port = 8000;
  o.max_payload = 1200;
  o.frame_size = 1514;
  o.mix = parse_mix("valid=30,valid_secondary=10,malformed=60,forged_tag=5");
  const auto packets = generate(o);
  const PcapContents pc = read_pcap(out + ".pcap");
  ASSERT_EQ(pc.frames.size(), packets.size());
  for (std::size_t i = 0; i < packets.size(); ++i) EXPECT_EQ(pc.frames[i], packets[i].frame) << i;
  const Totals t = check_all(o, packets);
  EXPECT_EQ(t.verdicts[static_cast<std::size_t>(Verdict::kAccepted)], 40u);

  // An explicit flag overrides the config.
  const RunResult r2 = run({"--config", dir_.file("gw.yaml"), "--dst-port", "9000", "--out", out + "2.pcap", "--truth",
                            out + "2.json", "--mix", "valid=3"});
  ASSERT_EQ(r2.status, 0) << r2.err;
  for (const Frame& f : read_pcap(out + "2.pcap").frames) EXPECT_EQ(be16(f.data() + 54 + 2), 9000);
}

}  // namespace
}  // namespace gw::perf
