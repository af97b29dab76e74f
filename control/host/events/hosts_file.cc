#include "control/host/events/hosts_file.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include "control/host/events/member_line.h"

namespace gw::cp::events {

namespace {

constexpr std::uint64_t kNsPerMs = 1'000'000;
// A hosts file larger than this is not ours to compare against; rewrite it.
constexpr std::size_t kMaxExistingBytes = 16u << 20;

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

std::optional<std::string> read_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string text;
  std::array<char, 65536> buf{};
  for (;;) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || text.size() > kMaxExistingBytes) break;
    text.append(buf.data(), static_cast<std::size_t>(n));
  }
  ::close(fd);
  return text;
}

}  // namespace

HostsFileWriter::HostsFileWriter(config::EventsConfig::HostsFile config, std::string self,
                                 std::uint32_t min_interval_ms)
    : config_(std::move(config)), self_(std::move(self)), min_interval_ns_(std::uint64_t{min_interval_ms} * kNsPerMs) {}

std::string HostsFileWriter::render(std::span<const engine::Member> members,
                                    const config::EventsConfig::HostsFile& config, const std::string& self,
                                    std::uint64_t* skipped) {
  std::string key;
  std::string value;
  const std::size_t eq = config.tag.find('=');
  if (eq != std::string::npos) {
    key = config.tag.substr(0, eq);
    value = config.tag.substr(eq + 1);
  }
  std::vector<std::pair<std::string, std::string>> rows;  // (name, address)
  for (const engine::Member& m : members) {
    // Suspect members stay listed: suspicion is often refuted within seconds,
    // and dropping them would make consumers flap on every slow probe.
    if (m.status != engine::MemberStatus::kAlive && m.status != engine::MemberStatus::kSuspect) continue;
    if (!config.include_self && m.name == self) continue;
    if (!config.tag.empty() && std::none_of(m.tags().begin(), m.tags().end(),
                                            [&](const engine::Tag& t) { return t.key == key && t.value == value; })) {
      continue;
    }
    std::string addr = address_text(m.addr());
    if (addr.empty() || !hosts_name_ok(m.name)) {
      if (skipped != nullptr) ++*skipped;
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
  return out;
}

bool HostsFileWriter::update(std::span<const engine::Member> members, std::uint64_t now_ns) {
  std::uint64_t skipped = 0;
  std::string content = render(members, config_, self_, &skipped);
  counters_.skipped_members += skipped;
  // First look: the file may already hold this (a restart); then leave it.
  if (!written_) written_ = read_file(config_.path);
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
  if (!write_file(*pending_)) {
    ++counters_.write_errors;
    return false;
  }
  ++counters_.writes;
  written_ = std::move(pending_);
  pending_.reset();
  return true;
}

// Readers see the old file or the new one, never a part: a temporary file in
// the same directory (same file system, so rename is atomic), fsync'd before
// the rename, the directory fsync'd after it so the rename survives a crash.
bool HostsFileWriter::write_file(const std::string& content) {
  const std::string& path = config_.path;
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
  check(::fchmod(fd, 0644) == 0, "chmod");  // mkostemp makes 0600
  if (failed == nullptr) check(write_all(fd, content), "write");
  if (failed == nullptr) check(::fsync(fd) == 0, "fsync");
  check(::close(fd) == 0, "close");
  if (failed == nullptr) check(::rename(tmp.c_str(), path.c_str()) == 0, "rename");
  if (failed != nullptr) {
    spdlog::warn("hosts file {}: {} failed: {}", path, failed, std::strerror(error));
    ::unlink(tmp.c_str());
    return false;
  }
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);  // best effort: some file systems refuse fsync on a directory
    ::close(dfd);
  }
  spdlog::info("hosts file {} updated ({} bytes)", path, content.size());
  return true;
}

}  // namespace gw::cp::events
