// dataplane/memberlist: inspect() on real memberlist packets (golden.txt,
// written by Debian's memberlist 0.2.2: tests/memberlist/make-golden.sh) and
// on packets this test's own encoder builds (packets.h), one or more cases
// per verdict.
#include "dataplane/memberlist/inspect.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <random>
#include <set>
#include <thread>

#include "dataplane/memberlist/msgpack_reader.h"
#include "tests/unit/dataplane/memberlist/packets.h"

namespace gw::dp::ml {
namespace {

using test::Bin;
using test::Bytes;
using test::Str;
using test::UintArray;

const Bytes kKey16 = test::bytes_of("0123456789abcdef");
const Bytes kKey24 = test::bytes_of("0123456789abcdef01234567");
const Bytes kKey32 = test::bytes_of("0123456789abcdef0123456789abcdef");
const Bytes kOther = test::bytes_of("ffffffffffffffff");

base::Address addr(std::uint8_t a, std::uint8_t b, std::uint8_t c, std::uint8_t d, std::uint16_t port) {
  base::Address x;
  x.ip = {a, b, c, d};
  x.port = port;
  return x;
}
const base::Address kSender = addr(10, 0, 0, 2, 7946);

std::unique_ptr<Keyring> ring(std::vector<Bytes> keys) {
  std::vector<std::span<const std::uint8_t>> spans(keys.begin(), keys.end());
  std::string err;
  auto r = Keyring::make(spans, &err);
  EXPECT_NE(r, nullptr) << err;
  return r;
}

// Members the gateway knows: 10.0.0.3:7946 and 10.0.0.4:7946.
bool known_member(const void*, const base::Address& a) noexcept {
  return a == addr(10, 0, 0, 3, 7946) || a == addr(10, 0, 0, 4, 7946);
}

class InspectTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!crypto::ipsecmb_gcm_available()) GTEST_SKIP() << "no AES-NI: ipsec-mb cannot run here";
  }
  Result run(const Bytes& p, const base::Address& src = kSender) {
    scratch_ = std::make_unique<Scratch>(cfg);
    const Bytes before = p;
    Result r = inspect(p.data(), p.size(), src, cfg, *scratch_);
    EXPECT_EQ(p, before) << "inspect wrote the packet";
    return r;
  }
  Verdict verdict(const Bytes& p, const base::Address& src = kSender) { return run(p, src).verdict; }
  // Sealed with kKey16 under a keyring of kKey16.
  Verdict sealed(const Bytes& plain) {
    keys_ = ring({kKey16});
    cfg.keyring = keys_.get();
    return verdict(test::seal(kKey16, plain));
  }

  Config cfg;
  std::unique_ptr<Keyring> keys_;
  std::unique_ptr<Scratch> scratch_;
};

// ---- Golden packets from a real memberlist ----

std::vector<test::Golden> golden() { return test::read_golden(GW_SOURCE_ROOT "/tests/memberlist/golden.txt"); }

TEST_F(InspectTest, GoldenPacketsFromMemberlistAreReadAsMemberlistWroteThem) {
  const auto all = golden();
  ASSERT_GE(all.size(), 19u);
  std::set<std::string> seen;
  for (const auto& g : all) {
    SCOPED_TRACE(g.name);
    seen.insert(g.name);
    cfg = Config{};
    cfg.label = g.label;
    cfg.is_known_member = known_member;
    std::unique_ptr<Keyring> k;
    if (!g.key.empty()) {
      // A wrong key first: the right one is found further down the ring.
      k = ring({kOther, g.key});
      cfg.keyring = k.get();
    }
    const Result r = run(g.packet);
    Verdict want = Verdict::kAccepted;
    if (g.name == "crash_alive_vsn3_plain") want = Verdict::kBadVsn;
    if (g.name == "ping255_compound_plain") want = Verdict::kProbeCount;
    EXPECT_EQ(verdict_name(r.verdict), verdict_name(want));
    if (!g.key.empty()) {
      EXPECT_EQ(r.key_index, 1);
    }
    if (g.name.starts_with("ping_compound_compressed")) {
      // sendMsg piggybacked the 4 queued alives and the agent's own alive.
      EXPECT_TRUE(r.compressed);
      EXPECT_FALSE(r.crc);
      EXPECT_GE(r.messages, 2);
      EXPECT_EQ(r.types, (1u << 0) | (1u << 4));
    }
    if (g.name.starts_with("ping_crc")) {
      EXPECT_TRUE(r.crc);
      EXPECT_EQ(r.messages, 1);
    }
    if (g.name == "plain_ping_compound_compress_true") {
      EXPECT_TRUE(r.compressed);
    }
    if (g.name == "ping255_compound_plain") {
      EXPECT_EQ(r.messages, 0);  // refused on the parts' type bytes, before any is decoded
    }
  }
  for (const char* n :
       {"ping_compound_compressed_aes128", "ping_compound_compressed_aes192", "ping_compound_compressed_aes256",
        "ping_vsn0_aes128", "ping_label_aes256", "indirect_ping_aes128", "ack_aes128", "nack_aes128", "suspect_aes128",
        "alive_aes128", "dead_aes128", "user_aes128", "crash_alive_vsn3_plain", "ping255_compound_plain"}) {
    EXPECT_TRUE(seen.count(n)) << n;
  }
}

TEST_F(InspectTest, GoldenPacketsFailWithoutTheirKeyLabelOrIntegrity) {
  for (const auto& g : golden()) {
    if (g.key.empty()) continue;
    SCOPED_TRACE(g.name);
    cfg = Config{};
    cfg.label = g.label;
    auto other = ring({kOther});
    cfg.keyring = other.get();
    EXPECT_EQ(verdict(g.packet), Verdict::kBadAuth);
    auto right = ring({g.key});
    cfg.keyring = right.get();
    Bytes flipped = g.packet;
    flipped[flipped.size() / 2 + 8] ^= 0x01;
    EXPECT_EQ(verdict(flipped), Verdict::kBadAuth);
    // The label is authenticated: another label, or none, is refused before
    // any AES work, and claiming the packet's label does not help a packet
    // sealed without it.
    cfg.label = g.label.empty() ? "dc2" : "";
    EXPECT_EQ(verdict(g.packet), Verdict::kBadLabel);
  }
  // A packet sealed without a label, given one on the wire: the AAD differs.
  const auto all = golden();
  const auto it = std::find_if(all.begin(), all.end(), [](const auto& g) { return g.name == "ack_aes128"; });
  ASSERT_NE(it, all.end());
  Bytes relabeled = test::label_header("dc1");
  relabeled.insert(relabeled.end(), it->packet.begin(), it->packet.end());
  auto right = ring({kKey16});
  cfg = Config{};
  cfg.label = "dc1";
  cfg.keyring = right.get();
  EXPECT_EQ(verdict(relabeled), Verdict::kBadAuth);
}

TEST_F(InspectTest, PlaintextIsRefusedWithAKeyringAndCountedApartInRollout) {
  const auto all = golden();
  const auto it = std::find_if(all.begin(), all.end(),
                               [](const auto& g) { return g.name == "plain_ping_compound_compress_false"; });
  ASSERT_NE(it, all.end());
  auto k = ring({kKey16});
  cfg.keyring = k.get();
  EXPECT_EQ(verdict(it->packet), Verdict::kPlaintext);  // first byte 0x07: no encryption version
  cfg.allow_plaintext = true;
  const Result r = run(it->packet);
  EXPECT_EQ(r.verdict, Verdict::kAcceptedPlaintext);
  EXPECT_EQ(r.key_index, -1);
  // A plaintext ping starts with 0x00, which reads as version 0: memberlist
  // tries its keys, then falls back to plaintext; so does the filter.
  const Bytes p = test::ping(1, Bin{}, 0);
  EXPECT_EQ(verdict(p), Verdict::kAcceptedPlaintext);
  cfg.allow_plaintext = false;
  EXPECT_EQ(verdict(p), Verdict::kBadAuth);                // 0x00 reads as version 0, and no key opens it
  EXPECT_EQ(verdict(test::nack(1)), Verdict::kPlaintext);  // 0x0b: no version
  // Sealed traffic still opens, and rollout still refuses bad plaintext.
  cfg.allow_plaintext = true;
  EXPECT_EQ(verdict(test::seal(kKey16, test::dead())), Verdict::kAccepted);
  EXPECT_EQ(verdict(test::alive(Bin{{1, 5, 2}})), Verdict::kBadVsn);
}

// ---- One case (or more) per verdict, from the test encoder ----

TEST_F(InspectTest, Lengths) {
  EXPECT_EQ(verdict({}), Verdict::kTooShort);
  cfg.max_packet = 100;
  EXPECT_EQ(verdict(Bytes(101, 8)), Verdict::kTooLong);
  auto k = ring({kKey16});
  cfg.keyring = k.get();
  cfg.max_packet = 65507;
  // Version 1 needs 29 bytes, version 0 45.
  EXPECT_EQ(verdict(Bytes(28, 1)), Verdict::kTooShort);
  EXPECT_EQ(verdict(Bytes(29, 1)), Verdict::kBadAuth);
  EXPECT_EQ(verdict(Bytes(44, 0)), Verdict::kTooShort);
  EXPECT_EQ(verdict(Bytes(45, 0)), Verdict::kBadAuth);
  // An empty plaintext sealed: memberlist 0.2.2 would index buf[0] of it.
  EXPECT_EQ(verdict(test::seal(kKey16, {})), Verdict::kTooShort);
}

TEST_F(InspectTest, Labels) {
  const Bytes msg = test::dead();
  Bytes labeled = test::label_header("dc1");
  labeled.insert(labeled.end(), msg.begin(), msg.end());
  EXPECT_EQ(verdict(labeled), Verdict::kBadLabel);  // we expect none
  cfg.label = "dc1";
  EXPECT_EQ(verdict(labeled), Verdict::kAccepted);
  EXPECT_EQ(verdict(msg), Verdict::kBadLabel);  // missing
  cfg.label = "dc2";
  EXPECT_EQ(verdict(labeled), Verdict::kBadLabel);  // another cluster's
  EXPECT_EQ(verdict({244}), Verdict::kBadLabel);
  EXPECT_EQ(verdict({244, 0, 5}), Verdict::kBadLabel);         // empty label: memberlist refuses it
  EXPECT_EQ(verdict({244, 9, 'd', 'c'}), Verdict::kBadLabel);  // truncated
  auto k = ring({kKey32});
  cfg.keyring = k.get();
  cfg.label = "dc1";
  EXPECT_EQ(verdict(test::seal(kKey32, msg, 1, "dc1")), Verdict::kAccepted);
}

TEST_F(InspectTest, VersionByteAndKeys) {
  auto k = ring({kKey16, kKey24, kKey32});
  cfg.keyring = k.get();
  Bytes p = test::seal(kKey16, test::dead());
  p[0] = 2;
  EXPECT_EQ(verdict(p), Verdict::kPlaintext);
  for (std::size_t i = 0; i < 3; ++i) {
    const Bytes& key = i == 0 ? kKey16 : i == 1 ? kKey24 : kKey32;
    for (std::uint8_t vsn : {0, 1}) {
      const Result r = run(test::seal(key, test::dead(), vsn));
      EXPECT_EQ(r.verdict, Verdict::kAccepted) << i << " " << int(vsn);
      EXPECT_EQ(r.key_index, static_cast<int>(i));
    }
  }
  EXPECT_EQ(verdict(test::seal(kOther, test::dead())), Verdict::kBadAuth);
}

TEST_F(InspectTest, Pkcs7Padding) {
  EXPECT_EQ(sealed(test::dead()), Verdict::kAccepted);  // version 1 (sealed() default)
  EXPECT_EQ(verdict(test::seal(kKey16, test::dead(), 0)), Verdict::kAccepted);
  for (int bad : {0, 17, 255}) {
    EXPECT_EQ(verdict(test::seal(kKey16, test::dead(), 0, {}, bad)), Verdict::kBadPadding) << bad;
  }
  // Padding bytes that disagree with the count.
  Bytes plain = test::dead();
  const std::size_t pad = 16 - plain.size() % 16;
  for (std::size_t i = 0; i < pad; ++i) plain.push_back(static_cast<std::uint8_t>(i + 1 == pad ? pad : 1));
  // Sealed as version 1 bytes but claimed as version 0: re-seal by hand.
  Bytes p = test::seal(kKey16, plain, 1);
  p[0] = 0;  // the version is not authenticated, but the padding check sees the bytes
  EXPECT_EQ(verdict(p), pad == 1 ? Verdict::kAccepted : Verdict::kBadPadding);
}

TEST_F(InspectTest, Crc) {
  EXPECT_EQ(verdict(test::with_crc(test::dead())), Verdict::kAccepted);
  EXPECT_TRUE(run(test::with_crc(test::dead())).crc);
  EXPECT_EQ(verdict(test::with_crc(test::dead(), 1)), Verdict::kBadCrc);
  EXPECT_EQ(verdict({12, 0, 0, 0}), Verdict::kBadCrc);
  // CRC of nothing is 0: memberlist 0.2.2 would then read buf[0] of an empty slice.
  EXPECT_EQ(verdict({12, 0, 0, 0, 0}), Verdict::kMalformed);
  EXPECT_EQ(sealed(test::with_crc(test::compress(test::compound({test::ping(1, Bin{}, 0), test::dead()})))),
            Verdict::kAccepted);
}

TEST_F(InspectTest, Compression) {
  const Bytes inner = test::compound({test::ack(3), test::dead(), test::suspect()});
  Result r = run(test::compress(inner));
  EXPECT_EQ(r.verdict, Verdict::kAccepted);
  EXPECT_TRUE(r.compressed);
  EXPECT_EQ(r.messages, 3);
  EXPECT_EQ(verdict(test::compress(inner, 1)), Verdict::kBadCompression);         // no algorithm 1
  EXPECT_EQ(verdict(test::compress(inner, 0, false)), Verdict::kBadCompression);  // no end code
  Bytes garbage = test::message(9, {{"Algo", std::uint64_t{0}}, {"Buf", Bin{{0xff, 0xff, 0xff, 0xff}}}});
  EXPECT_EQ(verdict(garbage), Verdict::kBadCompression);
  // A bomb: 70,000 bytes of user message from a few hundred compressed ones.
  const Bytes bomb = test::compress(test::user(std::string(70000, 'A')));
  EXPECT_LT(bomb.size(), 1000u);
  EXPECT_EQ(verdict(bomb), Verdict::kInflateLimit);
  cfg.max_inflated = 80000;
  EXPECT_EQ(verdict(bomb), Verdict::kAccepted);
}

TEST_F(InspectTest, LzwDecodesWhatGoWritesAcrossTableResets) {
  std::mt19937 rng(54);
  for (std::size_t size : {0u, 1u, 2u, 100u, 5000u, 60000u}) {
    Bytes in(size);
    // Half random, half runs: both fill the 4096-entry table and force clears.
    for (std::size_t i = 0; i < size; ++i) in[i] = i % 2000 < 1000 ? static_cast<std::uint8_t>(rng()) : 'x';
    const Bytes z = test::lzw(in);
    Bytes out(size + 1);
    std::size_t n = 0;
    auto t = std::make_unique<LzwTables>();
    ASSERT_EQ(lzw_decode(z.data(), z.size(), out.data(), out.size(), &n, t.get()), LzwResult::kOk) << size;
    out.resize(n);
    EXPECT_EQ(out, in) << size;
    if (size > 0) {
      EXPECT_EQ(lzw_decode(z.data(), z.size(), out.data(), size - 1, &n, t.get()), LzwResult::kTooLarge);
    }
  }
}

TEST_F(InspectTest, CompoundFraming) {
  EXPECT_EQ(verdict(test::compound({test::dead(), test::suspect()})), Verdict::kAccepted);
  EXPECT_EQ(verdict({7}), Verdict::kBadCompound);
  EXPECT_EQ(verdict({7, 0}), Verdict::kBadCompound);
  Bytes c = test::compound({test::dead(), test::suspect()});
  Bytes past = c;
  past[3] = 0xff;  // first length past the end
  EXPECT_EQ(verdict(past), Verdict::kBadCompound);
  Bytes trailing = c;
  trailing.push_back(0);
  EXPECT_EQ(verdict(trailing), Verdict::kBadCompound);
  Bytes truncated(c.begin(), c.end() - 1);
  EXPECT_EQ(verdict(truncated), Verdict::kBadCompound);
  EXPECT_EQ(verdict({7, 2, 0, 0, 0, 1, 5}), Verdict::kBadCompound);  // an empty part
  EXPECT_EQ(verdict({7, 3, 0, 1}), Verdict::kBadCompound);           // lengths cut short
}

TEST_F(InspectTest, Nesting) {
  const Bytes inner = test::compound({test::dead(), test::suspect()});
  EXPECT_EQ(verdict(test::compound({inner, test::dead()})), Verdict::kNesting);
  EXPECT_EQ(verdict(test::compound({test::dead(), test::compress(test::dead())})), Verdict::kNesting);
  EXPECT_EQ(verdict(test::compound({test::dead(), test::with_crc(test::dead())})), Verdict::kNesting);
  EXPECT_EQ(verdict(test::compress(test::compress(test::dead()))), Verdict::kNesting);
  EXPECT_EQ(verdict(test::with_crc(test::with_crc(test::dead()))), Verdict::kNesting);
  EXPECT_EQ(verdict(test::compress(test::with_crc(test::dead()))), Verdict::kNesting);
}

TEST_F(InspectTest, MalformedMsgpack) {
  // A struct as an array: Go's codec reads it, no memberlist writes it.
  msgpack::sbuffer b;
  msgpack::packer<msgpack::sbuffer> pk(b);
  pk.pack_array(3);
  pk.pack_uint32(3);
  pk.pack(std::string("node-c"));
  pk.pack(std::string("node-a"));
  Bytes arr{5};
  arr.insert(arr.end(), b.data(), b.data() + b.size());
  EXPECT_EQ(verdict(arr), Verdict::kMalformed);
  // The same key twice: Go keeps the last one.
  EXPECT_EQ(
      verdict(test::message(
          4, {{"Node", Str{"a"}}, {"Addr", test::ip4(10, 0, 1, 1)}, {"Vsn", test::vsn6()}, {"Vsn", Bin{{1, 5, 2}}}})),
      Verdict::kMalformed);
  EXPECT_EQ(verdict(test::message(5, {{"Incarnation", Str{"3"}}})), Verdict::kMalformed);          // wrong type
  EXPECT_EQ(verdict(test::message(5, {{"Incarnation", std::int64_t{-1}}})), Verdict::kMalformed);  // negative
  EXPECT_EQ(verdict(test::message(5, {{"Incarnation", std::uint64_t{1} << 32}})), Verdict::kMalformed);
  EXPECT_EQ(verdict(test::message(0, {{"SourcePort", std::uint64_t{70000}}})), Verdict::kMalformed);
  EXPECT_EQ(verdict(test::message(1, {{"Nack", std::uint64_t{1}}, {"Target", test::ip4(10, 0, 0, 3)}})),
            Verdict::kMalformed);
  Bytes trailing = test::dead();
  trailing.push_back(0xc0);
  EXPECT_EQ(verdict(trailing), Verdict::kMalformed);
  Bytes cut = test::dead();
  cut.pop_back();
  EXPECT_EQ(verdict(cut), Verdict::kMalformed);
  EXPECT_EQ(verdict(test::alive(test::vsn6(), "x", Bin{{1, 2, 3, 4, 5}})), Verdict::kMalformed);  // 5-byte IP
  EXPECT_EQ(verdict(test::alive(test::vsn6(), "x", Bin{})), Verdict::kMalformed);  // alive with no address
  EXPECT_EQ(verdict(test::message(
                4, {{"Meta", Bin{Bytes(513, 'm')}}, {"Addr", test::ip4(10, 0, 1, 1)}, {"Vsn", test::vsn6()}})),
            Verdict::kMalformed);
  // Unknown keys are skipped (as Go does) unless they nest too deep or lie.
  EXPECT_EQ(verdict(test::message(5, {{"Incarnation", std::uint64_t{4}}, {"Future", UintArray{{1, 2, 3}}}})),
            Verdict::kAccepted);
  EXPECT_EQ(verdict({5, 0x81, 0xa1, 'X', 0x91, 0x91, 0x91, 0x91, 0x91, 0x91, 0xc0}), Verdict::kMalformed);
  EXPECT_EQ(verdict({5, 0x81, 0xa1, 'X', 0xdd, 0xff, 0xff, 0xff, 0xff}), Verdict::kMalformed);
  EXPECT_EQ(verdict({5, 0xdf, 0xff, 0xff, 0xff, 0xff}), Verdict::kMalformed);
  EXPECT_EQ(verdict({5, 0x81, 0xa1, 'X', 0xc7, 1, 1, 0}), Verdict::kMalformed);  // ext type
}

TEST_F(InspectTest, UnexpectedTypes) {
  EXPECT_EQ(verdict(test::message(6, {{"Nodes", std::uint64_t{1}}})), Verdict::kUnexpectedType);  // push-pull
  EXPECT_EQ(verdict(test::message(13, {{"Error", Str{"x"}}})), Verdict::kUnexpectedType);
  EXPECT_EQ(verdict({10, 1, 2, 3}), Verdict::kUnexpectedType);
  EXPECT_EQ(verdict({200, 0x80}), Verdict::kUnexpectedType);
  EXPECT_EQ(verdict(test::compound({test::dead(), {6, 0x80}})), Verdict::kUnexpectedType);
}

TEST_F(InspectTest, OneProbeAndFirst) {
  const Bytes p = test::ping(1, Bin{}, 0);
  EXPECT_EQ(verdict(test::compound({p, test::dead(), test::user("x")})), Verdict::kAccepted);
  EXPECT_EQ(verdict(test::compound({p, p})), Verdict::kProbeCount);
  EXPECT_EQ(verdict(test::compound({test::dead(), test::ack(1)})), Verdict::kProbeCount);  // not first
  EXPECT_EQ(verdict(test::compound({test::ack(1), test::nack(1)})), Verdict::kProbeCount);
  // The reflection compound: 255 pings naming a victim as the reply address.
  std::vector<Bytes> pings;
  for (std::uint32_t i = 0; i < 255; ++i) pings.push_back(test::ping(i, test::ip4(192, 0, 2, 1), 53));
  const Result r = run(test::compound(pings));
  EXPECT_EQ(r.verdict, Verdict::kProbeCount);
  EXPECT_EQ(r.messages, 0);  // refused on the type bytes, before a part is decoded
  EXPECT_EQ(sealed(test::compress(test::compound(pings))), Verdict::kProbeCount);
  cfg.keyring = nullptr;
  cfg.max_probe_messages = 2;
  EXPECT_EQ(verdict(test::compound({p, p})), Verdict::kProbeCount);  // the second is not first either
}

TEST_F(InspectTest, PingReplyAddress) {
  cfg.is_known_member = known_member;
  // Reply to the sender (no source given, or the sender's own address).
  EXPECT_EQ(verdict(test::ping(1, Bin{}, 0)), Verdict::kAccepted);
  EXPECT_EQ(verdict(test::ping(1, test::ip4(10, 0, 0, 2), 7946)), Verdict::kAccepted);
  EXPECT_EQ(verdict(test::ping(1, test::ip4(10, 0, 0, 9), 0)), Verdict::kAccepted);  // port 0: reply to sender
  // As an IPv4-mapped IPv6 address (Go's net.ParseIP form).
  EXPECT_EQ(verdict(test::ping(1, Bin{{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 2}}, 7946)),
            Verdict::kAccepted);
  // A known member (the address of an indirect probe's origin).
  EXPECT_EQ(verdict(test::ping(1, test::ip4(10, 0, 0, 3), 7946)), Verdict::kAccepted);
  // Anyone else: a reflection.
  EXPECT_EQ(verdict(test::ping(1, test::ip4(192, 0, 2, 1), 7946)), Verdict::kProbeSource);
  EXPECT_EQ(verdict(test::ping(1, test::ip4(10, 0, 0, 2), 53)), Verdict::kProbeSource);  // sender's IP, other port
  EXPECT_EQ(verdict(test::indirect_ping(test::ip4(10, 0, 0, 3), 7946, test::ip4(192, 0, 2, 1), 7946)),
            Verdict::kProbeSource);
  cfg.is_known_member = nullptr;
  EXPECT_EQ(verdict(test::ping(1, test::ip4(10, 0, 0, 3), 7946)), Verdict::kProbeSource);
}

TEST_F(InspectTest, IndirectPingTarget) {
  cfg.is_known_member = known_member;
  EXPECT_EQ(verdict(test::indirect_ping(test::ip4(10, 0, 0, 3), 7946, Bin{}, 0)), Verdict::kAccepted);
  EXPECT_EQ(verdict(test::indirect_ping(test::ip4(10, 0, 0, 4), 0, test::ip4(10, 0, 0, 2), 7946)),
            Verdict::kAccepted);  // port 0: the agent's own port
  EXPECT_EQ(verdict(test::indirect_ping(test::ip4(192, 0, 2, 1), 7946, Bin{}, 0)), Verdict::kProbeTarget);
  EXPECT_EQ(verdict(test::indirect_ping(test::ip4(10, 0, 0, 3), 53, Bin{}, 0)), Verdict::kProbeTarget);
  EXPECT_EQ(verdict(test::indirect_ping(Bin{}, 7946, Bin{}, 0)), Verdict::kMalformed);
  cfg.is_known_member = nullptr;  // no member table: targets are not checked
  EXPECT_EQ(verdict(test::indirect_ping(test::ip4(192, 0, 2, 1), 7946, Bin{}, 0)), Verdict::kAccepted);
}

TEST_F(InspectTest, AliveVsn) {
  EXPECT_EQ(verdict(test::alive(test::vsn6())), Verdict::kAccepted);
  EXPECT_EQ(verdict(test::alive(Bin{})), Verdict::kAccepted);
  EXPECT_EQ(verdict(test::alive(nullptr)), Verdict::kAccepted);
  EXPECT_EQ(verdict(test::alive(UintArray{{1, 5, 2, 2, 5, 4}})), Verdict::kAccepted);
  for (std::size_t n : {1u, 2u, 3u, 4u, 5u, 7u, 200u}) {
    Bytes v(n, 1);
    EXPECT_EQ(verdict(test::alive(Bin{v})), Verdict::kBadVsn) << n;
    EXPECT_EQ(verdict(test::alive(UintArray{std::vector<std::uint64_t>(n, 1)})), Verdict::kBadVsn) << n;
  }
  EXPECT_EQ(verdict(test::alive(UintArray{{1, 5, 2, 2, 5, 400}})), Verdict::kMalformed);  // not a uint8
  // The crash packet anywhere in a packet: sealed, compressed, in a compound.
  EXPECT_EQ(sealed(test::compress(test::compound({test::dead(), test::alive(Bin{{1, 5, 2}})}))), Verdict::kBadVsn);
}

TEST_F(InspectTest, NamesBounded) {
  EXPECT_EQ(verdict(test::suspect(std::string(128, 'n'))), Verdict::kAccepted);
  EXPECT_EQ(verdict(test::suspect(std::string(129, 'n'))), Verdict::kNameTooLong);
  EXPECT_EQ(verdict(test::suspect("n", std::string(129, 'f'))), Verdict::kNameTooLong);
  EXPECT_EQ(verdict(test::ping(1, Bin{}, 0, std::string(200, 'p'))), Verdict::kNameTooLong);
  cfg.max_name = 300;
  EXPECT_EQ(verdict(test::suspect(std::string(129, 'n'))), Verdict::kAccepted);
}

TEST_F(InspectTest, EveryVerdictHasAName) {
  std::set<std::string_view> names(kVerdictNames.begin(), kVerdictNames.end());
  EXPECT_EQ(names.size(), kVerdictCount);
  for (auto n : kVerdictNames) EXPECT_TRUE(n.starts_with("ml_accepted") || n.starts_with("ml_drop_")) << n;
}

// ---- Keyring ----

TEST(MlKeyring, RefusesBadKeys) {
  std::string err;
  const Bytes k15(15, 1);
  std::vector<std::span<const std::uint8_t>> one{k15};
  EXPECT_EQ(Keyring::make(one, &err), nullptr);
  EXPECT_NE(err.find("15 bytes"), std::string::npos) << err;
  if (!crypto::ipsecmb_gcm_available()) GTEST_SKIP();
  std::vector<std::span<const std::uint8_t>> many(17, std::span<const std::uint8_t>(kKey16));
  EXPECT_EQ(Keyring::make(many, &err), nullptr);
  EXPECT_NE(err.find("more than 16"), std::string::npos) << err;
  many.pop_back();
  auto r = Keyring::make(many, &err);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->size(), 16u);
  EXPECT_TRUE(Keyring::make({}, &err)->empty());
}

TEST(MlKeyring, ExchangeFreesAKeyringOnlyAfterEveryReaderMovedOn) {
  if (!crypto::ipsecmb_gcm_available()) GTEST_SKIP();
  KeyringExchange x(2, ring({kKey16}));
  const Keyring* a0 = x.adopt(0);
  x.adopt(1);
  x.publish(ring({kKey24, kKey16}));
  EXPECT_EQ(x.retained(), 2u);  // readers still on version 1
  EXPECT_EQ(x.adopt(0)->size(), 2u);
  x.reclaim();
  EXPECT_EQ(x.retained(), 2u);  // reader 1 has not moved
  EXPECT_EQ(a0->size(), 1u);    // still readable
  x.adopt(1);
  x.reclaim();
  EXPECT_EQ(x.retained(), 1u);
  x.retire_reader(0);
  x.retire_reader(1);
  x.publish(ring({kKey32}));
  EXPECT_EQ(x.retained(), 1u);
}

TEST(MlKeyring, RotationUnderLoadNeverLosesAPacketSealedWithAKeptKey) {
  if (!crypto::ipsecmb_gcm_available()) GTEST_SKIP();
  // The reader inspects a packet sealed with kKey16 while the writer rotates
  // through keyrings that all hold kKey16 at another position: every packet
  // opens, and the key index follows the ring the burst adopted.
  KeyringExchange x(1, ring({kKey16}));
  const Bytes pkt = test::seal(kKey16, test::dead());
  std::atomic<bool> stop{false};
  std::atomic<long> bad{0};
  std::atomic<long> runs{0};
  std::thread reader([&] {
    Config cfg;
    Scratch s(cfg);
    while (!stop.load()) {
      cfg.keyring = x.adopt(0);
      for (int i = 0; i < 8; ++i) {
        const Result r = inspect(pkt.data(), pkt.size(), kSender, cfg, s);
        if (r.verdict != Verdict::kAccepted || cfg.keyring->key_len(static_cast<std::size_t>(r.key_index)) != 16) ++bad;
        ++runs;
      }
    }
    x.retire_reader(0);
  });
  for (int v = 0; v < 300; ++v) {
    std::vector<Bytes> keys{kKey32, kKey24};
    keys.insert(keys.begin() + v % 3, kKey16);
    x.publish(ring(keys));
    // Let the reader run two bursts: it adopts the new ring, so retired
    // ones are freed at the next publish and memory stays bounded.
    const long r0 = runs.load();
    while (runs.load() < r0 + 16) std::this_thread::yield();
    EXPECT_LE(x.retained(), 3u);
  }
  while (runs.load() < 1000) std::this_thread::yield();
  stop = true;
  reader.join();
  x.reclaim();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(x.retained(), 1u);
}

// ---- The msgpack reader alone ----

TEST(MlMsgpackReader, IntegersOfEveryWidth) {
  const std::uint8_t in[] = {0x05, 0xcc, 0xff, 0xcd, 0x01, 0x00, 0xce, 0,    1,    0,    0,    0xcf, 0,    0,   0,
                             1,    0,    0,    0,    0,    0xd0, 0x7f, 0xd1, 0x00, 0x80, 0xe0, 0xd0, 0x80, 0xc0};
  MsgpackReader r(in, sizeof in);
  std::uint64_t u = 0;
  std::int64_t s = 0;
  ASSERT_TRUE(r.read_uint(UINT64_MAX, &u));
  EXPECT_EQ(u, 5u);
  ASSERT_TRUE(r.read_uint(UINT64_MAX, &u));
  EXPECT_EQ(u, 255u);
  ASSERT_TRUE(r.read_uint(UINT64_MAX, &u));
  EXPECT_EQ(u, 256u);
  ASSERT_TRUE(r.read_uint(UINT64_MAX, &u));
  EXPECT_EQ(u, 65536u);
  ASSERT_TRUE(r.read_uint(UINT64_MAX, &u));
  EXPECT_EQ(u, std::uint64_t{1} << 32);
  ASSERT_TRUE(r.read_uint(UINT64_MAX, &u));  // int8 127
  EXPECT_EQ(u, 127u);
  ASSERT_TRUE(r.read_uint(UINT64_MAX, &u));  // int16 128
  EXPECT_EQ(u, 128u);
  ASSERT_TRUE(r.read_int(-100, 100, &s));
  EXPECT_EQ(s, -32);
  EXPECT_FALSE(r.read_uint(UINT64_MAX, &u));  // int8 -128: negative for an unsigned field
  EXPECT_FALSE(r.ok());
}

}  // namespace
}  // namespace gw::dp::ml
