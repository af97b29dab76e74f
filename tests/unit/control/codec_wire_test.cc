// control/codec.h: the bytes on the wire. Every message gossipgw sends
// (membership compounds, key commands and results) encodes to exactly the
// bytes recorded here, captured from the encoders before issue 20 merged them
// into one codec; a change to these bytes is a wire format change. And key
// commands come back from one decode as they went in.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "control/codec.h"
#include "crypto/keys.h"

namespace gw::cp {
namespace {

using namespace engine;  // NOLINT: the engine types are this test's vocabulary

std::string hex(const std::vector<std::uint8_t>& b) {
  std::string s;
  char x[3];
  for (std::uint8_t c : b) {
    std::snprintf(x, sizeof x, "%02x", c);
    s += x;
  }
  return s;
}

Address v4(std::uint8_t last) { return Address{{10, 0, 0, last}, 7946}; }

Compound membership() {
  MemberState ms{"m1", v4(1), 7, MemberStatus::kSuspect, {{"role", "db"}}};
  return Compound{
      Ping{1, "b", "a", v4(2)},
      Ack{2, "b"},
      IndirectPing{3, "c", v4(3), true, "a", v4(2)},
      Nack{4, "h"},
      Alive{5, "a", v4(2), {{"role", "control-plane"}}, 1},
      Suspect{6, "c", "a"},
      Dead{7, "c", "a"},
      Leave{8, "d"},
      SyncRequest{9, "a", true, 0, 2, {ms}, 0x0123456789abcdefULL, {1, 0, 0xffffffffu}, 40},
      SyncResponse{10, "b", 1, 2, {ms}, 0xfedcba9876543210ULL, {7}},
      UserData{"a", std::string("\x00\x01\xff", 3)},
  };
}

crypto::KeyBytes key_bytes(std::uint8_t fill) {
  crypto::KeyBytes k{};
  k.fill(fill);
  return k;
}

KeyCommandMsg command(KeyChange::Op op) {
  KeyCommandMsg c;
  c.request_id = 0x1877'0000'1234'5678ULL;
  c.change.op = op;
  if (op == KeyChange::Op::kInstall) {
    c.change.key = key_bytes(0xab);
    c.change.id = crypto::derive_key_id(c.change.key);
  } else if (op != KeyChange::Op::kList) {
    c.change.id = 0xdeadbeef;
  }
  c.origin = "gw-1";
  if (op != KeyChange::Op::kList) {  // the operator's authorisation (issue 51)
    c.issued_unix_ns = 0x1877'0000'1234'5679ULL;
    c.signature.fill(0x5e);
  }
  return c;
}

std::string repeat(const char* hex_byte, std::size_t n) {
  std::string s;
  for (std::size_t i = 0; i < n; ++i) s += hex_byte;
  return s;
}

TEST(CodecWire, MembershipCompoundBytesAreUnchanged) {
  EXPECT_EQ(hex(encode(membership())),
            "0a150a1308011201621a016122090a040a000002108a3e0a07120508021201620a221a2008031201631a090a040a0000"
            "03108a3e20012a016132090a040a000002108a3e0a07220508041201680a2b2a2908051201611a090a040a000002108a"
            "3e22150a04726f6c65120d636f6e74726f6c2d706c616e6528010a0a320808061201631a01610a0a3a0808071201631a"
            "01610a07420508081201640a454a43080912016118012802321f0a026d3112090a040a000001108a3e180720012a0a0a"
            "04726f6c651202646239efcdab8967452301420c0100000000000000ffffffff48280a3b5239080a120162180120022a"
            "1f0a026d3112090a040a000001108a3e180720012a0a0a04726f6c6512026462311032547698badcfe3a04070000000a"
            "0a5a080a016112030001ff");
}

// Issue 51 changed install, use and remove: they end with the operator's
// issue time (field 6, fixed64) and signature (field 7, 64 bytes). A list
// is as it was.
TEST(CodecWire, KeyCommandBytesAreUnchanged) {
  const std::string signed_by =
      "317956341200007718"
      "3a40" +
      repeat("5e", 64);
  EXPECT_EQ(hex(encode_key_command(command(KeyChange::Op::kInstall))),
            "12840108f8acd1918180c0bb1810011a20" + repeat("ab", 32) + "25be53f6ee2a0467772d31" + signed_by);
  EXPECT_EQ(hex(encode_key_command(command(KeyChange::Op::kUse))),
            "126208f8acd1918180c0bb18100225efbeadde2a0467772d31" + signed_by);
  EXPECT_EQ(hex(encode_key_command(command(KeyChange::Op::kRemove))),
            "126208f8acd1918180c0bb18100325efbeadde2a0467772d31" + signed_by);
  EXPECT_EQ(hex(encode_key_command(command(KeyChange::Op::kList))), "121208f8acd1918180c0bb1810042a0467772d31");
}

TEST(CodecWire, KeyResultBytesAreUnchanged) {
  EXPECT_EQ(hex(encode_key_result(KeyResultMsg{0x1877'0000'1234'5678ULL, "gw-2", true, {}, {}, 0})),
            "1a1208f8acd1918180c0bb18120467772d321801");
  EXPECT_EQ(hex(encode_key_result(
                KeyResultMsg{0x1877'0000'1234'5678ULL, "gw-2", true, {}, {0x01020304, 0xdeadbeef}, 0xdeadbeef})),
            "1a2108f8acd1918180c0bb18120467772d3218012a0804030201efbeadde35efbeadde");
  EXPECT_EQ(hex(encode_key_result(KeyResultMsg{7, "gw-3", false, "key 01020304 is the primary", {}, 0})),
            "1a250807120467772d33221b6b657920303130323033303420697320746865207072696d617279");
  // An error longer than the wire allows is cut to 256 bytes, not refused.
  EXPECT_EQ(hex(encode_key_result(KeyResultMsg{7, "gw-3", false, std::string(300, 'x'), {}, 0})),
            "1a8b020807120467772d33228002" + repeat("78", 256));
}

std::vector<KeyResultMsg> results() {
  return {KeyResultMsg{0x1877'0000'1234'5678ULL, "gw-2", true, {}, {}, 0},
          KeyResultMsg{0x1877'0000'1234'5678ULL, "gw-2", true, {}, {0x01020304, 0xdeadbeef}, 0xdeadbeef},
          KeyResultMsg{7, "gw-3", false, "key 01020304 is the primary", {}, 0}};
}

TEST(CodecKeyControl, DecodeOfEncodeGivesTheSameCommand) {
  for (const auto op : {KeyChange::Op::kInstall, KeyChange::Op::kUse, KeyChange::Op::kRemove, KeyChange::Op::kList}) {
    const KeyCommandMsg c = command(op);
    const DecodeResult r = decode(encode_key_command(c));
    ASSERT_TRUE(r.ok()) << static_cast<int>(op);
    EXPECT_TRUE(r.messages.empty());
    ASSERT_TRUE(r.key_control.has_value());
    EXPECT_FALSE(r.key_control->result.has_value());
    ASSERT_TRUE(r.key_control->command.has_value());
    EXPECT_EQ(*r.key_control->command, c);
  }
}

TEST(CodecKeyControl, DecodeOfEncodeGivesTheSameResult) {
  for (const KeyResultMsg& k : results()) {
    const DecodeResult r = decode(encode_key_result(k));
    ASSERT_TRUE(r.ok());
    ASSERT_TRUE(r.key_control.has_value());
    EXPECT_FALSE(r.key_control->command.has_value());
    ASSERT_TRUE(r.key_control->result.has_value());
    EXPECT_EQ(*r.key_control->result, k);
  }
}

TEST(CodecKeyControl, MembershipPayloadsCarryNoKeyControl) {
  const DecodeResult r = decode(encode(membership()));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.messages, membership());
  EXPECT_FALSE(r.key_control.has_value());
  // A compound with membership messages and a key command: the messages
  // count, the command does not (a key command travels alone).
  std::vector<std::uint8_t> both = encode(Compound{Ack{2, "b"}});
  const std::vector<std::uint8_t> cmd = encode_key_command(command(KeyChange::Op::kUse));
  both.insert(both.end(), cmd.begin(), cmd.end());  // concatenated protobuf messages merge
  const DecodeResult m = decode(both);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m.messages.size(), 1u);
  EXPECT_FALSE(m.key_control.has_value());
}

TEST(CodecKeyControl, AnInvalidKeyCommandIsNotUnderstoodButNotMalformed) {
  KeyCommandMsg no_origin = command(KeyChange::Op::kUse);
  no_origin.origin.clear();
  KeyResultMsg too_many = results()[1];
  too_many.key_ids.assign(crypto::Keyring::kMaxKeys + 1, 1);
  for (const auto& bytes : {encode_key_command(no_origin), encode_key_result(too_many), std::vector<std::uint8_t>{}}) {
    const DecodeResult r = decode(bytes);
    EXPECT_TRUE(r.ok());
    EXPECT_TRUE(r.messages.empty());
    EXPECT_FALSE(r.key_control.has_value());
  }
  // A command and a result in one payload: neither.
  std::vector<std::uint8_t> two = encode_key_command(command(KeyChange::Op::kList));
  const std::vector<std::uint8_t> res = encode_key_result(results()[0]);
  two.insert(two.end(), res.begin(), res.end());
  EXPECT_FALSE(decode(two).key_control.has_value());
}

TEST(CodecCountBodies, CountsEachTypeAndRefusesWhatIsNotACompound) {
  const auto counts = count_bodies(encode(membership()));
  ASSERT_TRUE(counts.has_value());
  for (std::size_t i = 0; i < counts->by_type.size(); ++i) EXPECT_EQ(counts->by_type[i], 1u) << i;
  EXPECT_EQ(counts->unknown, 0u);
  // An empty Message (field 1, length 0) is a body this build does not know.
  const auto empty = count_bodies(std::vector<std::uint8_t>{0x0a, 0x00});
  ASSERT_TRUE(empty.has_value());
  EXPECT_EQ(empty->unknown, 1u);
  EXPECT_FALSE(count_bodies(std::vector<std::uint8_t>{0x0a, 0x05, 0x01}).has_value());  // length past the end
}

}  // namespace
}  // namespace gw::cp
