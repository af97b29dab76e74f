// The protobuf-encoded size of engine messages, from their one wire
// description (wire_shape.h), so the engine can fill datagrams to
// `max_packet_bytes` without depending on protobuf. The estimates are upper
// bounds (every field counted as if present: proto3 omits defaults), never
// below the codec's real size; exact_size is what the codec writes.
// tests/unit/control/wire_shape_test.cc holds both to the real encoder.
#pragma once

#include <cstddef>
#include <cstdint>

#include "control/engine/messages.h"
#include "control/engine/wire_shape.h"

namespace gw::cp::engine {

// Bytes `m` adds to an encoded Compound (its repeated-field tag and length included).
std::size_t estimated_size(const Message& m);

// Bytes of the whole encoded Compound.
std::size_t estimated_size(const Compound& c);

// Bytes one MemberState adds to a SyncRequest/SyncResponse.
std::size_t estimated_size(const MemberState& s);

// Bytes one Release adds to a SyncRequest/SyncResponse's `releases`.
std::size_t estimated_size(const Release& r);

// Bytes a received SyncRequest/SyncResponse adds to a Compound: the same as
// estimated_size(Message{s}) without copying its members.
std::size_t estimated_sync_size(const SyncRequest& s);
std::size_t estimated_sync_size(const SyncResponse& s);

// Bytes of a SyncRequest/SyncResponse carrying no members, as a Compound element.
std::size_t estimated_sync_overhead(std::size_t source_bytes);

// Exactly the bytes `m` adds to the codec's encoding of a Compound
// (control/codec.h encoded_size).
std::size_t exact_size(const Message& m);

}  // namespace gw::cp::engine
