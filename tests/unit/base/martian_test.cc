// base::martian_ip: the addresses the ladder refuses as sources
// (dataplane/ladder_inl.h), as the engine checks them inside messages.
#include "base/martian.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>

namespace gw::base {
namespace {

TEST(Martian, Ipv4ClassesNoMemberCanHave) {
  for (const std::array<std::uint8_t, 4> a : std::initializer_list<std::array<std::uint8_t, 4>>{
           {0, 0, 0, 0}, {0, 1, 2, 3}, {127, 0, 0, 1}, {127, 255, 255, 254}, {224, 0, 0, 1}, {239, 1, 2, 3},
           {240, 0, 0, 1}, {255, 255, 255, 255}})
    EXPECT_TRUE(martian_ip(a.data(), 4)) << int(a[0]) << "." << int(a[3]);
  for (const std::array<std::uint8_t, 4> a : std::initializer_list<std::array<std::uint8_t, 4>>{
           {10, 0, 0, 1}, {1, 0, 0, 0}, {126, 255, 255, 255}, {128, 0, 0, 1}, {192, 168, 1, 255}, {223, 255, 255, 255}})
    EXPECT_FALSE(martian_ip(a.data(), 4)) << int(a[0]) << "." << int(a[3]);
}

TEST(Martian, Ipv6ClassesNoMemberCanHave) {
  std::array<std::uint8_t, 16> a{};
  EXPECT_TRUE(martian_ip(a.data(), 16));  // ::
  a[15] = 1;
  EXPECT_TRUE(martian_ip(a.data(), 16));  // ::1
  a[15] = 2;
  EXPECT_FALSE(martian_ip(a.data(), 16));  // ::2 (deprecated IPv4-compatible, not refused by the ladder either)
  a = {};
  a[10] = 0xff;
  a[11] = 0xff;
  a[12] = 10;
  a[15] = 1;
  EXPECT_TRUE(martian_ip(a.data(), 16));  // ::ffff:10.0.0.1
  a = {};
  a[0] = 0xff;
  a[1] = 0x02;
  a[15] = 1;
  EXPECT_TRUE(martian_ip(a.data(), 16));  // ff02::1
  a = {};
  a[0] = 0xfd;
  a[15] = 2;
  EXPECT_FALSE(martian_ip(a.data(), 16));  // fd00::2
  a = {};
  a[0] = 0xfe;
  a[1] = 0x80;
  a[15] = 1;
  EXPECT_FALSE(martian_ip(a.data(), 16));  // fe80::1
}

TEST(Martian, AnyOtherLengthIsMartian) {
  const std::array<std::uint8_t, 16> a{10, 0, 0, 1};
  EXPECT_TRUE(martian_ip(a.data(), 0));
  EXPECT_TRUE(martian_ip(a.data(), 5));
}

}  // namespace
}  // namespace gw::base
