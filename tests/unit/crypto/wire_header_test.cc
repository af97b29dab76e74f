#include "crypto/wire_header.h"

#include <gtest/gtest.h>

#include <vector>

namespace gw::crypto {
namespace {

WireHeader sample_header(std::uint16_t payload_len) {
  WireHeader h;
  h.cls = PriorityClass::kUrgent;
  h.suite = Suite::kChaCha20Poly1305;
  h.cluster_id = 0x0102030405060708ULL;
  h.key_id = 0xA1B2C3D4;
  h.timestamp = 1'700'000'000;
  for (std::size_t i = 0; i < h.nonce.size(); ++i) h.nonce[i] = static_cast<std::uint8_t>(i + 1);
  h.payload_len = payload_len;
  h.mac = 0x1122334455667788ULL;
  return h;
}

std::vector<std::uint8_t> datagram(const WireHeader& h, std::size_t payload) {
  std::vector<std::uint8_t> d(kHeaderBytes + payload, 0xAB);
  write_header(h, d.data());
  return d;
}

TEST(WireHeader, RoundTripsEveryField) {
  const WireHeader h = sample_header(40);
  const auto d = datagram(h, 40);
  WireHeader got;
  ASSERT_EQ(parse_header(d.data(), d.size(), &got), HeaderStatus::kOk);
  EXPECT_EQ(got.version, kWireVersion);
  EXPECT_EQ(got.cls, PriorityClass::kUrgent);
  EXPECT_EQ(got.suite, Suite::kChaCha20Poly1305);
  EXPECT_EQ(got.cluster_id, h.cluster_id);
  EXPECT_EQ(got.key_id, h.key_id);
  EXPECT_EQ(got.timestamp, h.timestamp);
  EXPECT_EQ(got.nonce, h.nonce);
  EXPECT_EQ(got.payload_len, 40);
  EXPECT_EQ(got.mac, h.mac);
}

TEST(WireHeader, FieldsAreBigEndianAtDocumentedOffsets) {
  const auto d = datagram(sample_header(16), 16);
  EXPECT_EQ(d[0], 'G');
  EXPECT_EQ(d[3], 'W');
  EXPECT_EQ(d[5], 0);  // urgent
  EXPECT_EQ(d[6], 2);  // chacha
  EXPECT_EQ(d[8], 0x01);
  EXPECT_EQ(d[15], 0x08);
  EXPECT_EQ(d[16], 0xA1);
  EXPECT_EQ(d[19], 0xD4);
  EXPECT_EQ(d[24], 1);
  EXPECT_EQ(d[36], 0);
  EXPECT_EQ(d[37], 16);
  EXPECT_EQ(d[40], 0x11);
  EXPECT_EQ(d[47], 0x88);
}

TEST(WireHeader, EveryTruncationIsRefused) {
  const auto d = datagram(sample_header(32), 32);
  for (std::size_t len = 0; len < d.size(); ++len) {
    WireHeader got;
    const HeaderStatus s = parse_header(d.data(), len, &got);
    if (len < kHeaderBytes) {
      EXPECT_EQ(s, HeaderStatus::kTooShort) << "len " << len;
    } else {
      EXPECT_EQ(s, HeaderStatus::kBadLength) << "len " << len;
    }
  }
}

TEST(WireHeader, LyingPayloadLengthIsBadLength) {
  for (std::uint16_t claimed : {0, 15, 31, 33, 0xFFFF}) {
    const auto d = datagram(sample_header(claimed), 32);
    WireHeader got;
    EXPECT_EQ(parse_header(d.data(), d.size(), &got), HeaderStatus::kBadLength) << claimed;
  }
}

TEST(WireHeader, PayloadShorterThanTagIsBadLength) {
  const auto d = datagram(sample_header(8), 8);
  WireHeader got;
  EXPECT_EQ(parse_header(d.data(), d.size(), &got), HeaderStatus::kBadLength);
}

TEST(WireHeader, WrongMagicAndVersionAreTold) {
  auto d = datagram(sample_header(16), 16);
  WireHeader got;
  d[1] ^= 0x20;
  EXPECT_EQ(parse_header(d.data(), d.size(), &got), HeaderStatus::kBadMagic);
  d[1] ^= 0x20;
  d[4] = 1;  // the wire before receiver binding (issue 17)
  EXPECT_EQ(parse_header(d.data(), d.size(), &got), HeaderStatus::kBadVersion);
  d[4] = 3;
  EXPECT_EQ(parse_header(d.data(), d.size(), &got), HeaderStatus::kBadVersion);
}

TEST(WireHeader, UnknownClassSuiteOrReservedBitsAreBadField) {
  const auto good = datagram(sample_header(16), 16);
  for (auto [offset, value] :
       std::vector<std::pair<std::size_t, std::uint8_t>>{{5, 4}, {5, 0xFF}, {6, 0}, {6, 3}, {7, 1}, {7, 0x80}}) {
    auto d = good;
    d[offset] = value;
    WireHeader got;
    EXPECT_EQ(parse_header(d.data(), d.size(), &got), HeaderStatus::kBadField)
        << "offset " << offset << " value " << int{value};
  }
}

}  // namespace
}  // namespace gw::crypto
