#include "control/engine/admission.h"

#include <algorithm>

namespace gw::cp::engine {

Admission::Admission(std::uint32_t rate_per_s, std::uint32_t burst, std::vector<std::string> prefixes,
                     std::vector<Tag> required_tags, std::uint64_t now_ns)
    : bucket_(rate_per_s, burst, now_ns), prefixes_(std::move(prefixes)), required_tags_(std::move(required_tags)) {}

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

}  // namespace gw::cp::engine
