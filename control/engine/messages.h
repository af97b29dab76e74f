// Engine-side membership messages: plain structs mirroring proto/gossip.proto one
// to one, so that the engine needs no protobuf (control/codec.h converts). Their
// wire shape (field numbers and encodings) is control/engine/wire_shape.h.
#pragma once

#include <algorithm>
#include <compare>
#include <cstdint>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "base/endpoint.h"
#include "base/priority_class.h"
#include "control/engine/member_status.h"
#include "control/engine/message_type.h"

namespace gw::cp::engine {

// Endpoints are the shared vocabulary's (base/endpoint.h).
using base::Address;
using base::IpBytes;

// key=value member metadata, e.g. role=control-plane.
struct Tag {
  std::string key;
  std::string value;

  auto operator<=>(const Tag&) const = default;
  bool operator==(const Tag&) const = default;
};

struct Ping {
  std::uint32_t seq_no = 0;
  std::string target;  // whom the sender believes it probes; empty = anyone
  std::string source;
  Address source_addr;
  std::uint64_t ring_ms = 0;  // the sender's probe-ring clock (Probing); 0 = none
  // The sender does not know our build (for our current life): the Ack says it.
  bool want_build = false;
  bool operator==(const Ping&) const = default;
};

struct Ack {
  std::uint32_t seq_no = 0;
  std::string source;
  std::string build = {};  // the responder's, when the Ping asked (want_build); empty = not said
  bool operator==(const Ack&) const = default;
};

struct IndirectPing {
  std::uint32_t seq_no = 0;
  std::string target;
  Address target_addr;
  bool want_nack = false;
  std::string source;
  Address source_addr;
  bool operator==(const IndirectPing&) const = default;
};

struct Nack {
  std::uint32_t seq_no = 0;
  std::string source;
  bool operator==(const Nack&) const = default;
};

// The longest build string (Alive::build, Release::build) a member keeps: a
// longer one is dropped on receipt (counted: build_drop_too_long) and the
// member kept with its build unknown, so that a later build with a longer
// version string still joins a cluster of older ones.
inline constexpr std::size_t kMaxBuildBytes = 64;

struct Alive {
  std::uint64_t incarnation = 0;
  std::string node;
  Address addr;
  std::vector<Tag> tags;
  std::uint32_t protocol_version = 0;
  // The member's build ("0.1.0+<git>"): said by the Alive that brings a
  // life and its relays; empty (not said: kept as held) in refutations.
  std::string build = {};
  bool operator==(const Alive&) const = default;
};

struct Suspect {
  std::uint64_t incarnation = 0;
  std::string node;
  std::string from;
  bool operator==(const Suspect&) const = default;
};

struct Dead {
  std::uint64_t incarnation = 0;
  std::string node;
  std::string from;
  // A probation's verdict: the declarer held it on probation and could not
  // prove it alive (it never had a suspicion to refute). A member that holds
  // it established takes it as a suspicion (state.cc apply_dead).
  bool unproven = false;
  bool operator==(const Dead&) const = default;
};

struct Leave {
  std::uint64_t incarnation = 0;
  std::string node;
  bool operator==(const Leave&) const = default;
};

// What a member runs (gw.proto.Release; 0 and empty: not known): a sync part
// lists each distinct one once and its member states refer to them by position.
struct Release {
  std::uint32_t protocol_version = 0;
  std::string build;
  bool operator==(const Release&) const = default;
};

struct MemberState {
  std::string node;
  Address addr;
  std::uint64_t incarnation = 0;
  MemberStatus status = MemberStatus::kAlive;
  std::vector<Tag> tags;
  std::uint32_t release = 0;  // its position in the sync's `releases` (none listed: not said)
  bool operator==(const MemberState&) const = default;
};

struct SyncRequest {
  std::uint32_t seq_no = 0;
  std::string source;
  bool join = false;
  std::uint32_t part = 0;
  std::uint32_t parts = 0;
  std::vector<MemberState> members;
  std::uint64_t digest = 0;  // MemberTable::view_digest of the sender; 0 = none
  // With a digest: MemberTable::bucket_digests of the sender (empty = none),
  // so that an unequal view is answered with the buckets that differ only.
  std::vector<std::uint32_t> buckets = {};
  // With a digest: how many members the sender's view holds (0 = not said).
  std::uint32_t view_size = 0;
  std::vector<Release> releases = {};  // what `members` run (MemberState::release)
  // The responder's cookie for our address, echoed (return_routes.h); 0 = none.
  std::uint64_t cookie = 0;
  bool operator==(const SyncRequest&) const = default;
};

struct SyncResponse {
  std::uint32_t seq_no = 0;
  std::string source;
  std::uint32_t part = 0;
  std::uint32_t parts = 0;
  std::vector<MemberState> members;
  std::uint64_t digest = 0;                 // the responder's view digest; 0 = none
  std::vector<std::uint32_t> buckets = {};  // its bucket digests, when the request had them
  std::vector<Release> releases = {};       // what `members` run (MemberState::release)
  // Not the answer but a cookie (return_routes.h): ask again with it; 0 = none.
  std::uint64_t cookie = 0;
  bool operator==(const SyncResponse&) const = default;
};

struct UserData {
  std::string source;
  std::string data;  // opaque bytes
  bool operator==(const UserData&) const = default;
};

// Alternative order = MessageType (message_type.h) = gw.proto.Message oneof
// field number - 1: the static_asserts below hold the first two together,
// control/engine/wire_shape.h and its test the protobuf.
using Message =
    std::variant<Ping, Ack, IndirectPing, Nack, Alive, Suspect, Dead, Leave, SyncRequest, SyncResponse, UserData>;

// What one datagram carries: several messages piggybacked together.
using Compound = std::vector<Message>;

inline constexpr std::size_t kMessageTypes = std::variant_size_v<Message>;
static_assert(kMessageTypes == kMessageTypeCount, "message_type.h names every Message alternative");

namespace detail {
template <typename T, typename... Ts>
constexpr std::size_t index_in() {
  constexpr bool same[] = {std::is_same_v<T, Ts>...};
  for (std::size_t i = 0; i < sizeof...(Ts); ++i)
    if (same[i]) return i;
  return sizeof...(Ts);
}
template <typename T, typename V>
struct AlternativeIndex;
template <typename T, typename... Ts>
struct AlternativeIndex<T, std::variant<Ts...>> {
  static constexpr std::size_t value = index_in<T, Ts...>();
};
}  // namespace detail

// The MessageType of a message struct: its Message alternative.
template <typename T>
inline constexpr MessageType kTypeOf = static_cast<MessageType>(detail::AlternativeIndex<T, Message>::value);

static_assert(kTypeOf<Ping> == MessageType::kPing);
static_assert(kTypeOf<Ack> == MessageType::kAck);
static_assert(kTypeOf<IndirectPing> == MessageType::kIndirectPing);
static_assert(kTypeOf<Nack> == MessageType::kNack);
static_assert(kTypeOf<Alive> == MessageType::kAlive);
static_assert(kTypeOf<Suspect> == MessageType::kSuspect);
static_assert(kTypeOf<Dead> == MessageType::kDead);
static_assert(kTypeOf<Leave> == MessageType::kLeave);
static_assert(kTypeOf<SyncRequest> == MessageType::kSyncRequest);
static_assert(kTypeOf<SyncResponse> == MessageType::kSyncResponse);
static_assert(kTypeOf<UserData> == MessageType::kUserData);

// The type of the message `m` holds.
inline MessageType type_of(const Message& m) { return static_cast<MessageType>(m.index()); }

// Egress/ingress priority classes, highest first: the shared vocabulary's
// (base/priority_class.h; the gateway header carries one, the dataplane queues by them).
using PriorityClass = base::PriorityClass;
inline constexpr std::size_t kPriorityClasses = base::kClassCount;

// The class a message has by type. An Alive that refutes a suspicion of ourselves
// is urgent, which only its sender knows: the engine upgrades it when it queues it.
inline PriorityClass default_priority(MessageType t) {
  switch (t) {
    case MessageType::kDead:
    case MessageType::kLeave:
      return PriorityClass::kUrgent;
    case MessageType::kPing:
    case MessageType::kAck:
    case MessageType::kIndirectPing:
    case MessageType::kNack:
      return PriorityClass::kProbe;
    case MessageType::kSyncRequest:
    case MessageType::kSyncResponse:
      return PriorityClass::kBulk;
    case MessageType::kAlive:
    case MessageType::kSuspect:
    case MessageType::kUserData:
      return PriorityClass::kGossip;
  }
  return PriorityClass::kGossip;  // not a MessageType: the class of unknown gossip
}
inline PriorityClass default_priority(const Message& m) { return default_priority(type_of(m)); }

// The most urgent class a message may travel in (issue 17): its default
// class, except Alive, which may be urgent (a refutation, and relays of one:
// the broadcast queue keeps a refutation urgent).
inline PriorityClass class_ceiling(const Message& m) {
  return type_of(m) == MessageType::kAlive ? PriorityClass::kUrgent : default_priority(m);
}

// Whether a datagram's header class is one its content can justify: a
// datagram travels in the most urgent class it carries (Engine::send), so
// the header may be no more urgent than its most urgent message allows. An
// empty compound (a key command or result, no membership message) may be
// anything. A less urgent header than the content is the sender's loss, not
// an abuse, and passes.
inline bool class_fits(PriorityClass header, const Compound& messages) {
  if (messages.empty()) return true;
  PriorityClass best = PriorityClass::kBulk;
  for (const Message& m : messages) best = std::min(best, class_ceiling(m));
  return header >= best;
}

// Short stable names for counters and logs ("ping", "ack", ...; message_type.h);
// "unknown" past the last alternative.
inline const char* message_type_name(std::size_t variant_index) {
  return message_type_name(static_cast<MessageType>(variant_index < kMessageTypes ? variant_index : kMessageTypes));
}

}  // namespace gw::cp::engine
