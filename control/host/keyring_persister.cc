// KeyringPersister (keyring_state.h): apart from the file format, so that
// gossipctl, which reads and writes the file, links no logging.
#include <spdlog/spdlog.h>

#include <exception>

#include "control/host/keyring_state.h"

namespace gw::cp {

void KeyringPersister::sync(const crypto::Keyring& ring, const KeyMaterial& material) {
  std::vector<std::uint32_t> ids = ring.ids();
  const std::uint32_t primary = ring.primary() != nullptr ? ring.primary()->id() : 0;
  if (synced_ && ids == ids_ && primary == primary_) return;
  try {
    save_keyring_state(dir_, ring, material);
    ++counters_.writes;
    spdlog::debug("keyring saved to {}/{}", dir_, kKeyringStateFile);
  } catch (const std::exception& e) {
    ++counters_.write_errors;
    spdlog::error("{} (the next start may come back with an older keyring)", e.what());
  }
  synced_ = true;
  ids_ = std::move(ids);
  primary_ = primary;
}

}  // namespace gw::cp
