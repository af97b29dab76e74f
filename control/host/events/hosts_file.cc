#include "control/host/events/hosts_file.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <array>
#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include "config/dns_name.h"
#include "control/host/events/member_line.h"

namespace gw::cp::events {

namespace {

constexpr std::uint64_t kNsPerMs = 1'000'000;
constexpr std::string_view kValuePlaceholder = "{value}";

// A name a hosts file can hold: printable ASCII, no whitespace, no '#'
// (which would start a comment).
bool hosts_name_ok(const std::string& name) {
  if (name.empty()) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u > 0x20 && u < 0x7f && c != '#';
  });
}

bool write_all(int fd, const std::string& s) {
  std::size_t off = 0;
  while (off < s.size()) {
    const ssize_t n = ::write(fd, s.data() + off, s.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    off += static_cast<std::size_t>(n);
  }
  return true;
}

// The whole file, or nullopt (errno set; EFBIG when larger than `limit`).
std::optional<std::string> read_file(const std::string& path, std::size_t limit) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string text;
  std::array<char, 65536> buf{};
  for (;;) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int e = errno;
      ::close(fd);
      errno = e;
      return std::nullopt;
    }
    if (n == 0) break;
    text.append(buf.data(), static_cast<std::size_t>(n));
    if (text.size() > limit) {
      ::close(fd);
      errno = EFBIG;
      return std::nullopt;
    }
  }
  ::close(fd);
  return text;
}

// A line without its newline, trailing blanks and CR.
std::string_view trimmed(std::string_view line) {
  while (!line.empty() && (line.back() == ' ' || line.back() == '\t' || line.back() == '\r')) line.remove_suffix(1);
  return line;
}

struct BlockSpan {
  std::size_t begin = 0;  // offset of the BEGIN line
  std::size_t end = 0;    // offset just past the END line (its newline included, if any)
  std::size_t body = 0;   // offset just past the BEGIN line
  std::size_t body_end = 0;
};

// Finds the one managed block; nullopt with no markers at all (and `error`
// empty), or with `error` set when the markers are not BEGIN then END once.
std::optional<BlockSpan> find_block(std::string_view text, const std::string& begin, const std::string& end,
                                    std::string& error) {
  std::optional<std::size_t> b;
  std::optional<std::size_t> b_next;
  std::optional<std::size_t> e;
  std::optional<std::size_t> e_next;
  std::size_t line_no = 0;
  std::size_t b_line = 0;
  for (std::size_t at = 0; at < text.size();) {
    ++line_no;
    const std::size_t nl = text.find('\n', at);
    const std::size_t next = nl == std::string_view::npos ? text.size() : nl + 1;
    const std::string_view line = trimmed(text.substr(at, (nl == std::string_view::npos ? text.size() : nl) - at));
    if (line == begin) {
      if (b) {
        error = "a second " + begin + " line (line " + std::to_string(line_no) + ")";
        return std::nullopt;
      }
      b = at;
      b_next = next;
      b_line = line_no;
    } else if (line == end) {
      if (!b) {
        error = end + " (line " + std::to_string(line_no) + ") before any " + begin + " line";
        return std::nullopt;
      }
      if (e) {
        error = "a second " + end + " line (line " + std::to_string(line_no) + ")";
        return std::nullopt;
      }
      e = at;
      e_next = next;
    }
    at = next;
  }
  if (b && !e) {
    error = begin + " (line " + std::to_string(b_line) + ") has no " + end + " line";
    return std::nullopt;
  }
  if (!b) return std::nullopt;
  return BlockSpan{*b, *e_next, *b_next, *e};
}

// The names one alias gives `m` (lower case), or the reasons it gives none.
void alias_names(const config::EventsConfig::HostsAlias& a, const engine::Member& m, std::vector<std::string>& names,
                 HostsRenderStats& stats) {
  const std::size_t eq = a.tag.find('=');
  if (eq != std::string::npos) {
    const std::string_view key(a.tag.data(), eq);
    const std::string_view value = std::string_view(a.tag).substr(eq + 1);
    if (std::any_of(m.tags().begin(), m.tags().end(),
                    [&](const engine::Tag& t) { return t.key == key && t.value == value; })) {
      names.push_back(a.name);
    }
    return;
  }
  const std::size_t at = a.name.find(kValuePlaceholder);
  for (const engine::Tag& t : m.tags()) {
    if (t.key != a.tag) continue;
    std::string why = config::dns_label_problem(t.value);
    std::string name = a.name;
    if (at != std::string::npos) name.replace(at, kValuePlaceholder.size(), config::lower_ascii(t.value));
    if (why.empty()) why = config::dns_name_problem(name);
    if (!why.empty()) {
      // The value arrived from the network: it never reaches the file unless
      // it is a DNS label, and the log shows it escaped.
      ++stats.skipped_aliases;
      if (stats.refused.size() < HostsFileWriter::kMaxRefusedShown) {
        std::string shown;
        append_escaped(shown, std::string_view(t.value).substr(0, 80));
        stats.refused.push_back(a.tag + "=" + shown + " (" + why + ")");
      }
      continue;
    }
    names.push_back(std::move(name));
  }
}

}  // namespace

HostsFileWriter::HostsFileWriter(config::EventsConfig::HostsFile config, std::string self,
                                 std::uint32_t min_interval_ms, std::string cluster)
    : config_(std::move(config)),
      self_(std::move(self)),
      begin_(begin_marker(cluster)),
      end_(end_marker(cluster)),
      min_interval_ns_(std::uint64_t{min_interval_ms} * kNsPerMs) {}

std::string HostsFileWriter::begin_marker(const std::string& cluster) { return "# BEGIN gossipgw cluster " + cluster; }
std::string HostsFileWriter::end_marker(const std::string& cluster) { return "# END gossipgw cluster " + cluster; }

std::string HostsFileWriter::render(std::span<const engine::Member> members,
                                    const config::EventsConfig::HostsFile& config, const std::string& self,
                                    std::uint64_t* skipped) {
  HostsRenderStats stats;
  std::string out = render(members, config, self, stats);
  if (skipped != nullptr) *skipped += stats.skipped_members;
  return out;
}

std::string HostsFileWriter::render(std::span<const engine::Member> members,
                                    const config::EventsConfig::HostsFile& config, const std::string& self,
                                    HostsRenderStats& stats) {
  std::string key;
  std::string value;
  const std::size_t eq = config.tag.find('=');
  if (eq != std::string::npos) {
    key = config.tag.substr(0, eq);
    value = config.tag.substr(eq + 1);
  }
  std::vector<std::pair<std::string, std::string>> rows;  // (name, address)
  std::vector<std::array<std::string, 3>> alias_rows;    // (alias, member name, address)
  std::vector<std::string> names;
  for (const engine::Member& m : members) {
    // Suspect members stay listed: suspicion is often refuted within seconds,
    // and dropping them would make consumers flap on every slow probe.
    if (m.status != engine::MemberStatus::kAlive && m.status != engine::MemberStatus::kSuspect) continue;
    if (!config.include_self && m.name == self) continue;
    std::string addr = address_text(m.addr());
    names.clear();
    for (const config::EventsConfig::HostsAlias& a : config.aliases) alias_names(a, m, names, stats);
    if (!names.empty() && addr.empty()) {
      stats.skipped_aliases += names.size();
      names.clear();
    }
    for (std::string& n : names) alias_rows.push_back({std::move(n), m.name, addr});
    if (!config.tag.empty() && std::none_of(m.tags().begin(), m.tags().end(),
                                            [&](const engine::Tag& t) { return t.key == key && t.value == value; })) {
      continue;
    }
    if (addr.empty() || !hosts_name_ok(m.name)) {
      ++stats.skipped_members;
      continue;
    }
    rows.emplace_back(m.name, std::move(addr));
  }
  std::sort(rows.begin(), rows.end());
  std::string out = "# Written by gossipgw from cluster membership; do not edit.\n# Members ";
  out += config.tag.empty() ? std::string("(any tag)") : "with tag " + config.tag;
  out += ", alive or suspect";
  if (!config.include_self) out += ", this node excluded";
  out += ".\n";
  for (const auto& [name, addr] : rows) {
    out += addr;
    out += ' ';
    out += name;
    out += '\n';
  }
  if (!config.aliases.empty()) {
    out += "# Aliases from tags:";
    for (std::size_t i = 0; i < config.aliases.size(); ++i) {
      out += i == 0 ? " " : ", ";
      out += config.aliases[i].tag;
      out += " -> ";
      out += config.aliases[i].name;
    }
    out += ".\n";
    // Sorted by alias, then member name; one line per (alias, member) even
    // when two aliases entries give the same name.
    std::sort(alias_rows.begin(), alias_rows.end());
    alias_rows.erase(std::unique(alias_rows.begin(), alias_rows.end(),
                                 [](const auto& a, const auto& b) { return a[0] == b[0] && a[1] == b[1]; }),
                     alias_rows.end());
    for (const auto& r : alias_rows) {
      out += r[2];
      out += ' ';
      out += r[0];
      out += '\n';
    }
  }
  return out;
}

std::optional<std::string> HostsFileWriter::splice_block(std::string_view existing, const std::string& begin,
                                                         const std::string& end, std::string_view body,
                                                         std::string* error) {
  std::string why;
  const std::optional<BlockSpan> span = find_block(existing, begin, end, why);
  if (!why.empty()) {
    if (error != nullptr) *error = why;
    return std::nullopt;
  }
  std::string block = begin;
  block += '\n';
  block += body;
  if (!body.empty() && body.back() != '\n') block += '\n';
  block += end;
  block += '\n';
  std::string out;
  if (!span) {
    out.reserve(existing.size() + block.size() + 1);
    out.append(existing);
    if (!out.empty() && out.back() != '\n') out += '\n';
    out += block;
    return out;
  }
  out.reserve(existing.size() + block.size());
  out.append(existing.substr(0, span->begin));
  out += block;
  out.append(existing.substr(span->end));
  return out;
}

std::optional<std::string> HostsFileWriter::extract_block(std::string_view existing, const std::string& begin,
                                                          const std::string& end) {
  std::string why;
  const std::optional<BlockSpan> span = find_block(existing, begin, end, why);
  if (!span) return std::nullopt;
  return std::string(existing.substr(span->body, span->body_end - span->body));
}

std::optional<std::string> HostsFileWriter::current() const {
  std::optional<std::string> text = read_file(config_.path, kMaxExistingBytes);
  if (!config_.managed_block || !text) return text;
  return extract_block(*text, begin_, end_);
}

bool HostsFileWriter::update(std::span<const engine::Member> members, std::uint64_t now_ns) {
  HostsRenderStats stats;
  std::string content = render(members, config_, self_, stats);
  counters_.skipped_members += stats.skipped_members;
  skipped_aliases_ += stats.skipped_aliases;
  std::string refused;
  for (const std::string& r : stats.refused) refused += (refused.empty() ? "" : "; ") + r;
  if (refused != last_refused_) {
    // Logged when the set changes, not on every update: the values come from
    // the network and may be repeated by every event.
    if (!refused.empty()) {
      spdlog::warn("hosts file {}: {} alias name(s) refused (not a DNS name), e.g. {}", config_.path,
                   stats.skipped_aliases, refused);
    }
    last_refused_ = std::move(refused);
  }
  // First look: the file may already hold this (a restart); then leave it.
  if (!written_) written_ = current();
  if (written_ && *written_ == content) {
    ++counters_.unchanged;
    pending_.reset();  // a change that was reverted before it was written
    return false;
  }
  if (pending_ && *pending_ == content) return poll(now_ns);
  pending_ = std::move(content);
  if (now_ns < next_due_ns()) {
    ++counters_.deferred;
    return false;
  }
  return write_pending(now_ns);
}

bool HostsFileWriter::poll(std::uint64_t now_ns) {
  if (!pending_ || now_ns < next_due_ns()) return false;
  return write_pending(now_ns);
}

std::uint64_t HostsFileWriter::next_due_ns() const {
  if (!pending_) return UINT64_MAX;
  if (!last_attempt_ns_) return 0;
  return *last_attempt_ns_ + min_interval_ns_;
}

bool HostsFileWriter::write_pending(std::uint64_t now_ns) {
  last_attempt_ns_ = now_ns;
  const bool ok = config_.managed_block ? write_block(*pending_) : write_file(*pending_);
  if (!ok) {
    ++counters_.write_errors;
    return false;
  }
  ++counters_.writes;
  written_ = std::move(pending_);
  pending_.reset();
  return true;
}

namespace {

// Writes `content` to a temporary file next to `path` and renames it over
// `path`: readers see the old file or the new one, never a part (same file
// system, so rename is atomic), fsync'd before the rename, the directory
// fsync'd after it so the rename survives a crash. `mode` and, where we may,
// `owner` are the new file's.
bool replace_file(const std::string& path, const std::string& content, mode_t mode,
                  std::optional<std::pair<uid_t, gid_t>> owner) {
  const std::size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  std::string tmp = dir + (dir == "/" ? "." : "/.") + base + ".tmp.XXXXXX";
  const int fd = ::mkostemp(tmp.data(), O_CLOEXEC);
  if (fd < 0) {
    spdlog::warn("hosts file {}: cannot create a temporary file in {}: {}", path, dir, std::strerror(errno));
    return false;
  }
  const char* failed = nullptr;
  int error = 0;
  auto check = [&](bool ok, const char* what) {
    if (ok || failed != nullptr) return;
    failed = what;
    error = errno;
  };
  check(::fchmod(fd, mode) == 0, "chmod");  // mkostemp makes 0600
  // Keeping someone else's file's owner needs root; as the gossipgw user the
  // file becomes ours, with the same mode.
  if (owner && (owner->first != ::geteuid() || owner->second != ::getegid())) {
    const int rc = ::fchown(fd, owner->first, owner->second);
    (void)rc;
  }
  if (failed == nullptr) check(write_all(fd, content), "write");
  if (failed == nullptr) check(::fsync(fd) == 0, "fsync");
  check(::close(fd) == 0, "close");
  if (failed == nullptr) check(::rename(tmp.c_str(), path.c_str()) == 0, "rename");
  if (failed != nullptr) {
    spdlog::warn("hosts file {}: {} failed: {}{}", path, failed, std::strerror(error),
                 error == EBUSY ? " (the file is a mount point, e.g. a bind-mounted /etc/hosts: it cannot be "
                                  "replaced atomically; point the bind mount at a directory instead)"
                                : "");
    ::unlink(tmp.c_str());
    return false;
  }
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);  // best effort: some file systems refuse fsync on a directory
    ::close(dfd);
  }
  return true;
}

}  // namespace

bool HostsFileWriter::write_file(const std::string& content) {
  if (!replace_file(config_.path, content, 0644, std::nullopt)) return false;
  spdlog::info("hosts file {} updated ({} bytes)", config_.path, content.size());
  return true;
}

// The managed block: the file is read again now (others edit their lines),
// the block spliced in, and the whole file replaced atomically with the mode
// and owner it had. A symbolic link is followed, so the link stays a link.
bool HostsFileWriter::write_block(const std::string& body) {
  std::array<char, PATH_MAX> resolved{};
  if (::realpath(config_.path.c_str(), resolved.data()) == nullptr) {
    spdlog::warn("hosts file {}: {} (managed_block edits an existing file)", config_.path, std::strerror(errno));
    return false;
  }
  const std::string target(resolved.data());
  struct stat st {};
  if (::stat(target.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    spdlog::warn("hosts file {}: not a regular file", target);
    return false;
  }
  const std::optional<std::string> existing = read_file(target, kMaxExistingBytes);
  if (!existing) {
    spdlog::warn("hosts file {}: cannot read it: {}", target,
                 errno == EFBIG ? "larger than 16 MiB" : std::strerror(errno));
    return false;
  }
  std::string why;
  const std::optional<std::string> spliced = splice_block(*existing, begin_, end_, body, &why);
  if (!spliced) {
    // Never guess where someone else's lines end: leave the file alone.
    spdlog::warn("hosts file {}: managed block not updated: {}; fix the markers by hand", target, why);
    return false;
  }
  if (*spliced == *existing) return true;  // someone put exactly this there
  if (!replace_file(target, *spliced, st.st_mode & 07777, std::make_pair(st.st_uid, st.st_gid))) return false;
  spdlog::info("hosts file {}: managed block updated ({} bytes)", target, body.size());
  return true;
}

}  // namespace gw::cp::events
