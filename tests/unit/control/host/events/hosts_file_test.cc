// HostsFileWriter: content, atomic replacement, change detection and rate
// limiting on an injected clock. No threads, no sleeps.
#include "control/host/events/hosts_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <string>
#include <vector>

#include "tests/unit/control/host/events/test_util.h"

namespace gw::cp::events {
namespace {

using engine::MemberStatus;
using test::member;
using test::TempDir;
using test::v4;

constexpr std::uint64_t kMs = 1'000'000;
const std::vector<engine::Tag> kCp = {{"role", "control-plane"}};

engine::Address v6_last(std::uint8_t last) {
  engine::Address a;
  a.ip = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, last};
  a.port = 7946;
  return a;
}

std::vector<engine::Member> cluster() {
  return {
      member("gw-1", v4(10, 0, 0, 1, 7946), MemberStatus::kAlive, kCp),  // ourselves
      member("gw-3", v4(10, 0, 0, 3, 7946), MemberStatus::kSuspect, {{"zone", "a"}, {"role", "control-plane"}}),
      member("gw-2", v6_last(2), MemberStatus::kAlive, kCp),
      member("gw-4", v4(10, 0, 0, 4, 7946), MemberStatus::kDead, kCp),
      member("gw-5", v4(10, 0, 0, 5, 7946), MemberStatus::kLeft, kCp),
      member("gw-6", v4(10, 0, 0, 6, 7946), MemberStatus::kAlive, {{"role", "worker"}}),
      member("gw-7", v4(10, 0, 0, 7, 7946), MemberStatus::kAlive, {}),
      member("bad name", v4(10, 0, 0, 8, 7946), MemberStatus::kAlive, kCp),
      member("gw-9", engine::Address{}, MemberStatus::kAlive, kCp),
  };
}

config::EventsConfig::HostsFile hosts_config(const std::string& path, bool include_self = true) {
  config::EventsConfig::HostsFile c;
  c.path = path;
  c.tag = "role=control-plane";
  c.include_self = include_self;
  return c;
}

const std::string kHeader =
    "# Written by gossipgw from cluster membership; do not edit.\n"
    "# Members with tag role=control-plane, alive or suspect.\n";

struct stat stat_of(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st;
}

TEST(HostsFile, RendersAliveAndSuspectMembersWithTheTagSortedByName) {
  std::uint64_t skipped = 0;
  const std::vector<engine::Member> members = cluster();
  EXPECT_EQ(HostsFileWriter::render(members, hosts_config("/x"), "gw-1", &skipped),
            kHeader + "10.0.0.1 gw-1\nfd00::2 gw-2\n10.0.0.3 gw-3\n");
  EXPECT_EQ(skipped, 2u);  // "bad name" (space) and gw-9 (no address)

  EXPECT_EQ(HostsFileWriter::render(members, hosts_config("/x", false), "gw-1"),
            "# Written by gossipgw from cluster membership; do not edit.\n"
            "# Members with tag role=control-plane, alive or suspect, this node excluded.\n"
            "fd00::2 gw-2\n10.0.0.3 gw-3\n");

  config::EventsConfig::HostsFile any = hosts_config("/x");
  any.tag.clear();
  EXPECT_EQ(HostsFileWriter::render(members, any, "gw-1"),
            "# Written by gossipgw from cluster membership; do not edit.\n"
            "# Members (any tag), alive or suspect.\n"
            "10.0.0.1 gw-1\nfd00::2 gw-2\n10.0.0.3 gw-3\n10.0.0.6 gw-6\n10.0.0.7 gw-7\n");

  // A value with '=' in it: the tag splits at the first '='.
  config::EventsConfig::HostsFile eq = hosts_config("/x");
  eq.tag = "k=a=b";
  const std::vector<engine::Member> one = {member("m", v4(1, 2, 3, 4, 1), MemberStatus::kAlive, {{"k", "a=b"}})};
  const std::string text = HostsFileWriter::render(one, eq, "gw-1");
  EXPECT_EQ(text.substr(text.find('\n', text.find("k=a=b"))), "\n1.2.3.4 m\n") << text;

  // The order of the input does not matter.
  std::vector<engine::Member> reversed(members.rbegin(), members.rend());
  EXPECT_EQ(HostsFileWriter::render(reversed, hosts_config("/x"), "gw-1"),
            HostsFileWriter::render(members, hosts_config("/x"), "gw-1"));
}

TEST(HostsFile, WritesAtomicallyWithMode0644AndLeavesNoTemporaryFiles) {
  TempDir dir;
  const std::string path = dir / "cp.hosts";
  const mode_t old_umask = ::umask(077);  // the file must still be world-readable
  HostsFileWriter w(hosts_config(path), "gw-1", 1000);
  EXPECT_TRUE(w.update(cluster(), 0));
  ::umask(old_umask);
  EXPECT_EQ(test::read_file(path), kHeader + "10.0.0.1 gw-1\nfd00::2 gw-2\n10.0.0.3 gw-3\n");
  const struct stat first = stat_of(path);
  EXPECT_EQ(first.st_mode & 07777, 0644u);
  EXPECT_EQ(test::list(dir.path()), std::vector<std::string>{"cp.hosts"});
  EXPECT_EQ(w.counters().writes, 1u);

  // A change replaces the file by rename: a new inode, never the old one
  // rewritten in place (a reader holding the old one sees it whole).
  std::vector<engine::Member> members = cluster();
  members[2].status = MemberStatus::kDead;  // gw-2
  EXPECT_TRUE(w.update(members, 5000 * kMs));
  EXPECT_EQ(test::read_file(path), kHeader + "10.0.0.1 gw-1\n10.0.0.3 gw-3\n");
  EXPECT_NE(stat_of(path).st_ino, first.st_ino);
  EXPECT_EQ(test::list(dir.path()), std::vector<std::string>{"cp.hosts"});
  EXPECT_EQ(w.counters().writes, 2u);
}

TEST(HostsFile, UnchangedContentIsNotRewritten) {
  TempDir dir;
  const std::string path = dir / "cp.hosts";
  HostsFileWriter w(hosts_config(path), "gw-1", 1000);
  EXPECT_TRUE(w.update(cluster(), 0));
  const struct stat before = stat_of(path);
  std::vector<engine::Member> members = cluster();
  // Changes the file does not show: a new incarnation, a member without the tag.
  members[0].incarnation = 9;
  members[5].status = MemberStatus::kDead;
  EXPECT_FALSE(w.update(members, 10'000 * kMs));
  EXPECT_FALSE(w.poll(20'000 * kMs));
  const struct stat after = stat_of(path);
  EXPECT_EQ(after.st_ino, before.st_ino);
  EXPECT_EQ(after.st_mtim.tv_sec, before.st_mtim.tv_sec);
  EXPECT_EQ(after.st_mtim.tv_nsec, before.st_mtim.tv_nsec);
  EXPECT_EQ(w.counters().writes, 1u);
  EXPECT_EQ(w.counters().unchanged, 1u);
  EXPECT_FALSE(w.pending());

  // A restarted gateway finds the same content in place and leaves it.
  HostsFileWriter again(hosts_config(path), "gw-1", 1000);
  EXPECT_FALSE(again.update(cluster(), 0));
  EXPECT_EQ(stat_of(path).st_ino, before.st_ino);
  EXPECT_EQ(again.counters().writes, 0u);
  EXPECT_EQ(again.counters().unchanged, 1u);
}

TEST(HostsFile, RateLimitedButTheLastChangeIsAlwaysWritten) {
  TempDir dir;
  const std::string path = dir / "cp.hosts";
  HostsFileWriter w(hosts_config(path), "gw-1", 1000);
  std::vector<engine::Member> members = cluster();
  EXPECT_TRUE(w.update(members, 0));  // the first write is never held back
  const std::string v1 = test::read_file(path);

  members[2].status = MemberStatus::kLeft;  // gw-2 goes
  EXPECT_FALSE(w.update(members, 100 * kMs));
  EXPECT_TRUE(w.pending());
  EXPECT_EQ(w.next_due_ns(), 1000 * kMs);
  EXPECT_EQ(test::read_file(path), v1);
  EXPECT_FALSE(w.poll(999 * kMs));
  EXPECT_EQ(test::read_file(path), v1);
  EXPECT_TRUE(w.poll(1000 * kMs));
  EXPECT_EQ(test::read_file(path), kHeader + "10.0.0.1 gw-1\n10.0.0.3 gw-3\n");
  EXPECT_FALSE(w.pending());
  EXPECT_EQ(w.next_due_ns(), UINT64_MAX);

  // Two changes inside one interval: only the later one is written, at the end
  // of the interval.
  members[6].set_profile(members[6].addr(), kCp, 0);  // gw-7 gains the tag
  EXPECT_FALSE(w.update(members, 1200 * kMs));
  members[1].status = MemberStatus::kDead;  // gw-3 fails
  EXPECT_FALSE(w.update(members, 1500 * kMs));
  EXPECT_FALSE(w.poll(1999 * kMs));
  EXPECT_TRUE(w.poll(2000 * kMs));
  EXPECT_EQ(test::read_file(path), kHeader + "10.0.0.1 gw-1\n10.0.0.7 gw-7\n");
  EXPECT_FALSE(w.poll(5000 * kMs));
  EXPECT_EQ(w.counters().writes, 3u);
  EXPECT_EQ(w.counters().deferred, 3u);

  // A change reverted before it was due is never written.
  std::vector<engine::Member> changed = members;
  changed[0].status = MemberStatus::kLeft;
  EXPECT_FALSE(w.update(changed, 2100 * kMs));
  EXPECT_TRUE(w.pending());
  EXPECT_FALSE(w.update(members, 2200 * kMs));
  EXPECT_FALSE(w.pending());
  EXPECT_FALSE(w.poll(10'000 * kMs));
  EXPECT_EQ(w.counters().writes, 3u);
}

TEST(HostsFile, ZeroIntervalWritesEveryChangeAtOnce) {
  TempDir dir;
  HostsFileWriter w(hosts_config(dir / "h"), "gw-1", 0);
  std::vector<engine::Member> members = cluster();
  EXPECT_TRUE(w.update(members, 0));
  members[1].status = MemberStatus::kDead;
  EXPECT_TRUE(w.update(members, 0));
  EXPECT_EQ(w.counters().writes, 2u);
}

TEST(HostsFile, AFailedWriteIsCountedAndRetried) {
  TempDir dir;
  const std::string sub = dir / "missing";
  const std::string path = sub + "/cp.hosts";
  HostsFileWriter w(hosts_config(path), "gw-1", 1000);
  EXPECT_FALSE(w.update(cluster(), 0));
  EXPECT_EQ(w.counters().write_errors, 1u);
  EXPECT_TRUE(w.pending());
  ASSERT_EQ(::mkdir(sub.c_str(), 0755), 0);
  EXPECT_FALSE(w.poll(500 * kMs));  // retries keep to the interval too
  EXPECT_TRUE(w.poll(1000 * kMs));
  EXPECT_EQ(test::read_file(path), kHeader + "10.0.0.1 gw-1\nfd00::2 gw-2\n10.0.0.3 gw-3\n");
  EXPECT_EQ(test::list(sub), std::vector<std::string>{"cp.hosts"});
}

}  // namespace
}  // namespace gw::cp::events
