// The AES-GCM keyring of a memberlist cluster, as the filter holds it: up to
// kMaxKeys keys of 16, 24 or 32 bytes (AES-128/192/256-GCM), each expanded
// once for ipsec-mb (crypto/aes_gcm.h: the code path is picked once per
// process from the CPU flags by init_mb_mgr_auto). memberlist tries every key
// of its keyring on every packet, primary first; the filter must do the same
// to accept what the agent accepts, so the key count is bounded and small.
//
// Rotation without restart: a Keyring is immutable once built. The control
// plane builds a new one and publishes it through a KeyringExchange; each
// worker adopts the newest between bursts (one acquire load) and tells the
// exchange which version it holds; a retired keyring is freed only once every
// worker has adopted a newer one (quiescent-state reclamation, the scheme of
// dataplane/api/snapshot.h). A burst therefore always runs on one whole
// keyring, and the worker never locks, allocates or waits.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <string>

#include "crypto/aes_gcm.h"

namespace gw::dp::ml {

class Keyring {
 public:
  static constexpr std::size_t kMaxKeys = 16;

  // Builds a keyring from raw keys, primary first (the order in which
  // inspect() tries them). No keys: a plaintext cluster. Returns nullptr and
  // sets `error` for a key of another length than 16, 24 or 32 bytes, more
  // than kMaxKeys keys, or a CPU where ipsec-mb has no AES-NI path.
  static std::unique_ptr<Keyring> make(std::span<const std::span<const std::uint8_t>> keys, std::string* error);

  ~Keyring();
  Keyring(const Keyring&) = delete;
  Keyring& operator=(const Keyring&) = delete;

  std::size_t size() const noexcept { return n_; }
  bool empty() const noexcept { return n_ == 0; }
  const crypto::IpsecMbGcm& key(std::size_t i) const noexcept { return keys_[i]; }
  std::size_t key_len(std::size_t i) const noexcept { return lens_[i]; }
  // Set by KeyringExchange::publish (0 before).
  std::uint64_t version() const noexcept { return version_; }

 private:
  Keyring() = default;
  friend class KeyringExchange;
  std::array<crypto::IpsecMbGcm, kMaxKeys> keys_{};
  std::array<std::uint8_t, kMaxKeys> lens_{};
  std::size_t n_ = 0;
  std::uint64_t version_ = 0;
};

// Publishes keyrings from the control plane to `readers` workers.
class KeyringExchange {
 public:
  static constexpr std::size_t kMaxReaders = 64;

  KeyringExchange(std::size_t readers, std::unique_ptr<Keyring> initial);
  KeyringExchange(const KeyringExchange&) = delete;
  KeyringExchange& operator=(const KeyringExchange&) = delete;

  // Worker `r`, between bursts: the newest keyring; the worker drops any
  // pointer to an older one from here on. Wait-free.
  const Keyring* adopt(std::size_t r) noexcept {
    const Keyring* k = current_.load(std::memory_order_acquire);
    if (seen_[r].v.load(std::memory_order_relaxed) != k->version_)
      seen_[r].v.store(k->version_, std::memory_order_release);
    return k;
  }
  // Worker `r` stopped for good.
  void retire_reader(std::size_t r) noexcept { seen_[r].v.store(UINT64_MAX, std::memory_order_release); }

  // Control plane only: publishes `next` (rotation: add, use, remove a key
  // are each a new keyring) and frees what no worker holds. Returns its version.
  std::uint64_t publish(std::unique_ptr<Keyring> next);
  // Control plane only: frees retired keyrings every worker has moved past.
  void reclaim() noexcept;
  std::size_t retained() const noexcept { return owned_.size(); }
  const Keyring& current() const noexcept { return *current_.load(std::memory_order_relaxed); }

 private:
  struct alignas(64) Seen {
    std::atomic<std::uint64_t> v{0};
  };
  std::size_t readers_;
  std::atomic<const Keyring*> current_{nullptr};
  std::array<Seen, kMaxReaders> seen_;
  std::deque<std::unique_ptr<Keyring>> owned_;  // oldest first
  std::uint64_t next_version_ = 1;
};

}  // namespace gw::dp::ml
