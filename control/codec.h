// The one codec of gossip payloads: engine messages and cluster key commands
// <-> protobuf bytes (gw.proto.Compound). Every protobuf parse and serialize
// of a payload is here, and a payload is parsed once. Only the control core
// (and the simulator) use this; the engine itself never sees protobuf.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <variant>
#include <vector>

#include "control/engine/messages.h"
#include "control/key_command.h"
#include "dataplane/api/handoff.h"

namespace gw::cp {

enum class DecodeError : std::uint8_t {
  kNone = 0,
  kTooLarge,      // more bytes than protobuf can parse in one call
  kMalformed,     // not a valid gw.proto.Compound
  kEmptyMessage,  // a Message with no body set
  kBadAddress,    // ip not 0/4/16 bytes, or port > 65535
  kBadStatus,     // MemberStatus outside the known values
};

const char* decode_error_name(DecodeError e);

struct DecodeResult {
  engine::Compound messages;
  // A payload without membership messages may carry one key command or
  // result instead: set when it does and it validates (a 32-byte key, a
  // known op, names and error within bounds). Not an error when absent or
  // invalid: the payload is then one this build does not understand.
  std::optional<KeyControl> key_control;
  DecodeError error = DecodeError::kNone;

  bool ok() const { return error == DecodeError::kNone; }
};

// Deterministic encoding: identical compounds give identical bytes. Returns an
// empty vector only for an empty compound.
std::vector<std::uint8_t> encode(const engine::Compound& compound);

// Appends the encoding to `out`; returns the bytes appended.
std::size_t encode_append(const engine::Compound& compound, std::vector<std::uint8_t>& out);

// Exact size of encode(compound), without encoding.
std::size_t encoded_size(const engine::Compound& compound);
// Exact bytes one message adds to an encoded Compound (its tag and length
// included): a Compound's size is the sum over its messages.
std::size_t encoded_size(const engine::Message& message);

// A Compound carrying only a key command or result; deterministic bytes.
// An error longer than the wire allows (256 bytes) is cut.
std::vector<std::uint8_t> encode_key_command(const KeyCommandMsg& m);
std::vector<std::uint8_t> encode_key_result(const KeyResultMsg& m);

// Never throws; bad bytes give an error result and no messages.
DecodeResult decode(std::span<const std::uint8_t> bytes);

// How many message bodies of each type a payload carries (engine::Message
// alternative order) and how many of a type this build does not know,
// without converting them: what the control lcore counts when no engine
// runs. nullopt when the bytes are not a Compound. Never throws.
struct BodyCounts {
  std::array<std::uint64_t, std::variant_size_v<engine::Message>> by_type{};
  std::uint64_t unknown = 0;
};
std::optional<BodyCounts> count_bodies(std::span<const std::uint8_t> bytes);

// A datagram's address as the engine spells it, and back (the dataplane's
// endpoint on the wire side). An address that fits no endpoint becomes one
// of length 0, which the transmit path refuses and counts.
engine::Address to_engine_address(const dp::Endpoint& e);
dp::Endpoint to_endpoint(const engine::Address& a);

}  // namespace gw::cp
