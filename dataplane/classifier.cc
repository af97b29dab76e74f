#include "dataplane/classifier.h"

#include <hs.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
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

// ---- the bounded compile (a child process; see the header) ----
//
// The child writes framed messages: 'R' u32 (operator rule i compiled alone),
// 'E' u32 u32 bytes (rule i does not compile: the message), 'M' i32 u32
// bytes (the database does not compile: expression, message), 'D' u64 bytes
// (the serialized database). The parent reads until EOF or the deadline.

bool write_all(int fd, const void* data, std::size_t len) {
  const auto* p = static_cast<const std::uint8_t*>(data);
  while (len > 0) {
    const ssize_t n = ::write(fd, p, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    len -= static_cast<std::size_t>(n);
  }
  return true;
}

template <class T>
void put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

struct Compiled {
  hs_database_t* db = nullptr;
  bool timed_out = false;
  std::size_t rules_done = 0;  // operator rules that compiled alone
  std::int64_t bad_rule = -1;  // index in `exprs` of the rule at fault
  bool alone = false;          // ... which failed compiled on its own
  std::string error;           // "" on success
};

// The compile itself: each operator rule alone (`done(i)` after rule i),
// then the database.
template <class Done>
Compiled compile_here(const std::vector<const char*>& exprs, const std::vector<unsigned>& flags,
                      const std::vector<unsigned>& ids, std::size_t first_operator, Done done) {
  Compiled out;
  const auto message = [](hs_compile_error_t* err) {
    std::string why = err != nullptr && err->message != nullptr ? printable(err->message) : "unknown error";
    return why;
  };
  for (std::size_t i = first_operator; i < exprs.size(); ++i) {
    hs_database_t* db = nullptr;
    hs_compile_error_t* err = nullptr;
    if (hs_compile(exprs[i], flags[i], HS_MODE_BLOCK, nullptr, &db, &err) != HS_SUCCESS) {
      out.error = message(err);
      out.bad_rule = static_cast<std::int64_t>(i);
      out.alone = true;
      hs_free_compile_error(err);
      return out;
    }
    hs_free_database(db);
    ++out.rules_done;
    done(i);
  }
  hs_compile_error_t* err = nullptr;
  if (hs_compile_multi(exprs.data(), flags.data(), ids.data(), static_cast<unsigned>(exprs.size()), HS_MODE_BLOCK,
                       nullptr, &out.db, &err) != HS_SUCCESS) {
    out.db = nullptr;
    out.error = message(err);
    out.bad_rule = err != nullptr ? err->expression : -1;
    hs_free_compile_error(err);
  }
  return out;
}

[[noreturn]] void compile_child(int fd, const std::vector<const char*>& exprs, const std::vector<unsigned>& flags,
                                const std::vector<unsigned>& ids, std::size_t first_operator) {
  const Compiled c = compile_here(exprs, flags, ids, first_operator, [fd](std::size_t i) {
    std::string msg(1, 'R');
    put(msg, static_cast<std::uint32_t>(i));
    if (!write_all(fd, msg.data(), msg.size())) ::_exit(1);
  });
  std::string msg;
  if (c.db == nullptr) {
    msg += c.alone ? 'E' : 'M';
    put(msg, static_cast<std::int32_t>(c.bad_rule));
    put(msg, static_cast<std::uint32_t>(c.error.size()));
    msg += c.error;
    (void)write_all(fd, msg.data(), msg.size());
    ::_exit(0);
  }
  char* bytes = nullptr;
  std::size_t len = 0;
  if (hs_serialize_database(c.db, &bytes, &len) != HS_SUCCESS) ::_exit(1);
  msg += 'D';
  put(msg, static_cast<std::uint64_t>(len));
  (void)write_all(fd, msg.data(), msg.size());
  (void)write_all(fd, bytes, len);
  ::_exit(0);
}

// Reads one framed message from `buf` at `*at`; false if it is incomplete.
template <class T>
bool get(const std::string& buf, std::size_t* at, T* v) {
  if (buf.size() - *at < sizeof(T)) return false;
  std::memcpy(v, buf.data() + *at, sizeof(T));
  *at += sizeof(T);
  return true;
}

Compiled compile_bounded(const std::vector<const char*>& exprs, const std::vector<unsigned>& flags,
                         const std::vector<unsigned>& ids, std::size_t first_operator, std::uint32_t budget_ms) {
  if (budget_ms == 0) return compile_here(exprs, flags, ids, first_operator, [](std::size_t) {});
  Compiled out;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    out.error = std::string("cannot start the compile: pipe: ") + std::strerror(errno);
    return out;
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    out.error = std::string("cannot start the compile: fork: ") + std::strerror(errno);
    ::close(fds[0]);
    ::close(fds[1]);
    return out;
  }
  if (pid == 0) {
    ::close(fds[0]);
    compile_child(fds[1], exprs, flags, ids, first_operator);
  }
  ::close(fds[1]);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(budget_ms);
  std::string buf;
  bool eof = false;
  while (!eof) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) break;
    pollfd p{fds[0], POLLIN, 0};
    const int rc = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000)));
    if (rc < 0 && errno == EINTR) continue;
    if (rc <= 0) continue;
    char chunk[65536];
    const ssize_t n = ::read(fds[0], chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      eof = true;
    } else {
      buf.append(chunk, static_cast<std::size_t>(n));
    }
  }
  ::close(fds[0]);
  if (!eof) {
    out.timed_out = true;
    ::kill(pid, SIGKILL);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  // Walk what arrived: progress, then one result.
  std::size_t at = 0;
  out.rules_done = 0;
  while (at < buf.size()) {
    const char type = buf[at++];
    if (type == 'R') {
      std::uint32_t i = 0;
      if (!get(buf, &at, &i)) break;
      out.rules_done = i + 1 - first_operator;
    } else if (type == 'E' || type == 'M') {
      std::int32_t i = -1;
      std::uint32_t len = 0;
      if (!get(buf, &at, &i) || !get(buf, &at, &len) || buf.size() - at < len) break;
      out.bad_rule = i;
      out.alone = type == 'E';
      out.error = buf.substr(at, len);
      return out;
    } else if (type == 'D') {
      std::uint64_t len = 0;
      if (!get(buf, &at, &len) || buf.size() - at < len) break;
      if (hs_deserialize_database(buf.data() + at, static_cast<std::size_t>(len), &out.db) != HS_SUCCESS) {
        out.db = nullptr;
        out.error = "cannot load the compiled database";
      } else {
        out.timed_out = false;  // the whole database came in time (the deadline hit before EOF)
      }
      return out;
    } else {
      break;
    }
  }
  if (!out.timed_out) out.error = "the compile process ended without a result (status " + std::to_string(status) + ")";
  return out;
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

Classifier::Classifier(const std::vector<ClassifierRule>& rules, bool builtins, std::uint32_t scan_bytes,
                       std::uint32_t compile_budget_ms)
    : scan_bytes_(std::max(scan_bytes, kMinScanBytes)) {
  std::vector<ClassifierRule> all;
  if (builtins) all = builtin_classifier_rules();
  const std::size_t first_operator = all.size();
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
    if (r.pattern.empty() || r.pattern.size() > kMaxPatternBytes) {
      throw ClassifierError(r.name, "classifier rule '" + r.name + "': pattern must be 1.." +
                                        std::to_string(kMaxPatternBytes) + " bytes");
    }
    if (r.pattern.find('\0') != std::string::npos) {
      throw ClassifierError(r.name, "classifier rule '" + r.name + "': pattern holds a NUL byte (write \\x00)");
    }
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
  // Each operator rule alone first, so an error names its rule for certain;
  // then the database. All of it within the budget.
  Compiled c = compile_bounded(exprs, flags, ids, first_operator, compile_budget_ms);
  if (c.timed_out) {
    const std::size_t at = first_operator + c.rules_done;
    const std::string budget = std::to_string(compile_budget_ms) + " ms (classifier.compile_budget_ms)";
    if (at < all.size()) {
      throw ClassifierError(all[at].name, "classifier rule '" + all[at].name +
                                              "': Hyperscan did not compile it within " + budget +
                                              "; simplify the pattern (smaller {n,m} bounds, fewer "
                                              "alternations inside repeats)");
    }
    throw ClassifierError("", "classifier: the rules compiled one by one, but not together within " + budget +
                                  "; use fewer or simpler rules");
  }
  if (!c.error.empty()) {
    if (c.bad_rule >= 0 && static_cast<std::size_t>(c.bad_rule) < all.size()) {
      const std::string& name = all[static_cast<std::size_t>(c.bad_rule)].name;
      throw ClassifierError(
          name, "classifier rule '" + name + "': " + (c.alone ? "Hyperscan rejects the pattern: " : "") + c.error);
    }
    throw ClassifierError("", "classifier database: " + c.error);
  }
  db_ = c.db;
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
