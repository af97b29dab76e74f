// Lifeguard suspicion timers. A suspicion starts at a long timeout (max) and
// shrinks toward min as independent members confirm it, because k independent
// accusers make a false positive unlikely:
//   timeout = max(min, max - (max - min) * log(C + 1) / log(K + 1))
// with C confirmations so far and K expected ones (memberlist's formula).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace gw::cp::engine {

// min = mult * max(1, log10(max(1, n))) * interval (memberlist suspicionTimeout).
std::uint64_t suspicion_min_timeout(std::uint32_t mult, std::size_t n, std::uint64_t interval_ns);

// The shrinking timeout for `confirmations` out of `expected`.
std::uint64_t suspicion_timeout(std::uint64_t min_ns, std::uint64_t max_ns, std::uint32_t confirmations,
                                std::uint32_t expected);

class Suspicion {
 public:
  // `from` is the accuser that started it; it does not count as a confirmation.
  Suspicion(std::string from, std::uint32_t expected, std::uint64_t min_ns, std::uint64_t max_ns,
            std::uint64_t start_ns);

  // True if `from` is a new independent confirmation (then re-gossip it).
  bool confirm(const std::string& from);

  // When it runs out: computed when it starts and on each change (a
  // confirmation, a hold), so reading it costs nothing.
  std::uint64_t deadline() const { return deadline_ns_; }
  // Not before `t`, whatever the confirmations (after a stall of our own).
  void hold_until(std::uint64_t t);
  std::uint32_t confirmations() const { return static_cast<std::uint32_t>(confirmers_.size()); }
  // Who accused: the member that started it, and those that confirmed it.
  const std::string& accuser() const { return from_; }
  const std::set<std::string>& confirmers() const { return confirmers_; }

 private:
  std::string from_;
  std::uint32_t expected_;
  std::uint64_t min_ns_;
  std::uint64_t max_ns_;
  std::uint64_t start_ns_;
  std::uint64_t hold_ns_ = 0;
  std::uint64_t deadline_ns_ = 0;
  std::set<std::string> confirmers_;  // at most expected_ entries

  void update_deadline();
};

// Suspicions by member name (at most one per member), with their deadlines
// kept in order: the earliest is read in O(1) and a change costs O(log n),
// so the engine's next deadline does not walk every suspicion (in a storm
// there are thousands, and the host asks for it on every pass).
class SuspicionSet {
 public:
  const Suspicion* find(const std::string& node) const;
  // Starts a suspicion of `node`; none may be running for it.
  void start(const std::string& node, Suspicion s);
  // Suspicion::confirm on `node`'s suspicion, which must exist.
  bool confirm(const std::string& node, const std::string& from);
  // Ends `node`'s suspicion, if any.
  void erase(const std::string& node);
  // Suspicion::hold_until on every one.
  void hold_all(std::uint64_t t);
  // The earliest deadline; UINT64_MAX when there is none.
  std::uint64_t earliest() const;
  // The members whose suspicion ran out by `now_ns`, in name order.
  std::vector<std::string> due(std::uint64_t now_ns) const;
  std::size_t size() const { return by_name_.size(); }

 private:
  struct ByDeadline {
    bool operator()(const std::pair<std::uint64_t, const std::string*>& a,
                    const std::pair<std::uint64_t, const std::string*>& b) const {
      return a.first != b.first ? a.first < b.first : *a.second < *b.second;
    }
  };
  std::map<std::string, Suspicion> by_name_;
  // (deadline, name): the name points at by_name_'s key, which never moves.
  std::set<std::pair<std::uint64_t, const std::string*>, ByDeadline> by_deadline_;
};

}  // namespace gw::cp::engine
