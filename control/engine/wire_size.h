// Upper bounds of the protobuf-encoded size of engine messages, so the engine can
// fill datagrams to `max_packet_bytes` without depending on protobuf. Every field
// is counted as if present (proto3 omits defaults), so the bound is never below
// the codec's real size (tests/unit/control/engine/codec_test.cc checks this).
#pragma once

#include <cstddef>
#include <cstdint>

#include "control/engine/messages.h"

namespace gw::cp::engine {

// Bytes of a base-128 varint holding `v`.
constexpr std::size_t varint_size(std::uint64_t v) {
  std::size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

// Bytes `m` adds to an encoded Compound (its repeated-field tag and length included).
std::size_t estimated_size(const Message& m);

// Bytes of the whole encoded Compound.
std::size_t estimated_size(const Compound& c);

// Bytes one MemberState adds to a SyncRequest/SyncResponse.
std::size_t estimated_size(const MemberState& s);

// Bytes a received SyncRequest/SyncResponse adds to a Compound: the same as
// estimated_size(Message{s}) without copying its members.
std::size_t estimated_sync_size(const SyncRequest& s);
std::size_t estimated_sync_size(const SyncResponse& s);

// Bytes of a SyncRequest/SyncResponse carrying no members, as a Compound element.
std::size_t estimated_sync_overhead(std::size_t source_bytes);

}  // namespace gw::cp::engine
