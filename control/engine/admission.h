// Admission control for never-seen members: a token bucket (new members per
// second) and an optional name-prefix/required-tag policy. Known members are not
// subject to it: their updates are always processed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/token_bucket.h"
#include "control/engine/messages.h"

namespace gw::cp::engine {

// The gateway's one integer token bucket (pure, header only).
using TokenBucket = base::TokenBucket;

enum class AdmitVerdict : std::uint8_t { kAdmit, kRateLimited, kPolicy };

class Admission {
 public:
  Admission(std::uint32_t rate_per_s, std::uint32_t burst, std::vector<std::string> prefixes,
            std::vector<Tag> required_tags, std::uint64_t now_ns);

  // Policy first (free), then a token; a policy reject costs no token.
  AdmitVerdict admit(const std::string& name, const std::vector<Tag>& tags, std::uint64_t now_ns);

  bool policy_allows(const std::string& name, const std::vector<Tag>& tags) const;

  // Whole tokens available now (for tests and stats).
  std::uint64_t tokens(std::uint64_t now_ns) { return bucket_.tokens(now_ns); }
  std::uint64_t next_token_ns() const { return bucket_.next_token_ns(); }

 private:
  TokenBucket bucket_;
  std::vector<std::string> prefixes_;
  std::vector<Tag> required_tags_;
};

}  // namespace gw::cp::engine
