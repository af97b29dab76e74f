#include "dataplane/ladder.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "crypto/datagram.h"

namespace gw::dp {
namespace {

using crypto::PriorityClass;
using Bytes = std::vector<std::uint8_t>;

constexpr std::uint16_t kPort = 7946;

crypto::KeyBytes key_bytes(std::uint8_t fill) {
  crypto::KeyBytes k{};
  k.fill(fill);
  return k;
}

void put16(Bytes& b, std::size_t off, std::uint16_t v) {
  b[off] = static_cast<std::uint8_t>(v >> 8);
  b[off + 1] = static_cast<std::uint8_t>(v);
}

// Ethernet + IPv4/IPv6 + UDP around `payload`. Checksums are left zero: the
// ladder does not rely on them (the AEAD covers what matters).
Bytes frame(const Bytes& payload, bool ipv6 = false, std::uint16_t port = kPort, bool vlan = false) {
  Bytes f(12, 0x02);
  if (vlan) {
    f.insert(f.end(), {0x81, 0x00, 0x00, 0x07});
  }
  const std::size_t udp_len = 8 + payload.size();
  if (!ipv6) {
    f.insert(f.end(), {0x08, 0x00});
    const std::size_t ip = f.size();
    f.resize(ip + 20, 0);
    f[ip] = 0x45;
    put16(f, ip + 2, static_cast<std::uint16_t>(20 + udp_len));
    f[ip + 8] = 64;
    f[ip + 9] = 17;
    const std::uint8_t src[4] = {10, 0, 0, 2}, dst[4] = {10, 0, 0, 1};
    std::copy(src, src + 4, f.begin() + static_cast<long>(ip + 12));
    std::copy(dst, dst + 4, f.begin() + static_cast<long>(ip + 16));
  } else {
    f.insert(f.end(), {0x86, 0xDD});
    const std::size_t ip = f.size();
    f.resize(ip + 40, 0);
    f[ip] = 0x60;
    put16(f, ip + 4, static_cast<std::uint16_t>(udp_len));
    f[ip + 6] = 17;
    f[ip + 7] = 64;
    f[ip + 8] = 0xfd;
    f[ip + 23] = 2;
    f[ip + 24] = 0xfd;
    f[ip + 39] = 1;
  }
  const std::size_t udp = f.size();
  f.resize(udp + 8, 0);
  put16(f, udp, 40000);
  put16(f, udp + 2, port);
  put16(f, udp + 4, static_cast<std::uint16_t>(udp_len));
  f.insert(f.end(), payload.begin(), payload.end());
  return f;
}

class LadderTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ASSERT_TRUE(crypto::init()); }

  void SetUp() override {
    keys_.add(crypto::Key(key_bytes(1), crypto::Suite::kChaCha20Poly1305), true);
    keys_.add(crypto::Key(key_bytes(2), crypto::Suite::kChaCha20Poly1305), false);
    ASSERT_TRUE(parse_endpoint("10.0.0.1", kPort, &cfg4_.local));
    cfg4_.cluster_id = crypto::derive_cluster_id("demo");
    cfg4_.keys = &keys_;
    cfg6_ = cfg4_;
    ASSERT_TRUE(parse_endpoint("fd00::1", kPort, &cfg6_.local));
    to_ = cfg4_.local.receiver;
  }

  Bytes sealed(const std::string& text, std::uint8_t key_fill = 1, const char* cluster = "demo",
               PriorityClass cls = PriorityClass::kProbe) {
    const crypto::Key key(key_bytes(key_fill), crypto::Suite::kChaCha20Poly1305);
    Bytes out(crypto::kHeaderBytes + text.size() + crypto::kTagBytes);
    const std::size_t n =
        crypto::seal_datagram(key, {crypto::derive_cluster_id(cluster), cls, 1700000000, to_}, nonces_,
                              reinterpret_cast<const std::uint8_t*>(text.data()), text.size(), out.data(), out.size());
    EXPECT_EQ(n, out.size());
    return out;
  }

  LadderResult run(const LadderConfig& cfg, Bytes f) {
    return run_ladder(cfg, f.data(), static_cast<std::uint32_t>(f.size()));
  }
  Verdict verdict(Bytes f) { return run(cfg4_, std::move(f)).verdict; }

  crypto::Receiver to_;  // whom sealed() binds datagrams to
  crypto::Keyring keys_;
  crypto::NonceSource nonces_{7};
  LadderConfig cfg4_;
  LadderConfig cfg6_;
};

TEST_F(LadderTest, ValidIpv4IsAcceptedAndDecryptedInPlace) {
  Bytes f = frame(sealed("hello gossip"));
  const LadderResult r = run_ladder(cfg4_, f.data(), static_cast<std::uint32_t>(f.size()));
  ASSERT_EQ(r.verdict, Verdict::kAccepted);
  EXPECT_EQ(r.cls, PriorityClass::kProbe);
  EXPECT_EQ(std::string(f.begin() + r.plaintext_offset, f.begin() + r.plaintext_offset + r.plaintext_len),
            "hello gossip");
}

TEST_F(LadderTest, ValidIpv6AndVlanAreAccepted) {
  to_ = cfg6_.local.receiver;
  EXPECT_EQ(run(cfg6_, frame(sealed("v6"), true)).verdict, Verdict::kAccepted);
  to_ = cfg4_.local.receiver;
  EXPECT_EQ(verdict(frame(sealed("vlan"), false, kPort, true)), Verdict::kAccepted);
}

TEST_F(LadderTest, SecondaryKeyIsAcceptedForRotation) {
  EXPECT_EQ(verdict(frame(sealed("rotating", 2))), Verdict::kAccepted);
}

TEST_F(LadderTest, EthernetPaddingAfterTheIpPacketIsIgnored) {
  Bytes f = frame(sealed("x"));
  f.resize(f.size() + 20, 0);
  EXPECT_EQ(verdict(f), Verdict::kAccepted);
}

TEST_F(LadderTest, EveryTruncationIsMalformedNeverAccepted) {
  for (bool v6 : {false, true}) {
    const Bytes good = frame(sealed("truncate me at every layer"), v6);
    for (std::size_t len = 0; len < good.size(); ++len) {
      Bytes f(good.begin(), good.begin() + static_cast<long>(len));
      EXPECT_EQ(run(v6 ? cfg6_ : cfg4_, f).verdict, Verdict::kMalformed) << "v6 " << v6 << " len " << len;
    }
  }
}

TEST_F(LadderTest, NotOursIsNotGossip) {
  EXPECT_EQ(verdict(frame(sealed("p"), false, 7947)), Verdict::kNotGossip);
  Bytes other_ip = frame(sealed("ip"));
  other_ip[14 + 19] = 9;
  EXPECT_EQ(verdict(other_ip), Verdict::kNotGossip);
  Bytes tcp = frame(sealed("tcp"));
  tcp[14 + 9] = 6;
  EXPECT_EQ(verdict(tcp), Verdict::kNotGossip);
  Bytes arp(42, 0);
  arp[12] = 0x08;
  arp[13] = 0x06;
  EXPECT_EQ(verdict(arp), Verdict::kNotGossip);
  // IPv6 gossip to an IPv4 gateway, and the other way round.
  EXPECT_EQ(run(cfg4_, frame(sealed("x"), true)).verdict, Verdict::kNotGossip);
  EXPECT_EQ(run(cfg6_, frame(sealed("x"), false)).verdict, Verdict::kNotGossip);
}

TEST_F(LadderTest, LyingLengthsAndFragmentsAreMalformed) {
  const Bytes good = frame(sealed("lengths"));
  Bytes ihl = good;
  ihl[14] = 0x44;
  EXPECT_EQ(verdict(ihl), Verdict::kMalformed);
  Bytes total = good;
  put16(total, 16, static_cast<std::uint16_t>(good.size()));  // longer than the frame holds
  EXPECT_EQ(verdict(total), Verdict::kMalformed);
  Bytes udp_long = good;
  put16(udp_long, 14 + 20 + 4, static_cast<std::uint16_t>(good.size()));
  EXPECT_EQ(verdict(udp_long), Verdict::kMalformed);
  Bytes udp_short = good;
  put16(udp_short, 14 + 20 + 4, 7);
  EXPECT_EQ(verdict(udp_short), Verdict::kMalformed);
  Bytes frag = good;
  frag[14 + 6] = 0x20;  // more fragments
  EXPECT_EQ(verdict(frag), Verdict::kMalformed);
  Bytes v6 = frame(sealed("x"), true);
  put16(v6, 14 + 4, 2000);
  EXPECT_EQ(run(cfg6_, v6).verdict, Verdict::kMalformed);
  // UDP length shorter than the payload: the datagram no longer matches payload_len.
  Bytes gw_len = good;
  put16(gw_len, 14 + 20 + 4, static_cast<std::uint16_t>(8 + crypto::kHeaderBytes + 16));
  EXPECT_EQ(verdict(gw_len), Verdict::kMalformed);
}

TEST_F(LadderTest, NoGatewayHeaderIsUnkeyed) {
  EXPECT_EQ(verdict(frame({})), Verdict::kUnkeyed);
  EXPECT_EQ(verdict(frame(Bytes(47, 'G'))), Verdict::kUnkeyed);
  Bytes plain = sealed("x");
  plain[0] = 'X';
  EXPECT_EQ(verdict(frame(plain)), Verdict::kUnkeyed);
  Bytes v1 = sealed("x");
  v1[4] = 1;  // the wire before receiver binding
  EXPECT_EQ(verdict(frame(v1)), Verdict::kUnkeyed);
}

// Issue 17, item 5: a member's real datagram for another member, sent here,
// is refused from its header (before the MAC) with its own verdict; under a
// colliding tag it still fails the AEAD.
// Issue 17, item 7: a valid datagram from a source no member can have is
// dropped at parse (so nothing is ever answered there), IPv4 and IPv6, on
// the fast path and the general one (a VLAN tag takes the general path).
TEST_F(LadderTest, MartianSourcesAreDroppedAtParse) {
  for (const bool vlan : {false, true}) {
    const std::size_t src = 26 + (vlan ? 4 : 0);
    for (const std::array<std::uint8_t, 4> ip : std::vector<std::array<std::uint8_t, 4>>{{255, 255, 255, 255},
                                                                                         {224, 0, 0, 1},
                                                                                         {239, 1, 2, 3},
                                                                                         {240, 0, 0, 1},
                                                                                         {0, 0, 0, 0},
                                                                                         {0, 1, 2, 3},
                                                                                         {127, 0, 0, 1},
                                                                                         {10, 0, 0, 1}}) {
      Bytes f = frame(sealed("martian"), false, kPort, vlan);
      std::copy(ip.begin(), ip.end(), f.begin() + static_cast<std::ptrdiff_t>(src));
      EXPECT_EQ(verdict(f), Verdict::kMartian) << int{ip[0]} << "." << int{ip[3]} << " vlan " << vlan;
    }
    Bytes ok = frame(sealed("a member"), false, kPort, vlan);
    EXPECT_EQ(verdict(ok), Verdict::kAccepted);
  }
  to_ = cfg6_.local.receiver;
  for (const char* a : {"ff02::1", "::", "::1", "fd00::1"}) {
    LocalEndpoint e;
    ASSERT_TRUE(parse_endpoint(a, kPort, &e));
    Bytes f = frame(sealed("martian6"), true);
    std::copy(e.ipv6_addr.begin(), e.ipv6_addr.end(), f.begin() + 22);
    EXPECT_EQ(run(cfg6_, f).verdict, Verdict::kMartian) << a;
  }
  EXPECT_EQ(run(cfg6_, frame(sealed("a member"), true)).verdict, Verdict::kAccepted);
}

// Issue 17 item 7: with node.prefix_len known, the local subnet's broadcast
// and network addresses are martian too (an answer to the subnet broadcast
// reaches every host on it); a neighbour's address in the subnet is not.
TEST_F(LadderTest, SubnetBroadcastAndNetworkSourcesAreMartianWhenThePrefixIsKnown) {
  const auto with_src = [this](std::array<std::uint8_t, 4> ip, bool vlan) {
    Bytes f = frame(sealed("subnet"), false, kPort, vlan);
    std::copy(ip.begin(), ip.end(), f.begin() + static_cast<std::ptrdiff_t>(26 + (vlan ? 4 : 0)));
    return f;
  };
  // Unknown prefix (the default): 10.0.0.255 may be a member of a wider subnet.
  EXPECT_EQ(verdict(with_src({10, 0, 0, 255}, false)), Verdict::kAccepted);
  set_ipv4_subnet(&cfg4_.local, 24);
  for (const bool vlan : {false, true}) {
    EXPECT_EQ(verdict(with_src({10, 0, 0, 255}, vlan)), Verdict::kMartian) << vlan;
    EXPECT_EQ(verdict(with_src({10, 0, 0, 0}, vlan)), Verdict::kMartian) << vlan;
    EXPECT_EQ(verdict(with_src({10, 0, 0, 2}, vlan)), Verdict::kAccepted) << vlan;
    EXPECT_EQ(verdict(with_src({10, 0, 1, 255}, vlan)), Verdict::kAccepted) << vlan;  // another subnet's host
  }
  set_ipv4_subnet(&cfg4_.local, 22);
  EXPECT_EQ(verdict(with_src({10, 0, 3, 255}, false)), Verdict::kMartian);
  EXPECT_EQ(verdict(with_src({10, 0, 0, 255}, false)), Verdict::kAccepted);
  // /31 has no broadcast (RFC 3021): both addresses are hosts.
  set_ipv4_subnet(&cfg4_.local, 31);
  EXPECT_EQ(verdict(with_src({10, 0, 0, 0}, false)), Verdict::kAccepted);
  set_ipv4_subnet(&cfg4_.local, 0);
  EXPECT_EQ(verdict(with_src({10, 0, 0, 255}, false)), Verdict::kAccepted);
  EXPECT_EQ(verdict(with_src({10, 0, 0, 1}, false)), Verdict::kMartian);  // ours, always
}

// An IPv4-mapped IPv6 source (::ffff:a.b.c.d) is never on the wire.
TEST_F(LadderTest, Ipv4MappedIpv6SourceIsMartian) {
  to_ = cfg6_.local.receiver;
  LocalEndpoint e;
  ASSERT_TRUE(parse_endpoint("::ffff:10.0.0.2", kPort, &e));
  Bytes f = frame(sealed("mapped"), true);
  std::copy(e.ipv6_addr.begin(), e.ipv6_addr.end(), f.begin() + 22);
  EXPECT_EQ(run(cfg6_, f).verdict, Verdict::kMartian);
  ASSERT_TRUE(parse_endpoint("::10.0.0.2", kPort, &e));  // deprecated compatible form: not this rule
  std::copy(e.ipv6_addr.begin(), e.ipv6_addr.end(), f.begin() + 22);
  EXPECT_EQ(run(cfg6_, f).verdict, Verdict::kAccepted);
}

// Step 1's fast path (untagged IPv4 without options, two 16-byte compares)
// must answer exactly as the general path for every frame it takes. Every
// byte of the Ethernet, IP and UDP headers and the first payload bytes is
// set to values that matter (the fields' right values, their neighbours,
// 0, 0xFF, the fragment and DF bits), one and two at a time, at lengths
// around the fast path's minimum, and the two lengths against each other;
// a single difference in verdict or view fails. With the fragment-offset
// mask, the frame-length or the UDP-length check taken out of the fast
// path, this fails.
TEST_F(LadderTest, TheFastPathOfStepOneAnswersAsTheGeneralPath) {
  const auto same = [](const LadderConfig& cfg, const Bytes& f) {
    UdpView fast;
    UdpView general;
    const auto len = static_cast<std::uint32_t>(f.size());
    const Verdict a = parse_l2_l4(cfg.local, f.data(), len, &fast);
    const Verdict b = parse_l2_l4_general(cfg.local, f.data(), len, &general);
    if (a != b) return false;
    if (a != Verdict::kAccepted) return true;
    return fast.payload_offset == general.payload_offset && fast.payload_len == general.payload_len &&
           fast.src_ip == general.src_ip && fast.src_ip_len == general.src_ip_len && fast.src_port == general.src_port;
  };
  set_ipv4_subnet(&cfg4_.local, 24);
  const std::vector<std::uint8_t> values = {0x00, 0x01, 0x02, 0x05, 0x06, 0x07, 0x08, 0x0A, 0x11, 0x12,
                                            0x1E, 0x1F, 0x20, 0x3F, 0x40, 0x44, 0x45, 0x46, 0x4F, 0x60,
                                            0x7F, 0x80, 0x81, 0x86, 0xC0, 0xDD, 0xE0, 0xFE, 0xFF};
  std::size_t accepted = 0;
  std::size_t checked = 0;
  for (const std::size_t payload : {0, 1, 2, 6, 48, 86}) {
    const Bytes base = frame(Bytes(payload, 0x47));
    for (std::size_t cut = 0; cut <= 3; ++cut) {
      Bytes f(base.begin(), base.end() - static_cast<std::ptrdiff_t>(std::min(cut, base.size())));
      ASSERT_TRUE(same(cfg4_, f)) << "payload " << payload << " cut " << cut;
      for (std::size_t i = 12; i < std::min<std::size_t>(f.size(), 46); ++i) {
        for (const std::uint8_t v : values) {
          Bytes g = f;
          g[i] = v;
          UdpView view;
          accepted +=
              parse_l2_l4(cfg4_.local, g.data(), static_cast<std::uint32_t>(g.size()), &view) == Verdict::kAccepted;
          ++checked;
          ASSERT_TRUE(same(cfg4_, g)) << "byte " << i << " = " << int{v} << ", payload " << payload;
        }
      }
    }
  }
  // The two lengths against each other and the frame: every UDP length up
  // to past the payload with the IP total that matches it, one less and one more.
  for (const std::size_t payload : {0, 6, 48}) {
    const Bytes base = frame(Bytes(payload, 0x47));
    for (std::uint16_t udp_len = 0; udp_len <= payload + 10; ++udp_len) {
      for (const int skew : {-1, 0, 1}) {
        Bytes g = base;
        put16(g, 38, udp_len);
        put16(g, 16, static_cast<std::uint16_t>(udp_len + 20 + skew));
        UdpView view;
        accepted +=
            parse_l2_l4(cfg4_.local, g.data(), static_cast<std::uint32_t>(g.size()), &view) == Verdict::kAccepted;
        ++checked;
        ASSERT_TRUE(same(cfg4_, g)) << "udp length " << udp_len << " skew " << skew << ", payload " << payload;
      }
    }
  }
  // Two fields at once, from a seeded RNG.
  std::mt19937 rng(17);
  const Bytes base = frame(Bytes(86, 0x47));
  for (int n = 0; n < 20000; ++n) {
    Bytes g = base;
    for (int k = 0; k < 2; ++k) {
      const std::size_t i = 12 + rng() % 34;
      g[i] = rng() % 4 == 0 ? values[rng() % values.size()] : static_cast<std::uint8_t>(g[i] ^ (1u << (rng() % 8)));
    }
    g.resize(g.size() - rng() % 4);
    UdpView v;
    accepted += parse_l2_l4(cfg4_.local, g.data(), static_cast<std::uint32_t>(g.size()), &v) == Verdict::kAccepted;
    ++checked;
    ASSERT_TRUE(same(cfg4_, g)) << "case " << n;
  }
  // The cases reached both sides of the fast path's checks.
  EXPECT_GT(accepted, 1000u);
  EXPECT_LT(accepted, checked / 2);
}

TEST_F(LadderTest, ADatagramSealedForAnotherMemberIsRefused) {
  LocalEndpoint other;
  ASSERT_TRUE(parse_endpoint("10.0.0.2", kPort, &other));
  to_ = other.receiver;
  const Bytes for_b = frame(sealed("for 10.0.0.2"));
  EXPECT_EQ(verdict(for_b), Verdict::kWrongReceiver);
  LadderConfig collide = cfg4_;
  collide.local.receiver.tag = other.receiver.tag;
  EXPECT_EQ(run(collide, for_b).verdict, Verdict::kBadAuth);
  to_ = cfg4_.local.receiver;
  EXPECT_EQ(verdict(frame(sealed("for us"))), Verdict::kAccepted);
}

TEST_F(LadderTest, BadFieldsAndOversizedPayloadAreMalformed) {
  Bytes cls = sealed("x");
  cls[5] = 7;
  EXPECT_EQ(verdict(frame(cls)), Verdict::kMalformed);
  LadderConfig small = cfg4_;
  small.max_payload_bytes = 40;
  EXPECT_EQ(run(small, frame(sealed(std::string(25, 'a')))).verdict, Verdict::kMalformed);
  EXPECT_EQ(run(small, frame(sealed(std::string(24, 'a')))).verdict, Verdict::kAccepted);
}

TEST_F(LadderTest, ForeignClusterIsCheckedBeforeTheKey) {
  EXPECT_EQ(verdict(frame(sealed("x", 1, "other"))), Verdict::kForeignCluster);
  EXPECT_EQ(verdict(frame(sealed("x", 9, "other"))), Verdict::kForeignCluster);
}

TEST_F(LadderTest, UnknownKeyAndSuiteMismatch) {
  EXPECT_EQ(verdict(frame(sealed("x", 9))), Verdict::kUnknownKey);
  Bytes suite = sealed("x");
  suite[6] = static_cast<std::uint8_t>(crypto::Suite::kAes256Gcm);
  EXPECT_EQ(verdict(frame(suite)), Verdict::kUnknownKey);
}

TEST_F(LadderTest, ForgedHeaderFailsTheMacForgedBodyFailsTheAead) {
  Bytes mac = sealed("x");
  mac[crypto::kMacOffset] ^= 1;
  EXPECT_EQ(verdict(frame(mac)), Verdict::kBadMac);
  Bytes ts = sealed("x");
  ts[20] ^= 1;  // timestamp: covered by the MAC
  EXPECT_EQ(verdict(frame(ts)), Verdict::kBadMac);
  Bytes tag = sealed("x");
  tag.back() ^= 1;
  EXPECT_EQ(verdict(frame(tag)), Verdict::kBadAuth);
  Bytes body = sealed("xyz");
  body[crypto::kHeaderBytes] ^= 0x80;
  EXPECT_EQ(verdict(frame(body)), Verdict::kBadAuth);
}

// Random corruption of valid frames: whatever is accepted must carry exactly
// the plaintext that was sealed, so nothing unauthenticated gets through.
TEST_F(LadderTest, MutatedFramesAreNeverAcceptedWithAlteredContent) {
  std::mt19937_64 rng(12345);
  const std::string text = "alive node-7 incarnation 42";
  int accepted = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    Bytes f = frame(sealed(text, 1 + static_cast<std::uint8_t>(iter % 2)), iter % 3 == 0);
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < flips; ++k) f[rng() % f.size()] ^= static_cast<std::uint8_t>(1 + rng() % 255);
    if (rng() % 8 == 0) f.resize(rng() % (f.size() + 1));
    const LadderResult r = run_ladder(iter % 3 == 0 ? cfg6_ : cfg4_, f.data(), static_cast<std::uint32_t>(f.size()));
    if (r.verdict != Verdict::kAccepted) continue;
    ++accepted;
    ASSERT_EQ(std::string(f.begin() + r.plaintext_offset, f.begin() + r.plaintext_offset + r.plaintext_len), text);
  }
  // Flips in MACs, checksums, TTL and source fields are harmless: some pass.
  EXPECT_GT(accepted, 0);
}

}  // namespace
}  // namespace gw::dp
