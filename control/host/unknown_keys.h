// Who sends us our cluster's datagrams under a key id our keyring lacks.
// The workers count them (drop_unknown_key) and keep a small sample of key
// ids and sources (dataplane/api/unknown_keys.h); this collects the samples
// on the control lcore, names each source (a member of our view, one of our
// seeds, or neither) and says it in the log at most once a minute:
//
//   a member that sends under a key we lack ("member gw-b (10.0.0.2:7946,
//   alive) sends under key id 1a2b3c4d, which this node's keyring lacks"):
//   it or we missed a key rotation;
//   everyone else, in one line ("hears datagrams of this cluster under key
//   id(s) ... from 10.0.0.1:7946 (seed), ... while alone"): typically this
//   node restarted with a keyring the cluster has rotated away from.
//
// The senders heard in the last kWindowNs, by kind, are exported as the
// gauge gossipgw_unknown_key_senders{kind} (the alert
// GossipgwKeyringMismatch, docs/alerts.yml). The key id and the source are
// not authenticated (no key opened the datagram): the log says "claims".
// Control lcore only; the clock is the caller's.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "dataplane/api/unknown_keys.h"

namespace gw::cp {

class UnknownKeyWatch {
 public:
  static constexpr std::uint64_t kLogEveryNs = 60'000'000'000ULL;  // at most one report a minute
  // A sender counts in senders() while heard within this: longer than the
  // slowest retry that makes it heard (a join retried every 60 s +- 25 %).
  static constexpr std::uint64_t kWindowNs = 180'000'000'000ULL;
  static constexpr std::size_t kMaxSenders = 64;  // distinct (key id, source) remembered
  static constexpr std::size_t kMaxNamed = 8;     // member lines and sources listed per report

  enum class Kind : std::uint8_t { kMember, kSeed, kOther };
  static constexpr std::array<const char*, 3> kKindNames = {"member", "seed", "other"};
  // What an address is to us: a member of our view (its name and state),
  // one of our seeds, or neither.
  struct Who {
    Kind kind = Kind::kOther;
    std::string name;   // the member's (kMember)
    std::string state;  // alive, suspect, dead, left (kMember)
  };
  using Resolve = std::function<Who(const dp::Endpoint&)>;

  struct Senders {
    std::uint64_t member = 0;
    std::uint64_t seed = 0;
    std::uint64_t other = 0;
  };

  // One sighting from a worker's sample, at `now_ns`.
  void add(const dp::UnknownKeySighting& s, std::uint64_t now_ns, const Resolve& who);

  // The log lines due now (warnings): none until something was heard since
  // the last report and kLogEveryNs has passed since it. `ours`: our key
  // ids; `drops_total`: drop_unknown_key of all workers so far; `alone`: we
  // see no live member but ourselves.
  std::vector<std::string> report(std::uint64_t now_ns, const Resolve& who, const std::vector<std::uint32_t>& ours,
                                  std::uint64_t drops_total, bool alone);

  // Distinct sources heard in the last kWindowNs, by kind.
  Senders senders(std::uint64_t now_ns) const;

 private:
  struct Entry {
    dp::UnknownKeySighting s;
    Who who;
    std::uint64_t first_ns = 0;
    std::uint64_t last_ns = 0;
  };
  std::vector<Entry> entries_;
  std::uint64_t next_report_ns_ = 0;
  std::uint64_t last_report_ns_ = 0;
  bool reported_ = false;
  std::uint64_t drops_at_report_ = 0;
};

// "10.0.0.2:7946" or "[fd00::2]:7946".
std::string endpoint_text(const dp::Endpoint& e);

}  // namespace gw::cp
