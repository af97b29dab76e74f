// control/engine/probe_scheduler.h: the relays we run for others, bounded and
// kept in deadline order (the engine reads the earliest on every pass).
#include "control/engine/probe_scheduler.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace gw::cp::engine {
namespace {

Relay relay(std::uint64_t deadline_ns, std::uint32_t origin_seq) {
  Relay r;
  r.origin_seq = origin_seq;
  r.deadline_ns = deadline_ns;
  r.target = "t";
  return r;
}

TEST(ProbeScheduler, RelaysAreBoundedAndTheirEarliestDeadlineFollowsEveryChange) {
  ProbeScheduler p(3, 100);
  EXPECT_EQ(p.earliest_relay_deadline(), UINT64_MAX);
  ASSERT_NE(p.add_relay(10, relay(500, 1)), nullptr);
  ASSERT_NE(p.add_relay(11, relay(300, 2)), nullptr);
  ASSERT_NE(p.add_relay(12, relay(300, 3)), nullptr);
  EXPECT_EQ(p.add_relay(13, relay(100, 4)), nullptr);  // full: refused, not stored
  EXPECT_EQ(p.find_relay(13), nullptr);
  EXPECT_EQ(p.relay_count(), 3u);
  EXPECT_EQ(p.earliest_relay_deadline(), 300u);
  // Due ones by our seq_no, only those past their deadline.
  EXPECT_TRUE(p.due_relays(299).empty());
  EXPECT_EQ(p.due_relays(300), (std::vector<std::uint32_t>{11, 12}));
  EXPECT_EQ(p.due_relays(1000), (std::vector<std::uint32_t>{10, 11, 12}));
  // Answered (or expired): gone, and the earliest moves on.
  p.erase_relay(11);
  p.erase_relay(11);
  EXPECT_EQ(p.find_relay(11), nullptr);
  EXPECT_EQ(p.earliest_relay_deadline(), 300u);
  p.erase_relay(12);
  EXPECT_EQ(p.earliest_relay_deadline(), 500u);
  ASSERT_NE(p.find_relay(10), nullptr);
  EXPECT_EQ(p.find_relay(10)->origin_seq, 1u);
  // A number used again replaces its relay, deadline included.
  ASSERT_NE(p.add_relay(10, relay(200, 5)), nullptr);
  EXPECT_EQ(p.relay_count(), 1u);
  EXPECT_EQ(p.find_relay(10)->origin_seq, 5u);
  EXPECT_EQ(p.earliest_relay_deadline(), 200u);
  p.erase_relay(10);
  EXPECT_EQ(p.earliest_relay_deadline(), UINT64_MAX);
}

}  // namespace
}  // namespace gw::cp::engine
