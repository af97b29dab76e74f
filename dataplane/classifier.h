// Names what arrives on the gossip port without our header (verdict
// unkeyed): other gossip protocols' plaintext and operator-defined
// signatures, so an operator sees what hits the port. The verdict stays
// drop_unkeyed; only the per-rule counters depend on this.
//
// Built-in rules and the operator's rules (config `classifier.rules`) are
// compiled into ONE Hyperscan block-mode database at start; it is read-only
// and shared by all workers, each of which owns a scratch. A packet counts
// toward exactly one rule: the first in list order (built-ins first) that
// matches within the first `scan_bytes` of the UDP payload, else `unmatched`.
//
// Pure: no DPDK. Construction allocates and may throw; classify() does
// neither.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

struct hs_database;
struct hs_scratch;

namespace gw::dp {

struct ClassifierRule {
  std::string name;
  std::string pattern;  // Hyperscan (PCRE subset) syntax, matched with DOTALL
};

// Most rules one database holds (built-ins included); counters are sized by it.
inline constexpr std::size_t kMaxClassifierRules = 64;
// Most operator rules (config classifier.rules).
inline constexpr std::size_t kMaxOperatorRules = 32;
// Shortest scan prefix: the built-in signatures need up to 43 bytes.
inline constexpr std::uint32_t kMinScanBytes = 64;

// The built-in signatures, in match-priority order. Names are stable
// counter names (exported as unkeyed.<name>).
const std::vector<ClassifierRule>& builtin_classifier_rules();

class ClassifierError : public std::runtime_error {
 public:
  ClassifierError(std::string rule, const std::string& message) : std::runtime_error(message), rule_(std::move(rule)) {}
  // The rule at fault ("" when the error is not about one rule).
  const std::string& rule() const noexcept { return rule_; }

 private:
  std::string rule_;
};

// Checks one operator rule on its own: name syntax and that Hyperscan
// compiles the pattern. Returns "" if it is fine, else why not (without the
// rule name; the caller says where). For the config loader.
std::string check_classifier_rule(std::string_view name, std::string_view pattern);

// How long building a classifier may take by default (config
// classifier.compile_budget_ms).
inline constexpr std::uint32_t kDefaultCompileBudgetMs = 10000;

class Classifier {
 public:
  // Compiles the built-ins (if `builtins`) and `rules`. Throws
  // ClassifierError naming the first bad rule.
  //
  // The compile is bounded (issue 17: one in-range rule took 18 s, 32 never
  // finished in 20 s, and Hyperscan cannot be interrupted): it runs in a
  // child process (fork) that compiles each operator rule alone, then the
  // database, and hands the serialized database back through a pipe. If
  // the whole build has not finished within `compile_budget_ms`, the child
  // is killed and the error names the rule it was compiling. Call it while
  // the process has one thread (gossipgw: before EAL starts; gossipctl).
  // A budget of 0 compiles in this process without a bound (fuzz targets).
  Classifier(const std::vector<ClassifierRule>& rules, bool builtins, std::uint32_t scan_bytes,
             std::uint32_t compile_budget_ms = kDefaultCompileBudgetMs);
  ~Classifier();
  Classifier(const Classifier&) = delete;
  Classifier& operator=(const Classifier&) = delete;

  // Per-lcore scratch space; make one per worker at start.
  class Scratch {
   public:
    Scratch() = default;
    ~Scratch();
    Scratch(Scratch&& o) noexcept : s_(o.s_) { o.s_ = nullptr; }
    Scratch& operator=(Scratch&& o) noexcept;
    Scratch(const Scratch&) = delete;
    Scratch& operator=(const Scratch&) = delete;
    bool valid() const noexcept { return s_ != nullptr; }

   private:
    friend class Classifier;
    hs_scratch* s_ = nullptr;
  };
  Scratch make_scratch() const;

  // The index of the first matching rule, or unmatched() (== rule_count()).
  // `scratch` must come from this classifier. No allocation, no exceptions.
  std::uint32_t classify(Scratch& scratch, const std::uint8_t* data, std::size_t len) const noexcept;

  std::uint32_t rule_count() const noexcept { return static_cast<std::uint32_t>(names_.size()); }
  std::uint32_t unmatched() const noexcept { return rule_count(); }
  const std::vector<std::string>& rule_names() const noexcept { return names_; }
  std::uint32_t scan_bytes() const noexcept { return scan_bytes_; }

 private:
  std::vector<std::string> names_;
  std::uint32_t scan_bytes_ = kMinScanBytes;
  hs_database* db_ = nullptr;
  hs_scratch* proto_scratch_ = nullptr;  // cloned by make_scratch()
};

}  // namespace gw::dp
