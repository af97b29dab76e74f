// Admission control for never-seen members: a token bucket (new members per
// second) and an optional name-prefix/required-tag policy. Known members are not
// subject to it: their updates are always processed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "control/engine/messages.h"

namespace gw::cp::engine {

// Integer token bucket (tokens kept in units of 1e-9 so refill is exact).
class TokenBucket {
 public:
  TokenBucket(std::uint32_t rate_per_s, std::uint32_t burst, std::uint64_t now_ns);
  // Takes one token if there is one.
  bool take(std::uint64_t now_ns);
  // Whole tokens available now.
  std::uint64_t tokens(std::uint64_t now_ns);
  // When the next whole token is there (as of the last refill; UINT64_MAX at rate 0).
  std::uint64_t next_token_ns() const;

 private:
  void refill(std::uint64_t now_ns);

  static constexpr std::uint64_t kScale = 1'000'000'000ULL;
  std::uint64_t rate_;   // tokens per second
  std::uint64_t burst_;  // bucket depth, tokens
  std::uint64_t scaled_tokens_;
  std::uint64_t last_ns_;
};

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
