#include "control/engine/message_type.h"

#include <gtest/gtest.h>

#include "control/engine/messages.h"

namespace gw::cp::engine {
namespace {

TEST(MessageType, FollowsTheMessageAlternatives) {
  EXPECT_EQ(Message(Ping{}).index(), static_cast<std::size_t>(MessageType::kPing));
  EXPECT_EQ(Message(IndirectPing{}).index(), static_cast<std::size_t>(MessageType::kIndirectPing));
  EXPECT_EQ(Message(Leave{}).index(), static_cast<std::size_t>(MessageType::kLeave));
  EXPECT_EQ(Message(SyncResponse{}).index(), static_cast<std::size_t>(MessageType::kSyncResponse));
  EXPECT_EQ(Message(UserData{}).index(), static_cast<std::size_t>(MessageType::kUserData));
}

TEST(MessageType, NamesByValueAndByAlternative) {
  EXPECT_STREQ(message_type_name(MessageType::kPing), "ping");
  EXPECT_STREQ(message_type_name(MessageType::kIndirectPing), "indirect_ping");
  EXPECT_STREQ(message_type_name(MessageType::kSyncRequest), "sync_request");
  EXPECT_STREQ(message_type_name(MessageType::kUserData), "user_data");
  EXPECT_STREQ(message_type_name(static_cast<MessageType>(kMessageTypeCount)), "unknown");
  EXPECT_STREQ(message_type_name(Message(Nack{}).index()), "nack");
  EXPECT_STREQ(message_type_name(std::size_t{1000}), "unknown");
}

}  // namespace
}  // namespace gw::cp::engine
