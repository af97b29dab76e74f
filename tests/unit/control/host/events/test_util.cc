#include "tests/unit/control/host/events/test_util.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace gw::cp::events::test {

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/gw-events-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

void write_file(const std::string& path, const std::string& content, unsigned mode) {
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << content;
    if (!out) throw std::runtime_error("cannot write " + path);
  }
  ::chmod(path.c_str(), static_cast<mode_t>(mode));
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

std::vector<std::string> list(const std::string& dir, const std::string& prefix) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(prefix, 0) == 0) out.push_back(name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool wait_for_dir(const std::string& dir, const std::function<bool()>& pred, std::chrono::milliseconds limit) {
  const int fd = ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  if (fd < 0) throw std::runtime_error("inotify_init1 failed");
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  if (::inotify_add_watch(fd, dir.c_str(),
                          IN_CREATE | IN_OPEN | IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_TO | IN_DELETE | IN_ATTRIB) < 0) {
    throw std::runtime_error("inotify_add_watch failed on " + dir);
  }
  // Watching before the first check: a change after it wakes the poll below.
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!pred()) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return pred();
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count()) + 1) > 0) {
      alignas(inotify_event) char buf[4096];
      while (::read(fd, buf, sizeof buf) > 0) {
      }
    }
  }
  return true;
}

bool wait_for_exit(int pid, std::chrono::milliseconds limit) {
  const int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (fd < 0) {
    if (errno == ESRCH) return true;  // already gone
    throw std::runtime_error("pidfd_open failed");
  }
  pollfd p{fd, POLLIN, 0};  // readable once the process has exited
  const int n = ::poll(&p, 1, static_cast<int>(limit.count()));
  ::close(fd);
  return n > 0;
}

engine::Address v4(std::uint8_t a, std::uint8_t b, std::uint8_t c, std::uint8_t d, std::uint16_t port) {
  engine::Address addr;
  addr.ip = {a, b, c, d};
  addr.port = port;
  return addr;
}

engine::Member member(const std::string& name, engine::Address addr, engine::MemberStatus status,
                      std::vector<engine::Tag> tags, std::uint64_t incarnation) {
  engine::Member m;
  m.name = name;
  m.set_profile(addr, tags, 0);
  m.status = status;
  m.incarnation = incarnation;
  return m;
}

}  // namespace gw::cp::events::test
