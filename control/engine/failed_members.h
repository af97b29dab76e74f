// Members that failed as established members (not as newcomers: a storm's
// dead phantoms are not here, nor members that left), kept with their address
// for reconnect_timeout_ns after their death, however long their tombstone
// lasts: both sides of a partition think the other dead, and only a datagram
// across it (a reconnect sync, Serf's reconnect) tells a member that it is
// held dead, so that it refutes. Bounded (the oldest goes first, counted).
#pragma once

#include <cstdint>
#include <deque>
#include <unordered_map>

#include "control/engine/identity.h"
#include "control/engine/messages.h"
#include "control/engine/rng.h"

namespace gw::cp::engine {

class FailedMembers {
 public:
  struct Entry {
    Name name;  // held: its id stays this member's while it is here
    Address addr;
    std::uint64_t incarnation = 0;  // the one it died at
    std::uint64_t died_ns = 0;
    std::uint64_t told_ns = 0;  // last time we told it it is held dead (0: never)
    bool live = true;           // false: back, or forgotten (skipped, compacted later)
  };

  explicit FailedMembers(std::size_t capacity) : capacity_(capacity == 0 ? 1 : capacity) {}

  // `name` failed at `incarnation` (a later death of the same member replaces
  // the earlier). Returns true if the oldest entry had to go.
  bool add(const Name& name, const Address& addr, std::uint64_t incarnation, std::uint64_t now_ns);
  // `name` is back (a newer life, a refutation) or left for good. Returns
  // whether it was here.
  bool remove(std::uint32_t name_id);
  Entry* find(std::uint32_t name_id);
  // Entries that failed more than `timeout_ns` ago are given up; returns how many.
  std::size_t expire(std::uint64_t now_ns, std::uint64_t timeout_ns);
  // When the oldest entry is due to be given up (UINT64_MAX: none).
  std::uint64_t next_expiry(std::uint64_t timeout_ns) const;
  // A uniformly random entry, or nullptr when there is none.
  const Entry* pick(Rng& rng) const;
  std::size_t size() const { return live_; }

 private:
  void compact();

  std::size_t capacity_;
  std::deque<Entry> entries_;  // in order of death
  std::unordered_map<std::uint32_t, std::size_t> index_;  // name id -> position in entries_ (after offset_)
  std::size_t offset_ = 0;  // entries popped from the front since positions were numbered
  std::size_t live_ = 0;
};

}  // namespace gw::cp::engine
