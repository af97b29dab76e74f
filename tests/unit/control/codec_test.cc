// control/codec.h: round trips, determinism, hostile bytes. (Sizes:
// wire_shape_test.cc.)
#include <gtest/gtest.h>

#include "control/codec.h"
#include "control/engine/rng.h"
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
      Ping{1, "b", "a", v4(2), 77, true},  // asks for the build
      Ack{2, "b", "0.1.0+aa83e72b1c2d"},   // says it
      IndirectPing{3, "c", v4(3), true, "a", v4(2)},
      Nack{4, "h"},
      Alive{5, "a", v4(2), {{"role", "control-plane"}, {"zone", "z1"}}, 1},
      Suspect{6, "c", "a"},
      Dead{7, "c", "a", true},  // a probation's verdict
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
