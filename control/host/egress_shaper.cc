#include "control/host/egress_shaper.h"

#include <algorithm>
#include <cmath>

namespace gw::cp {

ShaperBudget::ShaperBudget(const ShaperConfig& config, std::uint64_t now_ns)
    : bytes_per_sec_(config.bytes_per_sec),
      burst_(static_cast<double>(config.burst_bytes)),
      tokens_(burst_),
      last_ns_(now_ns) {}

void ShaperBudget::refill(std::uint64_t now_ns) noexcept {
  if (now_ns <= last_ns_) return;
  const double earned = static_cast<double>(now_ns - last_ns_) * static_cast<double>(bytes_per_sec_) / 1e9;
  tokens_ = std::min(tokens_ + earned, burst_);
  last_ns_ = now_ns;
}

double ShaperBudget::need(std::size_t bytes) const noexcept { return std::min(static_cast<double>(bytes), burst_); }

bool ShaperBudget::affords(std::size_t bytes) const noexcept { return unlimited() || tokens_ >= need(bytes); }

void ShaperBudget::spend(std::size_t bytes) noexcept {
  if (!unlimited()) tokens_ -= static_cast<double>(bytes);
}

std::uint64_t ShaperBudget::affordable_at(std::size_t bytes, std::uint64_t now_ns) const noexcept {
  if (unlimited()) return now_ns;
  // The tokens a refill at now_ns would find (the same arithmetic).
  double tokens = tokens_;
  if (now_ns > last_ns_) {
    tokens =
        std::min(tokens + static_cast<double>(now_ns - last_ns_) * static_cast<double>(bytes_per_sec_) / 1e9, burst_);
  }
  const double deficit = need(bytes) - tokens;
  if (deficit <= 0) return now_ns;
  const auto wait = static_cast<std::uint64_t>(std::ceil(deficit * 1e9 / static_cast<double>(bytes_per_sec_)));
  return now_ns + wait + 1;
}

}  // namespace gw::cp
