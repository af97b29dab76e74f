// Helpers for the events tests: a temporary directory, files, condition waits.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "control/engine/member_table.h"

namespace gw::cp::events::test {

// mkdtemp under $TMPDIR (or /tmp); removed with everything in it.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

void write_file(const std::string& path, const std::string& content, unsigned mode = 0644);
// "" when missing.
std::string read_file(const std::string& path);
bool exists(const std::string& path);
// Names in `dir` starting with `prefix`, sorted.
std::vector<std::string> list(const std::string& dir, const std::string& prefix = "");

// How long a test waits for real processes on a shared, loaded machine: a
// bound, not a guess (every wait below returns as soon as its condition holds).
inline constexpr std::chrono::milliseconds kWaitLimit{30000};

// Blocks until `pred` holds or `limit` passes, checking it again whenever a
// file in `dir` is created, opened, written, renamed or removed (inotify):
// the handlers under test signal progress only through files. True if it held.
bool wait_for_dir(const std::string& dir, const std::function<bool()>& pred,
                  std::chrono::milliseconds limit = kWaitLimit);

// Blocks until process `pid` (not necessarily our child) has exited, or
// `limit` passes (pidfd). True if it has exited.
bool wait_for_exit(int pid, std::chrono::milliseconds limit = kWaitLimit);

engine::Address v4(std::uint8_t a, std::uint8_t b, std::uint8_t c, std::uint8_t d, std::uint16_t port);
engine::Member member(const std::string& name, engine::Address addr, engine::MemberStatus status,
                      std::vector<engine::Tag> tags, std::uint64_t incarnation = 1);

}  // namespace gw::cp::events::test
