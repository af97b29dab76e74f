#include "dataplane/classifier.h"

#include <hs.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "dataplane/api/counters.h"

namespace gw::dp {
namespace {

static_assert(kMaxClassifierRules <= kUnkeyedRuleSlots, "a counter slot per rule");

constexpr unsigned kFlags = HS_FLAG_DOTALL | HS_FLAG_SINGLEMATCH;
constexpr std::size_t kMaxNameBytes = 48;
constexpr std::size_t kMaxPatternBytes = 1024;

// HashiCorp memberlist (and so Serf, Consul) UDP packets in the clear: a
// message-type byte, then the message as a msgpack map whose keys are Go
// field names (a fixmap of 1..15 entries, then a fixstr key of 1..31 bytes
// starting with a capital). Since memberlist 0.1.5 a packet may be wrapped
// as hasCrc (12), a 4-byte CRC32, then the message.
#define GW_ML_CRC "^(?:\\x0c.{4})?"
#define GW_ML_MAP "[\\x81-\\x8f][\\xa1-\\xbf][A-Z]"

// compound (7): a count byte, count big-endian uint16 lengths, then the
// first inner message. Counts up to 16 fit the minimum scan prefix.
std::string compound_pattern() {
  std::string p = GW_ML_CRC "\\x07(?:";
  for (int n = 1; n <= 16; ++n) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "%s\\x%02x.{%d}", n == 1 ? "" : "|", n, 2 * n);
    p += buf;
  }
  p += ")[\\x00-\\x0b]" GW_ML_MAP;
  return p;
}

std::vector<ClassifierRule> make_builtins() {
  return {
      {"memberlist_ping", GW_ML_CRC "\\x00" GW_ML_MAP},
      {"memberlist_indirect_ping", GW_ML_CRC "\\x01" GW_ML_MAP},
      {"memberlist_ack", GW_ML_CRC "\\x02" GW_ML_MAP},
      {"memberlist_suspect", GW_ML_CRC "\\x03" GW_ML_MAP},
      {"memberlist_alive", GW_ML_CRC "\\x04" GW_ML_MAP},
      {"memberlist_dead", GW_ML_CRC "\\x05" GW_ML_MAP},
      {"memberlist_push_pull", GW_ML_CRC "\\x06" GW_ML_MAP},
      {"memberlist_compound", compound_pattern()},
      // A memberlist user message carrying a Serf message (Serf's own type
      // byte 0..9, then its msgpack map): Serf and Consul's event layer.
      {"serf", GW_ML_CRC "\\x08[\\x00-\\x09]" GW_ML_MAP},
      {"memberlist_compressed", GW_ML_CRC "\\x09" GW_ML_MAP},
      {"memberlist_nack", GW_ML_CRC "\\x0b" GW_ML_MAP},
      {"memberlist_err", GW_ML_CRC "\\x0d" GW_ML_MAP},
      // Weave Net's mesh protocol opens with "weave" and its min and max
      // protocol versions (1..2).
      {"weave_mesh", "^weave[\\x01-\\x02][\\x01-\\x02]"},
  };
}

#undef GW_ML_CRC
#undef GW_ML_MAP

bool name_ok(std::string_view name, std::string* why) {
  if (name.empty() || name.size() > kMaxNameBytes) {
    *why = "name must be 1.." + std::to_string(kMaxNameBytes) + " bytes";
    return false;
  }
  for (const char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) {
      *why = "name may hold only a-z, 0-9 and _ (it becomes a counter name)";
      return false;
    }
  }
  if (name == kUnkeyedUnmatchedName || name == kUnkeyedUnscannedName) {
    *why = "name '" + std::string(name) + "' is reserved for a counter";
    return false;
  }
  for (const ClassifierRule& b : builtin_classifier_rules()) {
    if (b.name == name) {
      *why = "name '" + std::string(name) + "' is a built-in rule";
      return false;
    }
  }
  return true;
}

// Printable and bounded, for error messages.
std::string printable(std::string_view s) {
  std::string out;
  for (const char c : s.substr(0, 64)) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f) {
      out += c;
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", u);
      out += buf;
    }
  }
  if (s.size() > 64) out += "...";
  return out;
}

std::string compile_one(const std::string& pattern) {
  if (pattern.empty() || pattern.size() > kMaxPatternBytes) {
    return "pattern must be 1.." + std::to_string(kMaxPatternBytes) + " bytes";
  }
  if (pattern.find('\0') != std::string::npos) return "pattern holds a NUL byte (write \\x00)";
  hs_database_t* db = nullptr;
  hs_compile_error_t* err = nullptr;
  if (hs_compile(pattern.c_str(), kFlags, HS_MODE_BLOCK, nullptr, &db, &err) != HS_SUCCESS) {
    std::string why = "Hyperscan rejects the pattern: ";
    why += err != nullptr && err->message != nullptr ? printable(err->message) : "unknown error";
    hs_free_compile_error(err);
    return why;
  }
  hs_free_database(db);
  return "";
}

struct Best {
  unsigned id;
};

int on_match(unsigned int id, unsigned long long, unsigned long long, unsigned int, void* ctx) {
  auto* best = static_cast<Best*>(ctx);
  if (id < best->id) best->id = id;
  // Rule 0 cannot be beaten: stop scanning.
  return id == 0 ? 1 : 0;
}

}  // namespace

const std::vector<ClassifierRule>& builtin_classifier_rules() {
  static const std::vector<ClassifierRule> rules = make_builtins();
  return rules;
}

std::string check_classifier_rule(std::string_view name, std::string_view pattern) {
  std::string why;
  if (!name_ok(name, &why)) return why;
  return compile_one(std::string(pattern));
}

Classifier::Classifier(const std::vector<ClassifierRule>& rules, bool builtins, std::uint32_t scan_bytes)
    : scan_bytes_(std::max(scan_bytes, kMinScanBytes)) {
  std::vector<ClassifierRule> all;
  if (builtins) all = builtin_classifier_rules();
  if (rules.size() > kMaxOperatorRules) {
    throw ClassifierError("", "at most " + std::to_string(kMaxOperatorRules) + " classifier rules");
  }
  for (const ClassifierRule& r : rules) {
    std::string why;
    if (!name_ok(r.name, &why)) throw ClassifierError(r.name, "classifier rule '" + printable(r.name) + "': " + why);
    for (const ClassifierRule& seen : all) {
      if (seen.name == r.name) {
        throw ClassifierError(r.name, "classifier rule '" + r.name + "': name given twice");
      }
    }
    // Compiled alone first, so an error names its rule for certain.
    why = compile_one(r.pattern);
    if (!why.empty()) throw ClassifierError(r.name, "classifier rule '" + r.name + "': " + why);
    all.push_back(r);
  }
  for (const ClassifierRule& r : all) names_.push_back(r.name);
  if (all.empty()) return;  // nothing to scan for: every packet is unmatched

  std::vector<const char*> exprs;
  std::vector<unsigned> flags(all.size(), kFlags);
  std::vector<unsigned> ids;
  for (std::size_t i = 0; i < all.size(); ++i) {
    exprs.push_back(all[i].pattern.c_str());
    ids.push_back(static_cast<unsigned>(i));
  }
  hs_compile_error_t* err = nullptr;
  if (hs_compile_multi(exprs.data(), flags.data(), ids.data(), static_cast<unsigned>(all.size()),
                       HS_MODE_BLOCK, nullptr, &db_, &err) != HS_SUCCESS) {
    const int at = err != nullptr ? err->expression : -1;
    std::string why = err != nullptr && err->message != nullptr ? printable(err->message) : "unknown error";
    hs_free_compile_error(err);
    if (at >= 0 && static_cast<std::size_t>(at) < all.size()) {
      throw ClassifierError(all[static_cast<std::size_t>(at)].name,
                            "classifier rule '" + all[static_cast<std::size_t>(at)].name + "': " + why);
    }
    throw ClassifierError("", "classifier database: " + why);
  }
  if (hs_alloc_scratch(db_, &proto_scratch_) != HS_SUCCESS) {
    hs_free_database(db_);
    db_ = nullptr;
    throw ClassifierError("", "classifier: cannot allocate Hyperscan scratch");
  }
}

Classifier::~Classifier() {
  if (proto_scratch_ != nullptr) hs_free_scratch(proto_scratch_);
  if (db_ != nullptr) hs_free_database(db_);
}

Classifier::Scratch::~Scratch() {
  if (s_ != nullptr) hs_free_scratch(s_);
}

Classifier::Scratch& Classifier::Scratch::operator=(Scratch&& o) noexcept {
  if (this != &o) {
    if (s_ != nullptr) hs_free_scratch(s_);
    s_ = o.s_;
    o.s_ = nullptr;
  }
  return *this;
}

Classifier::Scratch Classifier::make_scratch() const {
  Scratch s;
  if (proto_scratch_ != nullptr && hs_clone_scratch(proto_scratch_, &s.s_) != HS_SUCCESS) {
    throw ClassifierError("", "classifier: cannot allocate Hyperscan scratch");
  }
  return s;
}

std::uint32_t Classifier::classify(Scratch& scratch, const std::uint8_t* data, std::size_t len) const noexcept {
  if (db_ == nullptr || scratch.s_ == nullptr) return unmatched();
  Best best{unmatched()};
  const auto n = static_cast<unsigned>(std::min<std::size_t>(len, scan_bytes_));
  // HS_SCAN_TERMINATED (rule 0 matched) is a success here.
  hs_scan(db_, reinterpret_cast<const char*>(data), n, 0, scratch.s_, on_match, &best);
  return best.id;
}

}  // namespace gw::dp
