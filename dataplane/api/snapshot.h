// What the control plane publishes to the workers: an immutable snapshot of
// the keyring and the addresses of known members. Workers adopt the newest one
// between bursts, so a burst always sees one consistent keyring (a key
// rotation never loses a packet to a half-updated ring), and nothing here is
// ever written after publication.
//
// Reclamation is quiescent-state based: a worker that adopts version V tells
// the exchange so; the control lcore frees a retired snapshot only once every
// worker has adopted something newer. No locks, no allocation on the worker.
//
// Pure: no DPDK, so tests and the control plane use it directly.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <vector>

#include "crypto/keys.h"
#include "dataplane/api/handoff.h"

namespace gw::dp {

// An address without its port, comparable: IPv4 in the first 4 bytes.
struct SourceAddress {
  std::array<std::uint8_t, 16> ip{};
  std::uint8_t ip_len = 0;

  static SourceAddress of(const Endpoint& e) noexcept {
    SourceAddress s;
    s.ip = e.ip;
    s.ip_len = e.ip_len;
    return s;
  }
  // Two 8-byte compares: the rate limiter runs this for every way of a set,
  // and the defaulted version called memcmp.
  friend bool operator==(const SourceAddress& a, const SourceAddress& b) noexcept {
    std::uint64_t a0 = 0, a1 = 0, b0 = 0, b1 = 0;
    std::memcpy(&a0, a.ip.data(), 8);
    std::memcpy(&a1, a.ip.data() + 8, 8);
    std::memcpy(&b0, b.ip.data(), 8);
    std::memcpy(&b1, b.ip.data() + 8, 8);
    return ((a0 ^ b0) | (a1 ^ b1) | static_cast<std::uint64_t>(a.ip_len ^ b.ip_len)) == 0;
  }
  friend auto operator<=>(const SourceAddress&, const SourceAddress&) = default;
};

struct DataplaneSnapshot {
  std::uint64_t version = 0;  // set by publish()
  crypto::Keyring keys;
  // Addresses of members the control plane knows (alive or suspect), sorted
  // and unique; workers give them a larger rate-limit budget.
  std::vector<SourceAddress> known_members;
  // The raw bytes of every key in `keys`, by id: the control lcore persists
  // the keyring from them (control.state_dir). Workers never read it.
  std::map<std::uint32_t, crypto::KeyBytes> key_material;

  bool is_known(const SourceAddress& a) const noexcept {
    return std::binary_search(known_members.begin(), known_members.end(), a);
  }
};

class SnapshotExchange {
 public:
  static constexpr std::size_t kMaxWorkers = 64;

  // `workers` readers will call adopt(); the first snapshot is `initial`.
  SnapshotExchange(std::size_t workers, std::unique_ptr<DataplaneSnapshot> initial)
      : workers_(std::min(workers, kMaxWorkers)) {
    initial->version = 1;
    next_version_ = 2;
    current_.store(initial.get(), std::memory_order_release);
    owned_.push_back(std::move(initial));
    for (auto& s : seen_) s.v.store(0, std::memory_order_relaxed);
  }
  SnapshotExchange(const SnapshotExchange&) = delete;
  SnapshotExchange& operator=(const SnapshotExchange&) = delete;

  // Worker `w`, between bursts: returns the newest snapshot and records that
  // the worker no longer uses older ones. Wait-free: two atomic operations.
  const DataplaneSnapshot* adopt(std::size_t w) noexcept {
    const DataplaneSnapshot* s = current_.load(std::memory_order_acquire);
    if (seen_[w].v.load(std::memory_order_relaxed) != s->version) {
      seen_[w].v.store(s->version, std::memory_order_release);
    }
    return s;
  }

  // Worker `w` is gone for good (stopped): it no longer holds any snapshot.
  void retire_reader(std::size_t w) noexcept { seen_[w].v.store(UINT64_MAX, std::memory_order_release); }

  // Control lcore only. The snapshot workers will see from their next burst.
  const DataplaneSnapshot& current() const noexcept { return *current_.load(std::memory_order_relaxed); }

  // Control lcore only. Publishes `next` and frees what no worker holds.
  // Returns the version given to `next`.
  std::uint64_t publish(std::unique_ptr<DataplaneSnapshot> next) {
    next->version = next_version_++;
    const std::uint64_t v = next->version;
    current_.store(next.get(), std::memory_order_release);
    owned_.push_back(std::move(next));
    reclaim();
    return v;
  }

  // Control lcore only. Frees retired snapshots older than what every worker
  // has adopted; call it now and then (publish() does).
  void reclaim() noexcept {
    std::uint64_t oldest_in_use = current().version;
    for (std::size_t w = 0; w < workers_; ++w) {
      oldest_in_use = std::min(oldest_in_use, seen_[w].v.load(std::memory_order_acquire));
    }
    // A worker that has not adopted anything yet (0) may still hold version 1
    // through an earlier load: keep everything from the first snapshot on.
    while (owned_.size() > 1 && owned_.front()->version < oldest_in_use) owned_.pop_front();
  }

  // Control lcore only. True once every worker runs on the current snapshot.
  bool all_adopted() const noexcept {
    const std::uint64_t v = current().version;
    for (std::size_t w = 0; w < workers_; ++w) {
      if (seen_[w].v.load(std::memory_order_acquire) < v) return false;
    }
    return true;
  }

  std::size_t retained() const noexcept { return owned_.size(); }
  std::size_t workers() const noexcept { return workers_; }

 private:
  struct alignas(64) Seen {
    std::atomic<std::uint64_t> v{0};
  };
  std::size_t workers_;
  std::atomic<const DataplaneSnapshot*> current_{nullptr};
  std::array<Seen, kMaxWorkers> seen_;
  std::deque<std::unique_ptr<DataplaneSnapshot>> owned_;  // oldest first; back() is current
  std::uint64_t next_version_ = 1;
};

}  // namespace gw::dp
