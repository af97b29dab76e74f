// Table memory: big areas start on a huge-page boundary, everything comes
// zeroed, and arrays construct their slots and move without copying.
#include "dataplane/huge_area.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <new>
#include <utility>

namespace gw::dp {
namespace {

bool all_zero(const void* p, std::size_t n) {
  const auto* b = static_cast<const std::uint8_t*>(p);
  for (std::size_t i = 0; i < n; ++i) {
    if (b[i] != 0) return false;
  }
  return true;
}

TEST(HugeArea, BigAreasStartOnAHugePageAndComeZeroed) {
  const std::size_t n = 3 * HugeArea::kHugePage + 12345;
  HugeArea a(n);
  EXPECT_EQ(a.size(), n);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(a.data()) % HugeArea::kHugePage, 0u);
  EXPECT_TRUE(all_zero(a.data(), n));
  static_cast<std::uint8_t*>(a.data())[n - 1] = 7;  // the whole size is writable

  HugeArea small(100);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(small.data()) % HugeArea::kSmallAlign, 0u);
  EXPECT_TRUE(all_zero(small.data(), 100));
  EXPECT_THROW(HugeArea(0), std::bad_alloc);
}

TEST(HugeArea, MovesHandOverTheMemory) {
  HugeArea a(4096);
  void* p = a.data();
  HugeArea b(std::move(a));
  EXPECT_EQ(b.data(), p);
  EXPECT_EQ(a.data(), nullptr);  // NOLINT(bugprone-use-after-move): the moved-from state is the point
  HugeArea c(8192);
  c = std::move(b);
  EXPECT_EQ(c.data(), p);
  EXPECT_EQ(c.size(), 4096u);
}

struct Slot {
  std::uint64_t a = 0;
  std::uint32_t b = 5;  // value-initialised slots get their defaults
};

TEST(HugeArray, ConstructsEverySlotAndMoves) {
  HugeArray<Slot> t(100000);
  ASSERT_EQ(t.size(), 100000u);
  bool ok = true;
  for (std::size_t i = 0; i < t.size(); ++i) ok = ok && t[i].a == 0 && t[i].b == 5;
  EXPECT_TRUE(ok);
  t[99999].a = 42;
  HugeArray<Slot> u;
  u = std::move(t);
  EXPECT_EQ(u.size(), 100000u);
  EXPECT_EQ(u[99999].a, 42u);
  EXPECT_EQ(t.size(), 0u);  // NOLINT(bugprone-use-after-move)
}

}  // namespace
}  // namespace gw::dp
