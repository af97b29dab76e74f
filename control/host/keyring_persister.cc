// KeyringPersister (keyring_state.h): apart from the file format, so that
// gossipctl, which reads and writes the file, links no logging.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <exception>

#include "control/host/keyring_state.h"

namespace gw::cp {

std::string KeyringPersister::save_now(const crypto::Keyring& ring, const KeyMaterial& material) {
  try {
    save_keyring_state(dir_, ring, material);
  } catch (const std::exception& e) {
    ++counters_.write_errors;
    spdlog::error("{}", e.what());
    return e.what();
  }
  ++counters_.writes;
  saved_ = true;
  ids_ = ring.ids();
  primary_ = ring.primary() != nullptr ? ring.primary()->id() : 0;
  backoff_ns_ = kRetryMinNs;
  spdlog::debug("keyring saved to {}/{}", dir_, kKeyringStateFile);
  return {};
}

void KeyringPersister::sync(const crypto::Keyring& ring, const KeyMaterial& material, std::uint64_t now_ns) {
  const std::uint32_t primary = ring.primary() != nullptr ? ring.primary()->id() : 0;
  if (saved_ && primary == primary_ && ring.ids() == ids_) return;
  if (now_ns < next_try_ns_) return;
  if (save_now(ring, material).empty()) return;
  // Retried with backoff until it is written: the next start must not come
  // back with an older keyring than the one running.
  spdlog::error("keyring not saved: retrying in {} s (the next start may come back with an older keyring)",
                backoff_ns_ / 1'000'000'000ULL);
  next_try_ns_ = now_ns + backoff_ns_;
  backoff_ns_ = std::min(backoff_ns_ * 2, kRetryMaxNs);
}

}  // namespace gw::cp
