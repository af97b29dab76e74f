// dataplane/memberlist/filter.h: the per-frame verdicts of mode: memberlist
// on frames built here (Ethernet, 802.1Q, IPv4 with options, IPv6 with
// extension headers, UDP, TCP), memberlist payloads from the inspector
// tests' encoder (packets.h), an injected clock, and counters that show
// what reached the inspector.
#include "dataplane/memberlist/filter.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "tests/unit/dataplane/memberlist/packets.h"

namespace gw::dp::ml {
namespace {

using test::Bin;
using test::Bytes;

constexpr std::uint64_t kSec = 1'000'000'000ULL;
const Bytes kKey16 = test::bytes_of("0123456789abcdef");
const Bytes kKey32 = test::bytes_of("0123456789abcdef0123456789abcdef");
const Bytes kOther = test::bytes_of("ffffffffffffffff");

using Ip = std::vector<std::uint8_t>;
const Ip kSrc4 = {10, 0, 0, 2};
const Ip kDst4 = {10, 0, 0, 1};
const Ip kSrc6 = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};
const Ip kDst6 = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
const Ip kMapped = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 2};

void put16(Bytes& b, std::size_t at, std::uint16_t v) {
  b[at] = static_cast<std::uint8_t>(v >> 8);
  b[at + 1] = static_cast<std::uint8_t>(v);
}

Bytes udp(std::uint16_t sport, std::uint16_t dport, const Bytes& payload) {
  Bytes b(8);
  put16(b, 0, sport);
  put16(b, 2, dport);
  put16(b, 4, static_cast<std::uint16_t>(8 + payload.size()));
  b.insert(b.end(), payload.begin(), payload.end());
  return b;
}

constexpr std::uint8_t kSyn = 0x02;
constexpr std::uint8_t kAck = 0x10;
Bytes tcp(std::uint16_t sport, std::uint16_t dport, std::uint8_t flags, std::uint8_t doff = 5) {
  Bytes b(20);
  put16(b, 0, sport);
  put16(b, 2, dport);
  b[12] = static_cast<std::uint8_t>(doff << 4);
  b[13] = flags;
  return b;
}

struct V4Opts {
  std::uint8_t proto = 17;
  std::size_t options = 0;  // bytes of IP options (a multiple of 4)
  std::uint16_t frag = 0;   // flags and offset field
  int total_delta = 0;      // added to the total length field
};
Bytes ipv4(const Ip& src, const Ip& dst, const Bytes& l4, V4Opts o = {}) {
  Bytes b(20 + o.options, 0);
  b[0] = static_cast<std::uint8_t>(0x40 | ((20 + o.options) / 4));
  put16(b, 2, static_cast<std::uint16_t>(static_cast<int>(b.size() + l4.size()) + o.total_delta));
  put16(b, 6, o.frag);
  b[8] = 64;
  b[9] = o.proto;
  std::copy(src.begin(), src.end(), b.begin() + 12);
  std::copy(dst.begin(), dst.end(), b.begin() + 16);
  for (std::size_t i = 20; i < b.size(); ++i) b[i] = 1;  // NOP options
  b.insert(b.end(), l4.begin(), l4.end());
  return b;
}

Bytes ipv4_tcp(const Ip& src, const Ip& dst, const Bytes& l4, V4Opts o = {}) {
  o.proto = 6;
  return ipv4(src, dst, l4, o);
}

// `ext`: extension headers as (type, bytes) in order, each built whole.
Bytes ipv6(const Ip& src, const Ip& dst, std::uint8_t proto, const Bytes& l4,
           std::vector<std::pair<std::uint8_t, Bytes>> ext = {}, int payload_delta = 0) {
  Bytes b(40, 0);
  b[0] = 0x60;
  b[6] = ext.empty() ? proto : ext[0].first;
  b[7] = 64;
  std::copy(src.begin(), src.end(), b.begin() + 8);
  std::copy(dst.begin(), dst.end(), b.begin() + 24);
  for (std::size_t i = 0; i < ext.size(); ++i) {
    Bytes h = ext[i].second;
    h[0] = i + 1 < ext.size() ? ext[i + 1].first : proto;
    b.insert(b.end(), h.begin(), h.end());
  }
  b.insert(b.end(), l4.begin(), l4.end());
  put16(b, 4, static_cast<std::uint16_t>(static_cast<int>(b.size() - 40) + payload_delta));
  return b;
}
std::pair<std::uint8_t, Bytes> dest_opts() { return {60, Bytes{0, 0, 1, 4, 0, 0, 0, 0}}; }  // PadN
std::pair<std::uint8_t, Bytes> fragment(std::uint16_t offset_units, bool more) {
  Bytes h(8, 0);
  put16(h, 2, static_cast<std::uint16_t>((offset_units << 3) | (more ? 1 : 0)));
  return {44, h};
}

Bytes eth(std::uint16_t type, const Bytes& l3, bool vlan = false) {
  // Sized up front: GCC 12's -Warray-bounds misreads insert() after an
  // initializer list at -O2 (as packets.h notes).
  const std::size_t l2 = vlan ? 18 : 14;
  Bytes b(l2 + l3.size(), 0);
  const std::uint8_t macs[12] = {2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2};
  std::copy(std::begin(macs), std::end(macs), b.begin());
  if (vlan) {
    put16(b, 12, 0x8100);
    put16(b, 14, 42);
  }
  put16(b, l2 - 2, type);
  std::copy(l3.begin(), l3.end(), b.begin() + static_cast<std::ptrdiff_t>(l2));
  return b;
}
Bytes eth4(const Bytes& l3, bool vlan = false) { return eth(0x0800, l3, vlan); }
Bytes eth6(const Bytes& l3, bool vlan = false) { return eth(0x86DD, l3, vlan); }

// A gossip UDP frame from kSrc4:7946 to the agent.
Bytes gossip4(const Bytes& payload, const Ip& src = kSrc4) { return eth4(ipv4(src, kDst4, udp(7946, 7946, payload))); }

std::unique_ptr<Keyring> ring(std::vector<Bytes> keys) {
  std::vector<std::span<const std::uint8_t>> spans(keys.begin(), keys.end());
  std::string err;
  auto r = Keyring::make(spans, &err);
  EXPECT_NE(r, nullptr) << err;
  return r;
}

CidrSet cidrs(std::vector<std::string> list) {
  std::string err;
  std::optional<CidrSet> s = CidrSet::parse(list, &err);
  EXPECT_TRUE(s.has_value()) << err;
  return s ? std::move(*s) : CidrSet{};
}

std::uint64_t sum(const auto& a) {
  std::uint64_t n = 0;
  for (auto v : a) n += v;
  return n;
}

class FilterTest : public ::testing::Test {
 protected:
  FilterTest() { cfg.sources = 64; }
  void SetUp() override {
    if (!crypto::ipsecmb_gcm_available()) GTEST_SKIP() << "no AES-NI: ipsec-mb cannot run here";
  }
  // Builds the FilterLcore after the test set `cfg`.
  FilterLcore& lcore() {
    if (!lcore_) lcore_ = std::make_unique<FilterLcore>(cfg, 42);
    return *lcore_;
  }
  // One inbound frame; checks it was not written.
  FilterResult in(const Bytes& frame, const Keyring* keys = nullptr, std::uint64_t now = kSec) {
    const Bytes before = frame;
    const FilterResult r = lcore().inbound(frame.data(), static_cast<std::uint32_t>(frame.size()), keys, now);
    EXPECT_EQ(frame, before) << "inbound wrote the frame";
    return r;
  }
  FrameVerdict verdict(const Bytes& frame, const Keyring* keys = nullptr, std::uint64_t now = kSec) {
    return in(frame, keys, now).verdict;
  }
  FrameVerdict out(const Bytes& frame, std::uint64_t now = kSec) {
    const Bytes before = frame;
    const FrameVerdict v = lcore().outbound(frame.data(), static_cast<std::uint32_t>(frame.size()), now);
    EXPECT_EQ(frame, before) << "outbound wrote the frame";
    return v;
  }
  const FilterCounters& counters() { return lcore().counters(); }
  std::uint64_t frames(FrameVerdict v) { return counters().frames[static_cast<std::size_t>(v)]; }
  std::uint64_t ml(Verdict v) { return counters().ml[static_cast<std::size_t>(v)]; }

  FilterConfig cfg;
  std::unique_ptr<FilterLcore> lcore_;
};

// ---- Not gossip: passes untouched ----

TEST_F(FilterTest, WhatIsNotGossipPasses) {
  Bytes arp = eth(0x0806, Bytes(28, 0));
  EXPECT_EQ(verdict(arp), FrameVerdict::kPassIn);
  EXPECT_EQ(verdict(Bytes{1, 2, 3}), FrameVerdict::kPassIn);                                       // runt
  EXPECT_EQ(verdict(eth4(ipv4(kSrc4, kDst4, Bytes(8, 0), {.proto = 1}))), FrameVerdict::kPassIn);  // ICMP
  EXPECT_EQ(verdict(eth4(ipv4(kSrc4, kDst4, udp(5353, 53, Bytes(10, 1))))), FrameVerdict::kPassIn);
  EXPECT_EQ(verdict(eth4(ipv4_tcp(kSrc4, kDst4, tcp(40000, 22, kSyn)))), FrameVerdict::kPassIn);
  EXPECT_EQ(verdict(eth6(ipv6(kSrc6, kDst6, 58, Bytes(24, 0)))), FrameVerdict::kPassIn);  // ND
  EXPECT_EQ(verdict(eth6(ipv6(kSrc6, kDst6, 17, udp(7946, 8000, Bytes(4, 0))))), FrameVerdict::kPassIn);
  // The gossip port as a *source* is not gossip inbound.
  EXPECT_EQ(verdict(eth4(ipv4(kSrc4, kDst4, udp(7946, 9999, Bytes(4, 0))))), FrameVerdict::kPassIn);
  // Lies in frames to other ports are the kernel's business.
  EXPECT_EQ(verdict(eth4(ipv4(kSrc4, kDst4, udp(1, 2, Bytes(4, 0)), {.total_delta = 100}))), FrameVerdict::kPassIn);
  EXPECT_EQ(frames(FrameVerdict::kPassIn), 9u);
  EXPECT_EQ(sum(counters().ml), 0u);
}

// ---- Gossip UDP reaches the inspector ----

TEST_F(FilterTest, PlaintextClusterGossipReachesTheAgentOverEveryEncapsulation) {
  const Bytes msg = test::suspect();
  Bytes padded = gossip4(msg);  // Ethernet padding after the IP datagram is not part of it
  padded.insert(padded.end(), 20, 0xee);
  const std::vector<Bytes> frames_in = {
      gossip4(msg),
      eth4(ipv4(kSrc4, kDst4, udp(7946, 7946, msg), {.options = 8})),
      eth4(ipv4(kSrc4, kDst4, udp(7946, 7946, msg)), /*vlan=*/true),
      eth6(ipv6(kSrc6, kDst6, 17, udp(7946, 7946, msg))),
      eth6(ipv6(kSrc6, kDst6, 17, udp(7946, 7946, msg)), true),
      eth6(ipv6(kSrc6, kDst6, 17, udp(7946, 7946, msg), {dest_opts()})),
      padded,
  };
  std::uint64_t bytes = 0;
  for (std::size_t i = 0; i < frames_in.size(); ++i) {
    EXPECT_EQ(verdict(frames_in[i]), FrameVerdict::kToAgent) << "case " << i;
    bytes += frames_in[i].size();
  }
  EXPECT_EQ(frames(FrameVerdict::kToAgent), frames_in.size());
  EXPECT_EQ(ml(Verdict::kAccepted), frames_in.size());
  EXPECT_EQ(counters().bytes_to_agent, bytes);
}

TEST_F(FilterTest, ThePingRuleSeesTheSenderAsTheSourceIpAndUdpPort) {
  // A ping asking for its reply at the sender itself: fine; at a stranger: reflection.
  const Bytes own = test::ping(1, test::ip4(10, 0, 0, 2), 7946);
  const Bytes other = test::ping(1, test::ip4(192, 0, 2, 9), 7946);
  FilterResult r = in(gossip4(own));
  EXPECT_EQ(r.verdict, FrameVerdict::kToAgent);
  r = in(gossip4(other));
  EXPECT_EQ(r.verdict, FrameVerdict::kDropInspected);
  EXPECT_EQ(r.ml, Verdict::kProbeSource);
  // From an IPv4-mapped IPv6 source the sender is folded to 10.0.0.2.
  r = in(eth6(ipv6(kMapped, kDst6, 17, udp(7946, 7946, own))));
  EXPECT_EQ(r.verdict, FrameVerdict::kToAgent);
  // The UDP source port counts: a reply asked at 7946 from port 7000 names someone else.
  r = in(eth4(ipv4(kSrc4, kDst4, udp(7000, 7946, own))));
  EXPECT_EQ(r.ml, Verdict::kProbeSource);
}

TEST_F(FilterTest, InspectVerdictsThroughInbound) {
  struct Case {
    Bytes payload;
    Verdict want;
  };
  const std::vector<Case> cases = {
      {test::alive(Bin{{1, 5, 2}}), Verdict::kBadVsn},
      {test::compound({test::ping(1, test::ip4(10, 0, 0, 2), 7946), test::ping(2, test::ip4(10, 0, 0, 2), 7946)}),
       Verdict::kProbeCount},
      {test::with_crc(test::suspect(), 1), Verdict::kBadCrc},
      {Bytes{6, 0x80}, Verdict::kUnexpectedType},
      {test::suspect(std::string(200, 'n')), Verdict::kNameTooLong},
      {Bytes{}, Verdict::kTooShort},
  };
  for (const Case& c : cases) {
    const FilterResult r = in(gossip4(c.payload));
    EXPECT_EQ(r.verdict, FrameVerdict::kDropInspected) << verdict_name(c.want);
    EXPECT_EQ(r.ml, c.want) << verdict_name(c.want);
    EXPECT_EQ(ml(c.want), 1u) << verdict_name(c.want);
  }
  EXPECT_EQ(frames(FrameVerdict::kDropInspected), cases.size());
}

TEST_F(FilterTest, TheLabelIsTheFilterConfigs) {
  cfg.label = "dc1";
  Bytes labelled = test::label_header("dc1");
  const Bytes msg = test::suspect();
  labelled.insert(labelled.end(), msg.begin(), msg.end());
  EXPECT_EQ(verdict(gossip4(labelled)), FrameVerdict::kToAgent);
  EXPECT_EQ(in(gossip4(msg)).ml, Verdict::kBadLabel);
}

TEST_F(FilterTest, AKeyringOpensAndCountsTheKeyThatOpened) {
  const auto keys = ring({kKey16, kKey32});
  EXPECT_EQ(verdict(gossip4(test::seal(kKey32, test::suspect())), keys.get()), FrameVerdict::kToAgent);
  EXPECT_EQ(verdict(gossip4(test::seal(kKey16, test::suspect())), keys.get()), FrameVerdict::kToAgent);
  EXPECT_EQ(verdict(gossip4(test::seal(kKey32, test::suspect())), keys.get()), FrameVerdict::kToAgent);
  EXPECT_EQ(counters().opened_by_key[0], 1u);
  EXPECT_EQ(counters().opened_by_key[1], 2u);
  // Opened but refused later still tells which key the sender holds.
  EXPECT_EQ(in(gossip4(test::seal(kKey16, test::alive(Bin{{1, 5, 2}}))), keys.get()).ml, Verdict::kBadVsn);
  EXPECT_EQ(counters().opened_by_key[0], 2u);
  EXPECT_EQ(in(gossip4(test::seal(kOther, test::suspect())), keys.get()).ml, Verdict::kBadAuth);
  EXPECT_EQ(in(gossip4(test::suspect()), keys.get()).ml, Verdict::kPlaintext);
  EXPECT_EQ(sum(counters().opened_by_key), 4u);
}

TEST_F(FilterTest, PlaintextIsReadOnlyFromTheRolloutSources) {
  cfg.plaintext_allow = cidrs({"10.0.0.0/24"});
  const auto keys = ring({kKey16});
  FilterResult r = in(gossip4(test::suspect()), keys.get());
  EXPECT_EQ(r.verdict, FrameVerdict::kToAgent);
  EXPECT_EQ(r.ml, Verdict::kAcceptedPlaintext);
  r = in(gossip4(test::suspect(), {10, 0, 1, 2}), keys.get());
  EXPECT_EQ(r.verdict, FrameVerdict::kDropInspected);
  EXPECT_EQ(r.ml, Verdict::kPlaintext);
  // A sealed packet from a rollout source is still opened.
  EXPECT_EQ(in(gossip4(test::seal(kKey16, test::suspect())), keys.get()).ml, Verdict::kAccepted);
}

// ---- Frames that lie ----

TEST_F(FilterTest, LengthsThatLieAndFragmentsToAGossipPortAreDropped) {
  const Bytes msg = test::suspect();
  Bytes udp_long = udp(7946, 7946, msg);
  put16(udp_long, 4, static_cast<std::uint16_t>(udp_long.size() + 1));
  Bytes udp_short = udp(7946, 7946, msg);
  put16(udp_short, 4, static_cast<std::uint16_t>(udp_short.size() - 1));
  Bytes udp_tiny = udp(7946, 7946, msg);
  put16(udp_tiny, 4, 7);
  const std::vector<Bytes> bad = {
      eth4(ipv4(kSrc4, kDst4, udp_long)),
      eth4(ipv4(kSrc4, kDst4, udp_short)),
      eth4(ipv4(kSrc4, kDst4, udp_tiny)),
      eth4(ipv4(kSrc4, kDst4, udp(7946, 7946, msg), {.total_delta = 1})),      // IP longer than the frame
      eth4(ipv4(kSrc4, kDst4, udp(7946, 7946, msg), {.total_delta = -1})),     // IP shorter than UDP says
      eth4(ipv4(kSrc4, kDst4, udp(7946, 7946, msg), {.frag = 0x2000})),        // first fragment (MF)
      eth4(ipv4(kSrc4, kDst4, Bytes{0x1f}, {.frag = 0x2000})),                 // tiny first fragment, no ports
      eth4(ipv4_tcp(kSrc4, kDst4, tcp(40000, 7946, kSyn), {.frag = 0x2000})),  // TCP first fragment
      eth4(ipv4_tcp(kSrc4, kDst4, tcp(40000, 7946, kAck), {.total_delta = 4})),
      eth4(ipv4_tcp(kSrc4, kDst4, Bytes{0x9c, 0x40, 0x1f, 0x0a})),  // TCP ports only (fuzz_filter found a read past it)
      eth4(ipv4_tcp(kSrc4, kDst4, tcp(40000, 7946, kAck, /*doff=*/6))),  // data offset past the end
      eth6(ipv6(kSrc6, kDst6, 17, udp(7946, 7946, msg), {}, 1)),         // payload length lies
      eth6(ipv6(kSrc6, kDst6, 17, udp(7946, 7946, msg), {fragment(0, true)})),
      eth6(ipv6(kSrc6, kDst6, 17, udp(7946, 7946, msg), {fragment(0, false)})),  // atomic fragment
  };
  for (std::size_t i = 0; i < bad.size(); ++i) EXPECT_EQ(verdict(bad[i]), FrameVerdict::kDropFrame) << "case " << i;
  // A later fragment has no ports and cannot reassemble without its dropped first: passes.
  EXPECT_EQ(verdict(eth4(ipv4(kSrc4, kDst4, Bytes(16, 0), {.frag = 0x0004}))), FrameVerdict::kPassIn);
  EXPECT_EQ(verdict(eth6(ipv6(kSrc6, kDst6, 17, Bytes(16, 0), {fragment(3, false)}))), FrameVerdict::kPassIn);
  // Fragments of what is not UDP or TCP are not the filter's business.
  EXPECT_EQ(verdict(eth6(ipv6(kSrc6, kDst6, 58, Bytes(64, 0), {fragment(0, true)}))), FrameVerdict::kPassIn);
  EXPECT_EQ(verdict(eth4(ipv4(kSrc4, kDst4, Bytes(64, 0), {.proto = 1, .frag = 0x2000}))), FrameVerdict::kPassIn);
  // An extension-header chain longer than any sender's is dropped, whatever it carries.
  std::vector<std::pair<std::uint8_t, Bytes>> chain(9, dest_opts());
  EXPECT_EQ(verdict(eth6(ipv6(kSrc6, kDst6, 17, udp(7946, 7946, msg), chain))), FrameVerdict::kDropFrame);
  EXPECT_EQ(frames(FrameVerdict::kDropFrame), bad.size() + 1);
  EXPECT_EQ(sum(counters().ml), 0u) << "nothing that lies reaches the inspector";
}

// ---- Allow-list, buckets ----

TEST_F(FilterTest, SourcesOutsideTheAllowListAreDroppedForUdpAndTcp) {
  cfg.allow = cidrs({"10.0.0.0/24", "fd00::/64"});
  EXPECT_EQ(verdict(gossip4(test::suspect())), FrameVerdict::kToAgent);
  EXPECT_EQ(verdict(gossip4(test::suspect(), {10, 0, 1, 2})), FrameVerdict::kDropNotAllowed);
  EXPECT_EQ(verdict(eth4(ipv4_tcp({192, 0, 2, 1}, kDst4, tcp(40000, 7946, kSyn)))), FrameVerdict::kDropNotAllowed);
  EXPECT_EQ(verdict(eth6(ipv6(kSrc6, kDst6, 17, udp(7946, 7946, test::suspect())))), FrameVerdict::kToAgent);
  Ip outside6 = kSrc6;
  outside6[7] = 1;
  EXPECT_EQ(verdict(eth6(ipv6(outside6, kDst6, 17, udp(7946, 7946, test::suspect())))), FrameVerdict::kDropNotAllowed);
  // v4-mapped sources are their IPv4 address.
  EXPECT_EQ(verdict(eth6(ipv6(kMapped, kDst6, 17, udp(7946, 7946, test::suspect())))), FrameVerdict::kToAgent);
  // Not gossip: the allow-list does not apply.
  EXPECT_EQ(verdict(eth4(ipv4({192, 0, 2, 1}, kDst4, udp(1234, 53, Bytes(4, 0))))), FrameVerdict::kPassIn);
  EXPECT_EQ(frames(FrameVerdict::kDropNotAllowed), 3u);
  EXPECT_EQ(ml(Verdict::kAccepted), 3u);
}

TEST_F(FilterTest, AFloodIsBucketedBeforeAnyCrypto) {
  cfg.per_source = {10, 5};
  const auto keys = ring({kKey16, kKey32});
  // Sealed with a key the cluster does not have: each one that reached the
  // inspector would cost two AES-GCM opens.
  const Bytes forged = gossip4(test::seal(kOther, test::suspect()));
  for (int i = 0; i < 1000; ++i) in(forged, keys.get(), kSec);
  EXPECT_EQ(frames(FrameVerdict::kDropRateLimited), 995u);
  EXPECT_EQ(frames(FrameVerdict::kDropInspected), 5u);
  EXPECT_EQ(ml(Verdict::kBadAuth), 5u);
  EXPECT_EQ(sum(counters().ml), 5u) << "only the bucket's depth reached the inspector";
  // Another source has its own bucket.
  EXPECT_EQ(verdict(gossip4(test::seal(kKey16, test::suspect()), {10, 0, 0, 3}), keys.get(), kSec),
            FrameVerdict::kToAgent);
  // The flooder earns 10 packets a second: 100 ms later, one more.
  EXPECT_EQ(verdict(forged, keys.get(), kSec + kSec / 10), FrameVerdict::kDropInspected);
  EXPECT_EQ(verdict(forged, keys.get(), kSec + kSec / 10), FrameVerdict::kDropRateLimited);
  // The same source over IPv4-mapped IPv6 shares the IPv4 bucket.
  EXPECT_EQ(verdict(eth6(ipv6(kMapped, kDst6, 17, udp(7946, 7946, test::seal(kOther, test::suspect())))), keys.get(),
                    kSec + kSec / 10),
            FrameVerdict::kDropRateLimited);
}

TEST_F(FilterTest, WhatTheFirstBytesRefuseCostsNoBucket) {
  cfg.per_source = {10, 5};
  cfg.label = "dc1";
  const auto keys = ring({kKey16});
  // Plaintext phantoms into an encrypted cluster, a packet without the
  // cluster's label, an empty one: refused by their first bytes, before the
  // source's bucket (cheapest check first), so they spend none of it.
  const Bytes labelled_plain = test::label_header("dc1");
  Bytes phantom = labelled_plain;
  const Bytes alive = test::alive(test::vsn6());
  phantom.insert(phantom.end(), alive.begin(), alive.end());
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(verdict(gossip4(phantom), keys.get(), kSec), FrameVerdict::kDropInspected);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(verdict(gossip4(alive), keys.get(), kSec), FrameVerdict::kDropInspected);
  EXPECT_EQ(ml(Verdict::kPlaintext), 1000u);
  EXPECT_EQ(ml(Verdict::kBadLabel), 100u);
  EXPECT_EQ(frames(FrameVerdict::kDropRateLimited), 0u);
  // The source's bucket is whole: its next five sealed packets pass, the sixth is over it.
  const Bytes sealed = test::seal(kKey16, test::suspect(), 1, "dc1");  // with the label header
  for (int i = 0; i < 5; ++i) EXPECT_EQ(verdict(gossip4(sealed), keys.get(), kSec), FrameVerdict::kToAgent);
  EXPECT_EQ(verdict(gossip4(sealed), keys.get(), kSec), FrameVerdict::kDropRateLimited);
  // In rollout, plaintext from an allowed source is read, so it goes through the bucket.
  cfg.plaintext_allow = cidrs({"10.0.0.0/8"});
  FilterLcore rollout(cfg, 1);
  const Bytes frame = gossip4(phantom);
  EXPECT_EQ(rollout.inbound(frame.data(), static_cast<std::uint32_t>(frame.size()), keys.get(), kSec).ml,
            Verdict::kAcceptedPlaintext);
}

TEST_F(FilterTest, NewTcpConnectionsPerSourceAreCapped) {
  cfg.tcp_connections = {1, 2};
  const Bytes syn = eth4(ipv4_tcp(kSrc4, kDst4, tcp(40000, 7946, kSyn)));
  EXPECT_EQ(verdict(syn), FrameVerdict::kPassIn);
  EXPECT_EQ(verdict(syn), FrameVerdict::kPassIn);
  EXPECT_EQ(verdict(syn), FrameVerdict::kDropTcpConnRate);
  EXPECT_EQ(verdict(eth6(ipv6(kMapped, kDst6, 6, tcp(40001, 7946, kSyn)))), FrameVerdict::kDropTcpConnRate);
  // Segments of open connections, and SYN-ACKs, cost nothing.
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(verdict(eth4(ipv4_tcp(kSrc4, kDst4, tcp(40000, 7946, kAck)))), FrameVerdict::kPassIn);
    EXPECT_EQ(verdict(eth4(ipv4_tcp(kSrc4, kDst4, tcp(40000, 7946, kSyn | kAck)))), FrameVerdict::kPassIn);
  }
  // Another source, and the same one a second later.
  EXPECT_EQ(verdict(eth4(ipv4_tcp({10, 0, 0, 9}, kDst4, tcp(40000, 7946, kSyn)))), FrameVerdict::kPassIn);
  EXPECT_EQ(verdict(syn, nullptr, 2 * kSec), FrameVerdict::kPassIn);
  EXPECT_EQ(verdict(syn, nullptr, 2 * kSec), FrameVerdict::kDropTcpConnRate);
  // SYNs to other ports are not counted.
  for (int i = 0; i < 5; ++i)
    EXPECT_EQ(verdict(eth4(ipv4_tcp(kSrc4, kDst4, tcp(40000, 22, kSyn)))), FrameVerdict::kPassIn);
  EXPECT_EQ(frames(FrameVerdict::kDropTcpConnRate), 3u);
  EXPECT_EQ(sum(counters().ml), 0u);
}

TEST_F(FilterTest, SeveralGossipPorts) {
  cfg.ports = {7946, 8301};
  EXPECT_EQ(verdict(eth4(ipv4(kSrc4, kDst4, udp(8301, 8301, Bytes{6, 0x80})))), FrameVerdict::kDropInspected);
  EXPECT_EQ(verdict(eth4(ipv4(kSrc4, kDst4, udp(8301, 7946, test::suspect())))), FrameVerdict::kToAgent);
  EXPECT_EQ(verdict(eth4(ipv4(kSrc4, kDst4, udp(8301, 8302, Bytes{6, 0x80})))), FrameVerdict::kPassIn);
}

// ---- Outbound ----

TEST_F(FilterTest, TheAgentsGossipSpendsTheEgressBudgetByWholeFrame) {
  cfg.egress_bytes_per_sec = 10'000;
  cfg.egress_burst_bytes = 3'000;
  const Bytes gossip = eth4(ipv4(kDst4, kSrc4, udp(7946, 7946, Bytes(1000 - 14 - 20 - 8, 0xab))));
  ASSERT_EQ(gossip.size(), 1000u);
  const std::uint64_t t0 = 5 * kSec;
  EXPECT_EQ(out(gossip, t0), FrameVerdict::kToNetwork);
  EXPECT_EQ(out(gossip, t0), FrameVerdict::kToNetwork);
  EXPECT_EQ(out(gossip, t0), FrameVerdict::kToNetwork);
  EXPECT_EQ(out(gossip, t0), FrameVerdict::kDropEgressBudget);
  // Everything else the agent's host sends is not charged.
  EXPECT_EQ(out(eth4(ipv4(kDst4, kSrc4, udp(40000, 53, Bytes(1200, 0)))), t0), FrameVerdict::kToNetwork);
  EXPECT_EQ(out(eth4(ipv4_tcp(kDst4, kSrc4, tcp(7946, 40000, kAck))), t0), FrameVerdict::kToNetwork);
  EXPECT_EQ(out(eth(0x0806, Bytes(28, 0)), t0), FrameVerdict::kToNetwork);
  // 10,000 B/s: 99.9 ms later not yet 1,000 bytes, at 100 ms one frame.
  EXPECT_EQ(out(gossip, t0 + 99'900'000), FrameVerdict::kDropEgressBudget);
  EXPECT_EQ(out(gossip, t0 + 100'000'000), FrameVerdict::kToNetwork);
  EXPECT_EQ(out(gossip, t0 + 100'000'000), FrameVerdict::kDropEgressBudget);
  // A long pause refills to the burst only.
  for (int i = 0; i < 3; ++i) EXPECT_EQ(out(gossip, t0 + 100 * kSec), FrameVerdict::kToNetwork);
  EXPECT_EQ(out(gossip, t0 + 100 * kSec), FrameVerdict::kDropEgressBudget);
  // IPv6 gossip is charged too; a clock that goes back adds nothing.
  EXPECT_EQ(out(eth6(ipv6(kDst6, kSrc6, 17, udp(7946, 7946, Bytes(10, 0)))), t0), FrameVerdict::kDropEgressBudget);
  EXPECT_EQ(frames(FrameVerdict::kToNetwork), 3u + 3u + 1u + 3u);
  EXPECT_EQ(frames(FrameVerdict::kDropEgressBudget), 5u);
  EXPECT_EQ(counters().bytes_to_network, 7u * 1000u);
  EXPECT_EQ(counters().bytes_egress_dropped, 4u * 1000u + (14 + 40 + 8 + 10));
}

TEST_F(FilterTest, NoEgressLimitByDefault) {
  const Bytes gossip = eth4(ipv4(kDst4, kSrc4, udp(7946, 7946, Bytes(1400, 0))));
  for (int i = 0; i < 10000; ++i) ASSERT_EQ(out(gossip, kSec), FrameVerdict::kToNetwork);
  EXPECT_EQ(counters().bytes_to_network, 10000u * gossip.size());
}

// ---- Every verdict, one counter each ----

TEST_F(FilterTest, EveryFrameVerdictIsReachedAndCountedOnce) {
  cfg.allow = cidrs({"10.0.0.0/8"});
  cfg.per_source = {1, 1};
  cfg.tcp_connections = {1, 1};
  cfg.egress_bytes_per_sec = 1;
  cfg.egress_burst_bytes = 1500;
  const Bytes big = eth4(ipv4(kDst4, kSrc4, udp(7946, 7946, Bytes(1000, 0))));
  std::set<FrameVerdict> seen;
  const auto note = [&](FrameVerdict v) { seen.insert(v); };
  note(verdict(gossip4(test::suspect())));                                               // to_agent
  note(verdict(gossip4(test::suspect())));                                               // drop_rate_limited
  note(verdict(gossip4(Bytes{6, 0x80}, {10, 0, 0, 7})));                                 // drop_inspected
  note(verdict(eth(0x0806, Bytes(28, 0))));                                              // pass_in
  note(verdict(eth4(ipv4(kSrc4, kDst4, udp(7946, 7946, Bytes{1}), {.frag = 0x2000}))));  // drop_frame
  note(verdict(gossip4(test::suspect(), {192, 0, 2, 1})));                               // drop_not_allowed
  note(verdict(eth4(ipv4_tcp(kSrc4, kDst4, tcp(1, 7946, kSyn)))));                       // pass_in
  note(verdict(eth4(ipv4_tcp(kSrc4, kDst4, tcp(1, 7946, kSyn)))));                       // drop_tcp_conn_rate
  note(out(big));                                                                        // to_network
  note(out(big));                                                                        // drop_egress_budget
  EXPECT_EQ(seen.size(), kFrameVerdictCount);
  for (std::size_t i = 0; i < kFrameVerdictCount; ++i) {
    EXPECT_EQ(counters().frames[i], i == static_cast<std::size_t>(FrameVerdict::kPassIn) ? 2u : 1u)
        << kFrameVerdictNames[i];
  }
}

// ---- CidrSet ----

bool has(const CidrSet& s, const Ip& ip) { return s.contains(ip.data(), ip.size()); }

TEST(CidrSet, EdgesOfPrefixes) {
  const CidrSet all4 = cidrs({"0.0.0.0/0"});
  EXPECT_TRUE(has(all4, {0, 0, 0, 0}));
  EXPECT_TRUE(has(all4, {255, 255, 255, 255}));
  EXPECT_TRUE(has(all4, kMapped)) << "v4-mapped is IPv4";
  EXPECT_FALSE(has(all4, kSrc6));

  const CidrSet all6 = cidrs({"::/0"});
  EXPECT_TRUE(has(all6, kSrc6));
  EXPECT_FALSE(has(all6, kSrc4));
  EXPECT_FALSE(has(all6, kMapped)) << "v4-mapped is folded to IPv4 first";

  const CidrSet host = cidrs({"10.0.0.2/32", "fd00::2/128", "192.0.2.7"});
  EXPECT_TRUE(has(host, {10, 0, 0, 2}));
  EXPECT_FALSE(has(host, {10, 0, 0, 3}));
  EXPECT_TRUE(has(host, kSrc6));
  EXPECT_FALSE(has(host, kDst6));
  EXPECT_TRUE(has(host, {192, 0, 2, 7}));
  EXPECT_TRUE(has(host, kMapped));

  const CidrSet odd = cidrs({"10.8.0.0/13", "fd00:0:0:fe::/63"});
  EXPECT_TRUE(has(odd, {10, 15, 255, 255}));
  EXPECT_FALSE(has(odd, {10, 16, 0, 0}));
  EXPECT_FALSE(has(odd, {10, 7, 255, 255}));
  Ip in6 = {0xfd, 0, 0, 0, 0, 0, 0, 0xff, 1, 2, 3, 4, 5, 6, 7, 8};
  EXPECT_TRUE(has(odd, in6));
  in6[7] = 0xfd;
  EXPECT_FALSE(has(odd, in6));

  // A v4-mapped prefix is an IPv4 prefix.
  const CidrSet mapped = cidrs({"::ffff:10.0.0.0/104"});
  EXPECT_TRUE(has(mapped, {10, 1, 2, 3}));
  EXPECT_TRUE(has(mapped, kMapped));
  EXPECT_FALSE(has(mapped, {11, 0, 0, 0}));
  const CidrSet mapped_all = cidrs({"::ffff:0.0.0.0/96"});
  EXPECT_TRUE(has(mapped_all, {203, 0, 113, 1}));
  EXPECT_FALSE(has(mapped_all, kSrc6));

  const CidrSet none = cidrs({});
  EXPECT_TRUE(none.empty());
  EXPECT_FALSE(has(none, kSrc4));
  EXPECT_FALSE(has(host, Ip{1, 2, 3})) << "only 4 or 16 bytes";
}

TEST(CidrSet, BadEntriesNameTheirIndex) {
  for (const char* bad : {"10.0.0.0/33", "fd00::/129", "10.0.0.0/", "10.0.0.0/x", "10.1.0.0/8", "host.example",
                          "10.0.0.0/-1", "", "10.0.0.0/8/8"}) {
    const std::vector<std::string> list = {"10.0.0.0/8", bad};
    std::string err;
    EXPECT_FALSE(CidrSet::parse(list, &err).has_value()) << bad;
    EXPECT_EQ(err.rfind("[1]: ", 0), 0u) << err;
  }
}

}  // namespace
}  // namespace gw::dp::ml
