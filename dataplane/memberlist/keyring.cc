#include "dataplane/memberlist/keyring.h"

#include <algorithm>

namespace gw::dp::ml {

std::unique_ptr<Keyring> Keyring::make(std::span<const std::span<const std::uint8_t>> keys, std::string* error) {
  if (keys.size() > kMaxKeys) {
    if (error != nullptr) *error = "memberlist keyring: more than " + std::to_string(kMaxKeys) + " keys";
    return nullptr;
  }
  std::unique_ptr<Keyring> ring(new Keyring());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const std::size_t len = keys[i].size();
    if (len != 16 && len != 24 && len != 32) {
      if (error != nullptr) {
        *error = "memberlist keyring: key " + std::to_string(i) + " has " + std::to_string(len) +
                 " bytes (AES-GCM keys are 16, 24 or 32 bytes)";
      }
      return nullptr;
    }
    if (!crypto::ipsecmb_gcm_expand_len(keys[i].data(), len, &ring->keys_[i])) {
      if (error != nullptr) *error = "memberlist keyring: ipsec-mb has no AES-GCM code for this CPU";
      return nullptr;
    }
    ring->lens_[i] = static_cast<std::uint8_t>(len);
    ring->n_ = i + 1;
  }
  return ring;
}

Keyring::~Keyring() {
  for (std::size_t i = 0; i < n_; ++i) crypto::ipsecmb_gcm_clear(&keys_[i]);
}

KeyringExchange::KeyringExchange(std::size_t readers, std::unique_ptr<Keyring> initial)
    : readers_(std::min(readers, kMaxReaders)) {
  initial->version_ = next_version_++;
  current_.store(initial.get(), std::memory_order_release);
  owned_.push_back(std::move(initial));
}

std::uint64_t KeyringExchange::publish(std::unique_ptr<Keyring> next) {
  next->version_ = next_version_++;
  const std::uint64_t v = next->version_;
  current_.store(next.get(), std::memory_order_release);
  owned_.push_back(std::move(next));
  reclaim();
  return v;
}

void KeyringExchange::reclaim() noexcept {
  std::uint64_t oldest = current().version_;
  for (std::size_t r = 0; r < readers_; ++r) oldest = std::min(oldest, seen_[r].v.load(std::memory_order_acquire));
  // A reader that never adopted (0) may hold the first keyring through an
  // earlier load: 0 keeps everything.
  while (owned_.size() > 1 && owned_.front()->version_ < oldest) owned_.pop_front();
}

}  // namespace gw::dp::ml
