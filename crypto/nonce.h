// Nonces that never repeat under a key: an 8-byte random epoch drawn at boot,
// then a 4-byte counter. When the counter wraps a new epoch is drawn. See
// keys.h for the collision bound and the rotation rule that follows from it.
#pragma once

#include <sodium.h>

#include <cstdint>
#include <cstring>

#include "crypto/wire_header.h"

namespace gw::crypto {

class NonceSource {
 public:
  // A fresh random epoch: what a gateway uses.
  NonceSource() { randombytes_buf(&epoch_, sizeof epoch_); }
  // A chosen epoch: for reproducible test traffic only (gossipgen --seed).
  explicit NonceSource(std::uint64_t epoch) : epoch_(epoch), deterministic_(true) {}

  Nonce next() noexcept {
    if (counter_ == UINT32_MAX) {
      // Counter exhausted: move to a new epoch rather than ever wrap.
      if (deterministic_) {
        epoch_ = epoch_ * 6364136223846793005ULL + 1442695040888963407ULL;
      } else {
        randombytes_buf(&epoch_, sizeof epoch_);
      }
      counter_ = 0;
    }
    Nonce n{};
    for (int i = 0; i < 8; ++i) n[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(epoch_ >> (56 - 8 * i));
    const std::uint32_t c = counter_++;
    n[8] = static_cast<std::uint8_t>(c >> 24);
    n[9] = static_cast<std::uint8_t>(c >> 16);
    n[10] = static_cast<std::uint8_t>(c >> 8);
    n[11] = static_cast<std::uint8_t>(c);
    return n;
  }

  std::uint64_t epoch() const noexcept { return epoch_; }
  std::uint32_t counter() const noexcept { return counter_; }
  // Tests only: jump to a counter value to exercise the epoch change.
  void set_counter_for_test(std::uint32_t c) noexcept { counter_ = c; }

 private:
  std::uint64_t epoch_ = 0;
  std::uint32_t counter_ = 0;
  bool deterministic_ = false;
};

}  // namespace gw::crypto
