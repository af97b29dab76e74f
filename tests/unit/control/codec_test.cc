// control/codec.h: round trips, determinism, hostile bytes, and the engine's size
// estimate being an upper bound of the real encoding.
#include <gtest/gtest.h>

#include "control/codec.h"
#include "control/engine/rng.h"
#include "control/engine/wire_size.h"
#include "gossip.pb.h"

namespace gw::cp::engine {
namespace {

Address v4(std::uint8_t last, std::uint16_t port = 7946) { return Address{{10, 0, 0, last}, port}; }
IpBytes ip16(std::uint8_t b) {
  IpBytes ip;
  ip.resize(16);
  for (auto& x : ip) x = b;
  return ip;
}

Compound every_type() {
  MemberState ms{"m1", v4(1), 7, MemberStatus::kSuspect, {{"role", "db"}}};
  MemberState left{"m2", Address{ip16(0xfe), 1}, 9, MemberStatus::kLeft, {}};
  return Compound{
      Ping{1, "b", "a", v4(2)},
      Ack{2, "b"},
      IndirectPing{3, "c", v4(3), true, "a", v4(2)},
      Nack{4, "h"},
      Alive{5, "a", v4(2), {{"role", "control-plane"}, {"zone", "z1"}}, 1},
      Suspect{6, "c", "a"},
      Dead{7, "c", "a"},
      Leave{8, "d"},
      SyncRequest{9, "a", true, 0, 2, {ms, left}, 0x0123456789abcdefULL, {1, 0, 0xffffffffu}},
      SyncResponse{10, "b", 1, 2, {ms}, 0xfedcba9876543210ULL, {7}},
      UserData{"a", std::string("\x00\x01\xff", 3)},
  };
}

TEST(Codec, RoundTripsEveryMessageType) {
  const Compound in = every_type();
  ASSERT_EQ(in.size(), kMessageTypes);
  const std::vector<std::uint8_t> bytes = encode(in);
  EXPECT_EQ(bytes.size(), encoded_size(in));
  const DecodeResult out = decode(bytes);
  ASSERT_TRUE(out.ok()) << decode_error_name(out.error);
  EXPECT_EQ(out.messages, in);
}

TEST(Codec, EncodingIsDeterministic) {
  const Compound in = every_type();
  EXPECT_EQ(encode(in), encode(in));
  std::vector<std::uint8_t> appended = {0xaa};
  EXPECT_EQ(encode_append(in, appended), encoded_size(in));
  EXPECT_EQ(std::vector<std::uint8_t>(appended.begin() + 1, appended.end()), encode(in));
}

TEST(Codec, EmptyCompoundIsEmpty) {
  EXPECT_TRUE(encode({}).empty());
  const DecodeResult r = decode({});
  EXPECT_TRUE(r.ok());
  EXPECT_TRUE(r.messages.empty());
}

TEST(Codec, GarbageIsAnErrorNotACrash) {
  const std::vector<std::uint8_t> garbage = {0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x01};
  EXPECT_EQ(decode(garbage).error, DecodeError::kMalformed);
  // Truncations of a valid encoding never crash and never half-succeed silently
  // with more messages than were encoded.
  const std::vector<std::uint8_t> bytes = encode(every_type());
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    const DecodeResult r = decode(std::span(bytes.data(), n));
    EXPECT_LE(r.messages.size(), kMessageTypes);
    if (!r.ok()) {
      EXPECT_TRUE(r.messages.empty());
    }
  }
  // Random bytes.
  Rng rng(7);
  for (int i = 0; i < 2000; ++i) {
    std::vector<std::uint8_t> b(static_cast<std::size_t>(rng.uniform(64)));
    for (auto& x : b) x = static_cast<std::uint8_t>(rng.next());
    const DecodeResult r = decode(b);
    if (!r.ok()) {
      EXPECT_TRUE(r.messages.empty());
    }
  }
}

TEST(Codec, BitFlipsOfValidEncodingsNeverCrash) {
  const std::vector<std::uint8_t> good = encode(every_type());
  Rng rng(11);
  int rejected = 0;
  for (int i = 0; i < 5000; ++i) {
    std::vector<std::uint8_t> b = good;
    for (std::uint64_t flips = rng.uniform(4) + 1; flips > 0; --flips)
      b[static_cast<std::size_t>(rng.uniform(b.size()))] ^= static_cast<std::uint8_t>(1u << rng.uniform(8));
    const DecodeResult r = decode(b);
    if (!r.ok()) {
      ++rejected;
      EXPECT_TRUE(r.messages.empty());
    } else {
      // Whatever decoded re-encodes without trouble.
      EXPECT_EQ(decode(encode(r.messages)).ok(), true);
    }
  }
  EXPECT_GT(rejected, 0);
}

TEST(Codec, RejectsBadAddressStatusAndEmptyMessage) {
  {
    // Invalid UTF-8 in a string field: malformed (and silently so).
    std::vector<std::uint8_t> b = encode(Compound{Ack{1, "ab"}});
    ASSERT_EQ(b[b.size() - 2], 'a');
    b[b.size() - 2] = 0xff;
    EXPECT_EQ(decode(b).error, DecodeError::kMalformed);
  }
  {
    gw::proto::Compound pc;
    auto* ping = pc.add_messages()->mutable_ping();
    ping->mutable_source_addr()->set_ip("abc");  // 3 bytes: neither IPv4 nor IPv6
    std::string s;
    pc.SerializeToString(&s);
    EXPECT_EQ(decode(std::span(reinterpret_cast<const std::uint8_t*>(s.data()), s.size())).error,
              DecodeError::kBadAddress);
  }
  {
    gw::proto::Compound pc;
    auto* ping = pc.add_messages()->mutable_ping();
    ping->mutable_source_addr()->set_ip("abcd");
    ping->mutable_source_addr()->set_port(70000);
    std::string s;
    pc.SerializeToString(&s);
    EXPECT_EQ(decode(std::span(reinterpret_cast<const std::uint8_t*>(s.data()), s.size())).error,
              DecodeError::kBadAddress);
  }
  {
    gw::proto::Compound pc;
    auto* m = pc.add_messages()->mutable_sync_response()->add_members();
    m->set_status(static_cast<gw::proto::MemberStatus>(9));
    std::string s;
    pc.SerializeToString(&s);
    EXPECT_EQ(decode(std::span(reinterpret_cast<const std::uint8_t*>(s.data()), s.size())).error,
              DecodeError::kBadStatus);
  }
  {
    gw::proto::Compound pc;
    pc.add_messages();
    std::string s;
    pc.SerializeToString(&s);
    EXPECT_EQ(decode(std::span(reinterpret_cast<const std::uint8_t*>(s.data()), s.size())).error,
              DecodeError::kEmptyMessage);
  }
}

std::string random_string(Rng& rng, std::size_t max_len) {
  std::string s(static_cast<std::size_t>(rng.uniform(max_len + 1)), 'x');
  for (char& c : s) c = static_cast<char>('a' + rng.uniform(26));
  return s;
}

Address random_addr(Rng& rng) {
  Address a;
  const std::uint64_t kind = rng.uniform(3);
  a.ip.resize(kind == 0 ? 0 : (kind == 1 ? 4 : 16));
  for (auto& b : a.ip) b = static_cast<std::uint8_t>(rng.next());
  a.port = static_cast<std::uint16_t>(rng.uniform(65536));
  return a;
}

std::uint64_t random_u64(Rng& rng) {
  // Mix small and huge values so every varint length occurs.
  return rng.next() >> rng.uniform(64);
}

MemberState random_state(Rng& rng) {
  MemberState s{
      random_string(rng, 40), random_addr(rng), random_u64(rng), static_cast<MemberStatus>(rng.uniform(4)), {}};
  for (std::uint64_t i = rng.uniform(4); i > 0; --i)
    s.tags.push_back({random_string(rng, 20), random_string(rng, 200)});
  // Non-empty ip: the codec writes the address of a MemberState always.
  return s;
}

Message random_message(Rng& rng) {
  const auto u32 = [&] { return static_cast<std::uint32_t>(random_u64(rng)); };
  switch (rng.uniform(kMessageTypes)) {
    case 0:
      return Ping{u32(), random_string(rng, 40), random_string(rng, 40), random_addr(rng)};
    case 1:
      return Ack{u32(), random_string(rng, 300)};
    case 2:
      return IndirectPing{
          u32(),           random_string(rng, 40), random_addr(rng), rng.uniform(2) == 1, random_string(rng, 40),
          random_addr(rng)};
    case 3:
      return Nack{u32(), random_string(rng, 40)};
    case 4: {
      Alive a{random_u64(rng), random_string(rng, 40), random_addr(rng), {}, u32()};
      for (std::uint64_t i = rng.uniform(5); i > 0; --i)
        a.tags.push_back({random_string(rng, 20), random_string(rng, 200)});
      return a;
    }
    case 5:
      return Suspect{random_u64(rng), random_string(rng, 40), random_string(rng, 40)};
    case 6:
      return Dead{random_u64(rng), random_string(rng, 40), random_string(rng, 40)};
    case 7:
      return Leave{random_u64(rng), random_string(rng, 40)};
    case 8: {
      SyncRequest s{u32(), random_string(rng, 40), rng.uniform(2) == 1, u32(), u32(), {}, rng.next(), {}};
      for (std::uint64_t i = rng.uniform(30); i > 0; --i) s.members.push_back(random_state(rng));
      for (std::uint64_t i = rng.uniform(3) == 0 ? rng.uniform(300) : 0; i > 0; --i) s.buckets.push_back(u32());
      return s;
    }
    case 9: {
      SyncResponse s{u32(), random_string(rng, 40), u32(), u32(), {}, rng.next(), {}};
      for (std::uint64_t i = rng.uniform(30); i > 0; --i) s.members.push_back(random_state(rng));
      for (std::uint64_t i = rng.uniform(3) == 0 ? rng.uniform(300) : 0; i > 0; --i) s.buckets.push_back(u32());
      return s;
    }
    default:
      return UserData{random_string(rng, 40), random_string(rng, 3000)};
  }
}

TEST(Codec, EngineSizeEstimateIsAnUpperBound) {
  Rng rng(99);
  for (int i = 0; i < 3000; ++i) {
    Compound c;
    for (std::uint64_t n = rng.uniform(6) + 1; n > 0; --n) c.push_back(random_message(rng));
    const std::size_t real = encoded_size(c);
    const std::size_t est = estimated_size(c);
    ASSERT_GE(est, real) << "iteration " << i;
    // ...and not wildly pessimistic (it is used to fill datagrams).
    EXPECT_LE(est, real + 64 * c.size() + 200) << "iteration " << i;
    // Round trip too, while we have random messages.
    const DecodeResult r = decode(encode(c));
    ASSERT_TRUE(r.ok());
    // Ping/IndirectPing/Alive with an empty ip drop the address (port included).
    ASSERT_EQ(r.messages.size(), c.size());
  }
}

TEST(Codec, SizeIsExactWithoutEncoding) {
  // Every field at its default (not written), then at its largest varints
  // and longest strings, then random compounds.
  Compound defaults = {Ping{}, Ack{},   IndirectPing{}, Nack{},         Alive{},   Suspect{},
                       Dead{}, Leave{}, SyncRequest{},  SyncResponse{}, UserData{}};
  EXPECT_EQ(encoded_size(defaults), encode(defaults).size());
  SyncResponse r{UINT32_MAX, std::string(300, 's'), UINT32_MAX, UINT32_MAX, {}, UINT64_MAX, {1, 2, 3}};
  r.members.push_back(MemberState{"", Address{}, 0, MemberStatus::kAlive, {}});
  r.members.push_back(MemberState{
      std::string(200, 'n'),
      Address{IpBytes{255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255}, 65535},
      UINT64_MAX,
      MemberStatus::kLeft,
      {Tag{"", ""}, Tag{std::string(130, 'k'), "v"}}});
  const Compound extremes = {r, Alive{UINT64_MAX, "a", Address{IpBytes{1, 1, 1, 1}, 0}, {}, UINT32_MAX},
                             UserData{"", std::string(20000, 'd')}};
  EXPECT_EQ(encoded_size(extremes), encode(extremes).size());
  Rng rng(2024);
  for (int i = 0; i < 3000; ++i) {
    Compound c;
    for (std::uint64_t n = rng.uniform(8) + 1; n > 0; --n) c.push_back(random_message(rng));
    ASSERT_EQ(encoded_size(c), encode(c).size()) << "iteration " << i;
    std::size_t sum = 0;
    for (const Message& m : c) sum += encoded_size(m);
    ASSERT_EQ(sum, encoded_size(c)) << "iteration " << i;
  }
}

TEST(Codec, SyncOverheadEstimateIsAnUpperBound) {
  Rng rng(5);
  for (int i = 0; i < 500; ++i) {
    SyncResponse s{static_cast<std::uint32_t>(rng.next()),
                   random_string(rng, 60),
                   static_cast<std::uint32_t>(rng.next()),
                   static_cast<std::uint32_t>(rng.next()),
                   {},
                   0,
                   {}};
    std::size_t est = estimated_sync_overhead(s.source.size());
    for (std::uint64_t n = rng.uniform(20); n > 0; --n) {
      s.members.push_back(random_state(rng));
      est += estimated_size(s.members.back());
    }
    ASSERT_GE(est, encoded_size(Compound{s}));
    SyncRequest r{s.seq_no, s.source, true, s.part, s.parts, s.members, 0, {}};
    ASSERT_GE(est, encoded_size(Compound{r}));
  }
}

// Issue 17, item 8: a header class must be justified by the content. What
// the engine itself sends always fits (a datagram travels in the most
// urgent class it carries; refutation Alives may be urgent); bulk or gossip
// content under an urgent header does not.
TEST(ClassFits, HeaderClassMustBeJustifiedByTheContent) {
  using P = PriorityClass;
  const Compound sync{SyncRequest{9, "a", true, 0, 2, {}, 0, {}}};
  const Compound user{UserData{"a", "x"}};
  const Compound suspect{Suspect{6, "c", "a"}};
  EXPECT_FALSE(class_fits(P::kUrgent, sync));
  EXPECT_FALSE(class_fits(P::kProbe, sync));
  EXPECT_FALSE(class_fits(P::kGossip, sync));
  EXPECT_TRUE(class_fits(P::kBulk, sync));
  EXPECT_FALSE(class_fits(P::kUrgent, user));
  EXPECT_FALSE(class_fits(P::kProbe, suspect));
  EXPECT_TRUE(class_fits(P::kGossip, suspect));
  // A ping with a piggybacked refutation may travel urgent; a ping alone not.
  EXPECT_TRUE(class_fits(P::kUrgent, Compound{Ping{1, "b", "a", v4(2)}, Alive{5, "a", v4(2), {}, 1}}));
  EXPECT_FALSE(class_fits(P::kUrgent, Compound{Ping{1, "b", "a", v4(2)}}));
  EXPECT_TRUE(class_fits(P::kUrgent, Compound{Dead{7, "c", "a"}, SyncRequest{9, "a", true, 0, 2, {}, 0, {}}}));
  // Less urgent than the content: the sender's loss, allowed.
  EXPECT_TRUE(class_fits(P::kBulk, Compound{Leave{8, "d"}}));
  // No membership message (a key command): any class.
  EXPECT_TRUE(class_fits(P::kUrgent, Compound{}));
  // Every message type alone, in its default class, fits.
  for (const Message& m : every_type()) EXPECT_TRUE(class_fits(default_priority(m), Compound{m})) << m.index();
}

}  // namespace
}  // namespace gw::cp::engine
