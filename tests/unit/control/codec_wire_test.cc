// control/codec.h: the bytes on the wire. Every message gossipgw sends
// (membership compounds, key commands and results) encodes to exactly the
// bytes recorded here, captured from the encoders before issue 20 merged them
// into one codec; a change to these bytes is a wire format change.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "control/codec.h"
#include "control/host/key_ops.h"
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

TEST(CodecWire, KeyCommandBytesAreUnchanged) {
  EXPECT_EQ(hex(encode_key_command(command(KeyChange::Op::kInstall))),
            "123908f8acd1918180c0bb1810011a20" + repeat("ab", 32) + "25be53f6ee2a0467772d31");
  EXPECT_EQ(hex(encode_key_command(command(KeyChange::Op::kUse))), "121708f8acd1918180c0bb18100225efbeadde2a0467772d31");
  EXPECT_EQ(hex(encode_key_command(command(KeyChange::Op::kRemove))),
            "121708f8acd1918180c0bb18100325efbeadde2a0467772d31");
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

}  // namespace
}  // namespace gw::cp
