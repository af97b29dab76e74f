#include "control/engine/wire_size.h"

#include <type_traits>

namespace gw::cp::engine {
namespace {

// Field numbers in gossip.proto are all below 16: a one-byte key.
constexpr std::size_t kKey = 1;

std::size_t len_field(std::size_t payload) { return kKey + varint_size(payload) + payload; }
std::size_t varint_field(std::uint64_t v) { return kKey + varint_size(v); }
std::size_t bool_field() { return kKey + 1; }

std::size_t address_body(const Address& a) { return len_field(a.ip.size()) + varint_field(a.port); }

std::size_t tags_size(const std::vector<Tag>& tags) {
  std::size_t n = 0;
  for (const Tag& t : tags) n += len_field(len_field(t.key.size()) + len_field(t.value.size()));
  return n;
}

std::size_t member_state_body(const MemberState& s) {
  return len_field(s.node.size()) + len_field(address_body(s.addr)) + varint_field(s.incarnation) +
         varint_field(static_cast<std::uint64_t>(s.status)) + tags_size(s.tags);
}

template <typename Sync>
std::size_t sync_body(const Sync& s) {
  std::size_t n = varint_field(s.seq_no) + len_field(s.source.size()) + varint_field(s.part) + varint_field(s.parts);
  if constexpr (std::is_same_v<Sync, SyncRequest>) n += bool_field();
  if (s.digest != 0) n += kKey + 8;                              // fixed64
  if (!s.buckets.empty()) n += len_field(4 * s.buckets.size());  // packed fixed32
  if constexpr (std::is_same_v<Sync, SyncRequest>) n += varint_field(s.view_size);
  for (const MemberState& m : s.members) n += len_field(member_state_body(m));
  return n;
}

struct BodySize {
  std::size_t operator()(const Ping& p) const {
    return varint_field(p.seq_no) + len_field(p.target.size()) + len_field(p.source.size()) +
           len_field(address_body(p.source_addr));
  }
  std::size_t operator()(const Ack& a) const { return varint_field(a.seq_no) + len_field(a.source.size()); }
  std::size_t operator()(const IndirectPing& p) const {
    return varint_field(p.seq_no) + len_field(p.target.size()) + len_field(address_body(p.target_addr)) + bool_field() +
           len_field(p.source.size()) + len_field(address_body(p.source_addr));
  }
  std::size_t operator()(const Nack& n) const { return varint_field(n.seq_no) + len_field(n.source.size()); }
  std::size_t operator()(const Alive& a) const {
    return varint_field(a.incarnation) + len_field(a.node.size()) + len_field(address_body(a.addr)) +
           tags_size(a.tags) + varint_field(a.protocol_version);
  }
  std::size_t operator()(const Suspect& s) const {
    return varint_field(s.incarnation) + len_field(s.node.size()) + len_field(s.from.size());
  }
  std::size_t operator()(const Dead& d) const {
    return varint_field(d.incarnation) + len_field(d.node.size()) + len_field(d.from.size());
  }
  std::size_t operator()(const Leave& l) const { return varint_field(l.incarnation) + len_field(l.node.size()); }
  std::size_t operator()(const SyncRequest& s) const { return sync_body(s); }
  std::size_t operator()(const SyncResponse& s) const { return sync_body(s); }
  std::size_t operator()(const UserData& u) const { return len_field(u.source.size()) + len_field(u.data.size()); }
};

}  // namespace

std::size_t estimated_size(const Message& m) {
  const std::size_t body = std::visit(BodySize{}, m);
  // Compound.messages element wrapping a Message whose oneof holds the body.
  return len_field(len_field(body));
}

std::size_t estimated_size(const Compound& c) {
  std::size_t n = 0;
  for (const Message& m : c) n += estimated_size(m);
  return n;
}

std::size_t estimated_size(const MemberState& s) { return len_field(member_state_body(s)); }

std::size_t estimated_sync_size(const SyncRequest& s) { return len_field(len_field(sync_body(s))); }
std::size_t estimated_sync_size(const SyncResponse& s) { return len_field(len_field(sync_body(s))); }

std::size_t estimated_sync_overhead(std::size_t source_bytes) {
  // seq, part, parts (uint32 varints: at most 5 bytes each), join, source, and the
  // two length prefixes of the wrapping Message/Compound element (at most 5 each).
  return 3 * (kKey + 5) + bool_field() + len_field(source_bytes) + 2 * (kKey + 5);
}

}  // namespace gw::cp::engine
