#include "control/engine/admission.h"

#include <algorithm>

namespace gw::cp::engine {

TokenBucket::TokenBucket(std::uint32_t rate_per_s, std::uint32_t burst, std::uint64_t now_ns)
    : rate_(rate_per_s), burst_(burst), scaled_tokens_(static_cast<std::uint64_t>(burst) * kScale), last_ns_(now_ns) {}

Admission::Admission(std::uint32_t rate_per_s, std::uint32_t burst, std::vector<std::string> prefixes,
                     std::vector<Tag> required_tags, std::uint64_t now_ns)
    : bucket_(rate_per_s, burst, now_ns), prefixes_(std::move(prefixes)), required_tags_(std::move(required_tags)) {}

void TokenBucket::refill(std::uint64_t now_ns) {
  // Clock did not advance (or went back): nothing to add.
  if (now_ns <= last_ns_) return;
  const std::uint64_t cap = burst_ * kScale;
  std::uint64_t elapsed = now_ns - last_ns_;
  last_ns_ = now_ns;
  if (rate_ == 0) return;
  // Clamp before multiplying: beyond the time to fill the bucket, more is moot
  // and the product could overflow.
  const std::uint64_t fill_ns = cap / rate_ + 1;
  elapsed = std::min(elapsed, fill_ns);
  scaled_tokens_ = std::min(cap, scaled_tokens_ + elapsed * rate_);
}

bool Admission::policy_allows(const std::string& name, const std::vector<Tag>& tags) const {
  if (!prefixes_.empty()) {
    const bool match = std::any_of(prefixes_.begin(), prefixes_.end(),
                                   [&](const std::string& p) { return name.compare(0, p.size(), p) == 0; });
    if (!match) return false;
  }
  for (const Tag& required : required_tags_) {
    if (std::find(tags.begin(), tags.end(), required) == tags.end()) return false;
  }
  return true;
}

AdmitVerdict Admission::admit(const std::string& name, const std::vector<Tag>& tags, std::uint64_t now_ns) {
  if (!policy_allows(name, tags)) return AdmitVerdict::kPolicy;
  return bucket_.take(now_ns) ? AdmitVerdict::kAdmit : AdmitVerdict::kRateLimited;
}

bool TokenBucket::take(std::uint64_t now_ns) {
  refill(now_ns);
  if (scaled_tokens_ < kScale) return false;
  scaled_tokens_ -= kScale;
  return true;
}

std::uint64_t TokenBucket::tokens(std::uint64_t now_ns) {
  refill(now_ns);
  return scaled_tokens_ / kScale;
}

}  // namespace gw::cp::engine

namespace gw::cp::engine {

std::uint64_t TokenBucket::next_token_ns() const {
  if (scaled_tokens_ >= kScale) return last_ns_;
  if (rate_ == 0) return UINT64_MAX;
  // scaled tokens grow by `rate_` per ns.
  return last_ns_ + (kScale - scaled_tokens_ + rate_ - 1) / rate_;
}

}  // namespace gw::cp::engine
