#include "dataplane/handoff_rings.h"

#include <new>
#include <stdexcept>
#include <string>

#include "dataplane/port.h"

namespace gw::dp {

HandoffRings::HandoffRings(std::size_t workers, std::uint32_t size, std::uint32_t max_payload) : rings_(workers) {
  for (auto& per_worker : rings_) {
    for (auto& r : per_worker) {
      try {
        r = std::make_unique<PayloadRing>(size, max_payload);
      } catch (const std::bad_alloc&) {
        const std::uint64_t mib =
            std::uint64_t{PayloadRing::bytes_for(size, max_payload)} * workers * crypto::kClassCount / (1024 * 1024);
        throw SetupError("rings.size: cannot reserve memory for " + std::to_string(workers * crypto::kClassCount) +
                         " hand-off rings of " + std::to_string(size) + " payloads of up to " +
                         std::to_string(max_payload) + " bytes (about " + std::to_string(mib) +
                         " MiB); lower rings.size or limits.max_payload_bytes");
      } catch (const std::invalid_argument& e) {
        throw SetupError(std::string("rings.size: ") + e.what());
      }
    }
  }
}

void HandoffRings::check_once(std::size_t senders, std::uint32_t window_s, std::uint64_t seed,
                              std::uint32_t per_source) {
  once_ = std::make_unique<ReplayTable>(senders * crypto::kClassCount, seed, window_s,
                                        per_source * static_cast<std::uint32_t>(crypto::kClassCount));
}

std::size_t HandoffRings::bytes() const noexcept {
  std::size_t total = 0;
  for (const auto& per_worker : rings_) {
    for (const auto& r : per_worker) total += r->bytes();
  }
  return total;
}

void HandoffRings::release(Handoff* items, std::size_t n) noexcept {
  // Runs of items from one ring release together.
  std::size_t i = 0;
  while (i < n) {
    auto* r = static_cast<PayloadRing*>(items[i].token);
    std::size_t j = i + 1;
    while (j < n && items[j].token == r) ++j;
    r->release(j - i);
    i = j;
  }
}

bool HandoffRings::producers_done() const noexcept {
  for (const auto* d : done_) {
    if (!d->load(std::memory_order_acquire)) return false;
  }
  return true;
}

}  // namespace gw::dp
