#include "control/engine/wire_size.h"

#include <cstdint>
#include <tuple>

namespace gw::cp::engine {

using wire::Count;

std::size_t estimated_size(const Message& m) { return wire::element_size<Count::kBound>(m); }

std::size_t estimated_size(const Compound& c) {
  std::size_t n = 0;
  for (const Message& m : c) n += estimated_size(m);
  return n;
}

// SyncRequest.members is field 6 and SyncResponse.members field 5: the same
// one-byte key, so one size for a member state in either.
namespace {
constexpr std::uint32_t kMembersNumber = std::tuple_element_t<5, wire::Table<SyncRequest>::Fields>::number;
static_assert(wire::key_size(kMembersNumber) ==
              wire::key_size(std::tuple_element_t<4, wire::Table<SyncResponse>::Fields>::number));
// And `releases` (10 and 8): one-byte keys too.
constexpr std::uint32_t kReleasesNumber = std::tuple_element_t<9, wire::Table<SyncRequest>::Fields>::number;
static_assert(wire::key_size(kReleasesNumber) ==
              wire::key_size(std::tuple_element_t<7, wire::Table<SyncResponse>::Fields>::number));
}  // namespace

std::size_t estimated_size(const MemberState& s) {
  return wire::delimited(kMembersNumber, wire::body_size<Count::kBound>(s));
}

std::size_t estimated_size(const Release& r) {
  return wire::delimited(kReleasesNumber, wire::body_size<Count::kBound>(r));
}

std::size_t estimated_sync_size(const SyncRequest& s) { return wire::element_size<Count::kBound>(s); }
std::size_t estimated_sync_size(const SyncResponse& s) { return wire::element_size<Count::kBound>(s); }

std::size_t estimated_sync_overhead(std::size_t source_bytes) {
  // Either sync with no members, digest, buckets or view size, at its widest:
  // seq_no, part, parts (uint32 varints: at most 5 bytes each), join, source,
  // and the two length prefixes of the wrapping Message/Compound element (at
  // most 5 bytes each). Every key is one byte (field numbers below 16).
  constexpr std::size_t kWidestUint32 = 1 + varint_size(UINT32_MAX);
  constexpr std::size_t kFlag = 1 + 1;
  return 3 * kWidestUint32 + kFlag + wire::delimited(2, source_bytes) + 2 * kWidestUint32;
}

std::size_t exact_size(const Message& m) { return wire::element_size<Count::kExact>(m); }

}  // namespace gw::cp::engine
