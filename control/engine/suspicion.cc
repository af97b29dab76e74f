#include "control/engine/suspicion.h"

#include <algorithm>
#include <cmath>

namespace gw::cp::engine {

std::uint64_t suspicion_min_timeout(std::uint32_t mult, std::size_t n, std::uint64_t interval_ns) {
  const double node_scale = std::max(1.0, std::log10(std::max(1.0, static_cast<double>(n))));
  // Millisecond resolution like memberlist, which keeps the result exact enough
  // and identical across runs.
  const double ms = static_cast<double>(mult) * node_scale * static_cast<double>(interval_ns / 1'000'000ULL);
  return static_cast<std::uint64_t>(ms) * 1'000'000ULL;
}

std::uint64_t suspicion_timeout(std::uint64_t min_ns, std::uint64_t max_ns, std::uint32_t confirmations,
                                std::uint32_t expected) {
  // No independent confirmations to wait for: the minimum is all we can justify.
  if (expected < 1 || max_ns <= min_ns) return min_ns;
  const std::uint32_t c = std::min(confirmations, expected);
  const double frac = std::log(static_cast<double>(c) + 1.0) / std::log(static_cast<double>(expected) + 1.0);
  const double raw = static_cast<double>(max_ns) - frac * static_cast<double>(max_ns - min_ns);
  // Millisecond rounding as in memberlist keeps the values stable.
  const auto ms = static_cast<std::uint64_t>(std::floor(raw / 1e6));
  return std::max<std::uint64_t>(min_ns, ms * 1000000ULL);
}

Suspicion::Suspicion(std::string from, std::uint32_t expected, std::uint64_t min_ns, std::uint64_t max_ns,
                     std::uint64_t start_ns)
    : from_(std::move(from)),
      expected_(expected),
      min_ns_(min_ns),
      max_ns_(expected == 0 ? min_ns : max_ns),
      start_ns_(start_ns) {
  update_deadline();
}

bool Suspicion::confirm(const std::string& from) {
  // Enough confirmations already: the timeout is at its minimum.
  if (confirmers_.size() >= expected_) return false;
  // The original accuser repeating itself is not independent.
  if (from == from_) return false;
  if (!confirmers_.insert(from).second) return false;
  update_deadline();
  return true;
}

void Suspicion::hold_until(std::uint64_t t) {
  hold_ns_ = t > hold_ns_ ? t : hold_ns_;
  update_deadline();
}

void Suspicion::update_deadline() {
  const std::uint64_t t = start_ns_ + suspicion_timeout(min_ns_, max_ns_, confirmations(), expected_);
  deadline_ns_ = t > hold_ns_ ? t : hold_ns_;
}

const Suspicion* SuspicionSet::find(const std::string& node) const {
  auto it = by_name_.find(node);
  return it == by_name_.end() ? nullptr : &it->second;
}

void SuspicionSet::start(const std::string& node, Suspicion s) {
  auto [it, fresh] = by_name_.emplace(node, std::move(s));
  if (fresh) by_deadline_.emplace(it->second.deadline(), &it->first);
}

bool SuspicionSet::confirm(const std::string& node, const std::string& from) {
  auto it = by_name_.find(node);
  if (it == by_name_.end()) return false;
  const std::uint64_t before = it->second.deadline();
  if (!it->second.confirm(from)) return false;
  if (it->second.deadline() != before) {
    by_deadline_.erase({before, &it->first});
    by_deadline_.emplace(it->second.deadline(), &it->first);
  }
  return true;
}

void SuspicionSet::erase(const std::string& node) {
  auto it = by_name_.find(node);
  if (it == by_name_.end()) return;
  by_deadline_.erase({it->second.deadline(), &it->first});
  by_name_.erase(it);
}

void SuspicionSet::hold_all(std::uint64_t t) {
  by_deadline_.clear();
  for (auto& [name, s] : by_name_) {
    s.hold_until(t);
    by_deadline_.emplace(s.deadline(), &name);
  }
}

std::uint64_t SuspicionSet::earliest() const { return by_deadline_.empty() ? UINT64_MAX : by_deadline_.begin()->first; }

std::vector<std::string> SuspicionSet::due(std::uint64_t now_ns) const {
  std::vector<std::string> out;
  for (const auto& [deadline, name] : by_deadline_) {
    if (deadline > now_ns) break;
    out.push_back(*name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace gw::cp::engine
