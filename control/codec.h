// Engine messages <-> protobuf bytes (gw.proto.Compound). Only the control core
// uses this; the engine itself never sees protobuf.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "control/engine/messages.h"

namespace gw::cp {

enum class DecodeError : std::uint8_t {
  kNone = 0,
  kTooLarge,       // more bytes than protobuf can parse in one call
  kMalformed,      // not a valid gw.proto.Compound
  kEmptyMessage,   // a Message with no body set
  kBadAddress,     // ip not 0/4/16 bytes, or port > 65535
  kBadStatus,      // MemberStatus outside the known values
};

const char* decode_error_name(DecodeError e);

struct DecodeResult {
  engine::Compound messages;
  DecodeError error = DecodeError::kNone;

  bool ok() const { return error == DecodeError::kNone; }
};

// Deterministic encoding: identical compounds give identical bytes. Returns an
// empty vector only for an empty compound.
std::vector<std::uint8_t> encode(const engine::Compound& compound);

// Appends the encoding to `out`; returns the bytes appended.
std::size_t encode_append(const engine::Compound& compound, std::vector<std::uint8_t>& out);

// Exact size of encode(compound).
std::size_t encoded_size(const engine::Compound& compound);

// Never throws; bad bytes give an error result and no messages.
DecodeResult decode(std::span<const std::uint8_t> bytes);

}  // namespace gw::cp
