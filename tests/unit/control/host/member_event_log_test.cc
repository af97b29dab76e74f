// control/host/member_event_log.h and sender_keys.h: the two small tables the
// host keeps beside the engine.
#include "control/host/member_event_log.h"

#include <gtest/gtest.h>

#include <vector>

#include "control/host/sender_keys.h"

namespace gw::cp {
namespace {

engine::MemberEvent event(engine::EventKind kind, std::uint64_t incarnation) {
  engine::MemberEvent e;
  e.kind = kind;
  e.node = "n1";
  e.incarnation = incarnation;
  return e;
}

TEST(MemberEventLog, CountsByKindTellsTheListenerAndKeepsTheMostRecent) {
  MemberEventLog log;
  std::vector<std::uint64_t> heard;
  log.set_listener([&](const engine::MemberEvent& e) { heard.push_back(e.incarnation); });
  log.record(event(engine::EventKind::kJoin, 1));
  log.record(event(engine::EventKind::kFailed, 2));
  log.record(event(engine::EventKind::kUpdate, 3));
  EXPECT_EQ(log.counts(), (std::array<std::uint64_t, 4>{1, 0, 1, 1}));
  EXPECT_EQ(log.version(), 3u);
  EXPECT_EQ(heard, (std::vector<std::uint64_t>{1, 2, 3}));
  for (std::uint64_t i = 0; i < MemberEventLog::kRecent; ++i) log.record(event(engine::EventKind::kLeave, 100 + i));
  ASSERT_EQ(log.recent().size(), MemberEventLog::kRecent);
  EXPECT_EQ(log.recent().front().incarnation, 100u);  // the oldest three forgotten
  EXPECT_EQ(log.recent().back().incarnation, 100 + MemberEventLog::kRecent - 1);
  EXPECT_STREQ(event_kind_name(engine::EventKind::kFailed), "failed");
}

TEST(SenderKeys, RemembersTheLastKeyPerSenderAndStartsOverWhenFull) {
  SenderKeys keys;
  const engine::Address a{{10, 0, 0, 1}, 7946};
  EXPECT_FALSE(keys.find(a).has_value());
  EXPECT_FALSE(keys.note(a, 7));
  EXPECT_FALSE(keys.note(a, 8));
  EXPECT_EQ(keys.find(a), 8u);
  for (std::uint32_t i = 1; i < SenderKeys::kMax; ++i) {
    EXPECT_FALSE(keys.note(engine::Address{{10, 1, static_cast<std::uint8_t>(i >> 8), static_cast<std::uint8_t>(i)},
                                           static_cast<std::uint16_t>(i >> 16)},
                           1));
  }
  EXPECT_EQ(keys.find(a), 8u);  // full now, still known
  const engine::Address b{{10, 0, 0, 2}, 7946};
  EXPECT_TRUE(keys.note(b, 9));  // one more: forgotten all, relearning
  EXPECT_FALSE(keys.find(a).has_value());
  EXPECT_EQ(keys.find(b), 9u);
}

}  // namespace
}  // namespace gw::cp
