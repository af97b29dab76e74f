#include "control/gateway/process_stats.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <vector>

namespace gw::cp {

bool read_process_gauges(ProcessGauges& g, const std::string& proc_self) {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) == 0) g.max_fds = rl.rlim_cur == RLIM_INFINITY ? 0 : rl.rlim_cur;

  // One entry per open descriptor ("." and ".." aside; the directory's own
  // descriptor is counted out as well).
  if (DIR* d = ::opendir((proc_self + "/fd").c_str())) {
    std::uint64_t n = 0;
    while (const dirent* e = ::readdir(d)) {
      if (e->d_name[0] != '.') ++n;
    }
    ::closedir(d);
    g.open_fds = n > 0 ? n - 1 : 0;
  }

  std::ifstream in(proc_self + "/stat");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // The command name (field 2) is in parentheses and may hold spaces and
  // parentheses itself: the fields after it start past the last ')'.
  const std::size_t close = text.rfind(')');
  if (close == std::string::npos) return false;
  std::istringstream rest(text.substr(close + 1));
  std::vector<std::string> f;  // f[0] is field 3 (state)
  for (std::string word; rest >> word;) f.push_back(word);
  // Fields 14 utime, 15 stime (clock ticks), 23 vsize (bytes), 24 rss (pages).
  if (f.size() < 22) return false;
  const auto num = [&](std::size_t field) { return std::strtoull(f[field - 3].c_str(), nullptr, 10); };
  const long ticks = ::sysconf(_SC_CLK_TCK);
  const long page = ::sysconf(_SC_PAGESIZE);
  if (ticks > 0) g.cpu_us = (num(14) + num(15)) * 1'000'000ULL / static_cast<std::uint64_t>(ticks);
  g.virtual_memory_bytes = num(23);
  if (page > 0) g.resident_memory_bytes = num(24) * static_cast<std::uint64_t>(page);
  return true;
}

}  // namespace gw::cp
