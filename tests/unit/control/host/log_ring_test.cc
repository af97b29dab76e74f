// control/host/log_ring.h: the numbered ring of recent log lines behind
// `gossipctl monitor`.
#include <gtest/gtest.h>

#include <spdlog/spdlog.h>

#include <memory>

#include "control/host/log_ring.h"

namespace gw::cp {
namespace {

TEST(LogRing, SinceLevelAndCapacity) {
  auto ring = std::make_shared<LogRing>();
  spdlog::logger log("t", ring);
  log.set_level(spdlog::level::trace);
  log.info("one");
  log.warn("two");
  log.debug("three");
  std::uint64_t next = 0;
  auto all = ring->since(0, spdlog::level::trace, 100, &next);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_NE(all[0].text.find("one"), std::string::npos);
  EXPECT_EQ(all[2].seq, 3u);
  EXPECT_EQ(next, 3u);
  // At warn and above only; the cursor still moves past what was filtered.
  auto warn = ring->since(0, spdlog::level::warn, 100, &next);
  ASSERT_EQ(warn.size(), 1u);
  EXPECT_NE(warn[0].text.find("two"), std::string::npos);
  EXPECT_EQ(next, 3u);
  EXPECT_TRUE(ring->since(next, spdlog::level::trace, 100, &next).empty());
  EXPECT_EQ(next, 3u);
  // A page at a time: the cursor stops at the last line returned.
  auto page = ring->since(0, spdlog::level::trace, 2, &next);
  EXPECT_EQ(page.size(), 2u);
  EXPECT_EQ(next, 2u);
  // Bounded: only the newest kCapacity lines are kept, each at most kMaxLineBytes.
  for (std::size_t i = 0; i < LogRing::kCapacity + 10; ++i) log.info("{}", std::string(2000, 'x'));
  auto kept = ring->since(0, spdlog::level::trace, 2 * LogRing::kCapacity, &next);
  EXPECT_EQ(kept.size(), LogRing::kCapacity);
  EXPECT_EQ(kept.front().seq, 3u + 10u + 1u);
  EXPECT_LE(kept.back().text.size(), LogRing::kMaxLineBytes);
}

}  // namespace
}  // namespace gw::cp
