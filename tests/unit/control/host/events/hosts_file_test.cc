// HostsFileWriter: content, atomic replacement, change detection and rate
// limiting on an injected clock. No threads, no sleeps.
#include "control/host/events/hosts_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <random>
#include <string>
#include <vector>

#include "config/dns_name.h"

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


// ---- issue 52 item 4: aliases from tags --------------------------------------

config::EventsConfig::HostsAlias alias(std::string tag, std::string name) {
  config::EventsConfig::HostsAlias a;
  a.tag = std::move(tag);
  a.name = std::move(name);
  return a;
}

// The "ADDRESS NAME" lines after the "# Aliases" comment.
std::vector<std::string> alias_lines(const std::string& text) {
  std::vector<std::string> out;
  const std::size_t at = text.find("# Aliases from tags:");
  if (at == std::string::npos) return out;
  std::size_t line = text.find('\n', at) + 1;
  while (line < text.size()) {
    const std::size_t nl = text.find('\n', line);
    out.push_back(text.substr(line, nl - line));
    line = nl + 1;
  }
  return out;
}

TEST(HostsFileAliases, AFixedTagGivesOneNameForEveryLiveMemberWithIt) {
  // protokube's job: every master under api.internal.<cluster>.
  const std::vector<engine::Tag> master = {{"role", "master"}};
  const std::vector<engine::Member> members = {
      member("m-1", v4(10, 0, 0, 1, 7946), MemberStatus::kAlive, master),  // ourselves
      member("m-3", v4(10, 0, 0, 3, 7946), MemberStatus::kSuspect, {{"zone", "b"}, {"role", "master"}}),
      member("m-2", v6_last(2), MemberStatus::kAlive, master),
      member("m-4", v4(10, 0, 0, 4, 7946), MemberStatus::kDead, master),
      member("m-5", v4(10, 0, 0, 5, 7946), MemberStatus::kLeft, master),
      member("w-1", v4(10, 0, 1, 1, 7946), MemberStatus::kAlive, {{"role", "worker"}}),
      member("m-6", engine::Address{}, MemberStatus::kAlive, master),
  };
  config::EventsConfig::HostsFile c = hosts_config("/x");
  c.tag = "role=worker";  // the member list and the aliases are independent
  c.aliases = {alias("role=master", "api.internal.prod")};
  HostsRenderStats stats;
  const std::string text = HostsFileWriter::render(members, c, "m-1", stats);
  EXPECT_EQ(text,
            "# Written by gossipgw from cluster membership; do not edit.\n"
            "# Members with tag role=worker, alive or suspect.\n"
            "10.0.1.1 w-1\n"
            "# Aliases from tags: role=master -> api.internal.prod.\n"
            "10.0.0.1 api.internal.prod\n"
            "fd00::2 api.internal.prod\n"
            "10.0.0.3 api.internal.prod\n");
  EXPECT_EQ(stats.skipped_aliases, 1u);  // m-6: no address
  EXPECT_EQ(stats.skipped_members, 0u);

  // include_self: false leaves this node out of the aliases too.
  c.include_self = false;
  EXPECT_EQ(alias_lines(HostsFileWriter::render(members, c, "m-1")),
            (std::vector<std::string>{"fd00::2 api.internal.prod", "10.0.0.3 api.internal.prod"}));

  // Two aliases naming the same thing for one member give one line.
  c.include_self = true;
  c.aliases = {alias("role=master", "api.internal.prod"), alias("zone=b", "api.internal.prod"),
               alias("zone=b", "zone-b.prod")};
  EXPECT_EQ(alias_lines(HostsFileWriter::render(members, c, "m-1")),
            (std::vector<std::string>{"10.0.0.1 api.internal.prod", "fd00::2 api.internal.prod",
                                      "10.0.0.3 api.internal.prod", "10.0.0.3 zone-b.prod"}));
}

TEST(HostsFileAliases, AKeyAloneGivesOneNamePerValueAndRefusesValuesThatAreNotLabels) {
  std::vector<engine::Member> members;
  const std::vector<std::string> values = {
      "master", "Etcd",  "ingress-1",          "",     "bad value", "a.b",    "-edge",         "edge-",
      "x_y",    "\xff",  "ok\nforged.example", "a\tb", "#c",        "%41",    std::string(64, 'x'),
      std::string(63, 'y'), std::string("nul\0byte", 8)};
  for (std::size_t i = 0; i < values.size(); ++i) {
    members.push_back(member("n-" + std::to_string(i), v4(10, 0, 2, static_cast<std::uint8_t>(i), 7946),
                             MemberStatus::kAlive, {{"role", values[i]}}));
  }
  config::EventsConfig::HostsFile c = hosts_config("/x");
  c.aliases = {alias("role", "{value}.role.prod")};
  HostsRenderStats stats;
  const std::string text = HostsFileWriter::render(members, c, "n-0", stats);
  EXPECT_EQ(alias_lines(text),
            (std::vector<std::string>{"10.0.2.1 etcd.role.prod", "10.0.2.2 ingress-1.role.prod",
                                      "10.0.2.0 master.role.prod",
                                      "10.0.2.15 " + std::string(63, 'y') + ".role.prod"}));
  EXPECT_EQ(stats.skipped_aliases, values.size() - 4);
  ASSERT_EQ(stats.refused.size(), HostsFileWriter::kMaxRefusedShown);
  EXPECT_EQ(stats.refused[0], "role= (an empty label)");
  // Shown escaped: a value from the network cannot forge log lines either.
  EXPECT_NE(stats.refused[1].find("role=bad%20value (byte 0x20 at byte 3"), std::string::npos) << stats.refused[1];
  // Nothing a member sent can add a line or a column.
  EXPECT_EQ(text.find("forged.example"), std::string::npos);
  for (const std::string& line : alias_lines(text)) {
    EXPECT_EQ(std::count(line.begin(), line.end(), ' '), 1) << line;
  }

  // A name that the value makes longer than 253 bytes is refused too.
  c.aliases = {alias("role", "{value}." + std::string(63, 'a') + "." + std::string(63, 'b') + "." +
                                 std::string(63, 'c'))};  // 192 + 63 = 255 with a 63-byte value
  HostsRenderStats long_stats;
  EXPECT_EQ(alias_lines(HostsFileWriter::render(members, c, "n-0", long_stats)).size(), 3u);  // 63 y's: 255
  const std::vector<engine::Member> longest = {members[15]};
  HostsRenderStats one;
  EXPECT_TRUE(alias_lines(HostsFileWriter::render(longest, c, "n-0", one)).empty());
  ASSERT_EQ(one.refused.size(), 1u);
  EXPECT_NE(one.refused[0].find("255 bytes (at most 253)"), std::string::npos) << one.refused[0];
}

TEST(HostsFileAliases, TheWriterCountsRefusedAliases) {
  TempDir dir;
  config::EventsConfig::HostsFile c = hosts_config(dir / "h");
  c.aliases = {alias("role", "{value}.r.prod")};
  const std::vector<engine::Member> members = {
      member("a", v4(10, 0, 0, 1, 7946), MemberStatus::kAlive, {{"role", "db"}}),
      member("b", v4(10, 0, 0, 2, 7946), MemberStatus::kAlive, {{"role", "not a label"}}),
      member("c", engine::Address{}, MemberStatus::kAlive, {{"role", "db"}})};
  HostsFileWriter w(c, "a", 0);
  EXPECT_TRUE(w.update(members, 0));
  EXPECT_EQ(w.skipped_aliases(), 2u);  // b's value, c's missing address
  EXPECT_NE(test::read_file(dir / "h").find("\n10.0.0.1 db.r.prod\n"), std::string::npos);
  EXPECT_FALSE(w.update(members, 1));
  EXPECT_EQ(w.skipped_aliases(), 4u);  // per update, like skipped_members
}

// Fuzz-like: random tag values (every byte value, dots, dashes, long and
// empty ones) from a seeded generator. Whatever arrives, every alias line is
// "ADDRESS DNS-NAME", and every member with the key is either listed or
// counted as skipped.
TEST(HostsFileAliases, RandomTagValuesNeverBreakTheFile) {
  std::mt19937_64 rng(52);
  const std::string alphabet = std::string("abcXYZ019-._ \t\n\r#=,%\\") + std::string("\0\x7f\x80\xff", 4);
  std::uniform_int_distribution<int> pick(0, 255);
  for (int round = 0; round < 50; ++round) {
    std::vector<engine::Member> members;
    std::size_t with_key = 0;
    for (int i = 0; i < 200; ++i) {
      std::string value;
      const int len = pick(rng) % 5 == 0 ? pick(rng) % 80 : pick(rng) % 12;
      for (int k = 0; k < len; ++k) {
        value += pick(rng) % 4 == 0 ? static_cast<char>(pick(rng)) : alphabet[pick(rng) % alphabet.size()];
      }
      std::vector<engine::Tag> tags;
      if (pick(rng) % 8 != 0) {
        tags.push_back({"role", value});
        ++with_key;
      }
      members.push_back(member("n-" + std::to_string(i), v4(10, 1, static_cast<std::uint8_t>(i / 250),
                                                               static_cast<std::uint8_t>(i % 250), 7946),
                               MemberStatus::kAlive, tags));
    }
    config::EventsConfig::HostsFile c = hosts_config("/x");
    c.tag.clear();
    c.aliases = {alias("role", "{value}.r.test"), alias("role=abc", "abc-fixed.test")};
    HostsRenderStats stats;
    const std::string text = HostsFileWriter::render(members, c, "n-0", stats);
    std::size_t per_value_lines = 0;
    for (const std::string& line : alias_lines(text)) {
      const std::size_t sp = line.find(' ');
      ASSERT_NE(sp, std::string::npos) << line;
      const std::string name = line.substr(sp + 1);
      EXPECT_EQ(config::dns_name_problem(name), "") << name;
      EXPECT_EQ(name, config::lower_ascii(name));
      if (name != "abc-fixed.test") ++per_value_lines;
    }
    EXPECT_EQ(per_value_lines + stats.skipped_aliases, with_key) << "round " << round;
    // Every line of the file is a comment or "ADDRESS NAME".
    std::size_t start = 0;
    while (start < text.size()) {
      const std::size_t nl = text.find('\n', start);
      ASSERT_NE(nl, std::string::npos);
      const std::string line = text.substr(start, nl - start);
      if (line[0] != '#') {
        EXPECT_EQ(std::count(line.begin(), line.end(), ' '), 1) << line;
      }
      start = nl + 1;
    }
  }
}

// ---- issue 52 item 4: a managed block inside an existing file ----------------

const std::string kBegin = HostsFileWriter::begin_marker("prod");
const std::string kEnd = HostsFileWriter::end_marker("prod");

TEST(HostsFileBlock, SpliceAppendsReplacesAndKeepsEveryOtherByte) {
  std::string err;
  EXPECT_EQ(kBegin, "# BEGIN gossipgw cluster prod");
  EXPECT_EQ(kEnd, "# END gossipgw cluster prod");
  // Appended when there is none; a missing final newline is added first.
  EXPECT_EQ(HostsFileWriter::splice_block("127.0.0.1 localhost\n", kBegin, kEnd, "10.0.0.1 a\n", &err),
            "127.0.0.1 localhost\n" + kBegin + "\n10.0.0.1 a\n" + kEnd + "\n");
  EXPECT_EQ(HostsFileWriter::splice_block("127.0.0.1 localhost", kBegin, kEnd, "10.0.0.1 a\n", &err),
            "127.0.0.1 localhost\n" + kBegin + "\n10.0.0.1 a\n" + kEnd + "\n");
  EXPECT_EQ(HostsFileWriter::splice_block("", kBegin, kEnd, "", &err), kBegin + "\n" + kEnd + "\n");

  // Replaced in place; what is before and after stays byte for byte (CRLF,
  // tabs, comments, no final newline). Marker lines match with trailing blanks
  // and CR.
  const std::string before = "127.0.0.1\tlocalhost\r\n# keep me\n\n";
  const std::string after = "::1 ip6-localhost\n10.9.9.9 other # comment";
  const std::string old_block = kBegin + "  \r\n10.0.0.1 a\n10.0.0.2 b\n" + kEnd + "\t\n";
  EXPECT_EQ(HostsFileWriter::splice_block(before + old_block + after, kBegin, kEnd, "10.0.0.3 c\n", &err),
            before + kBegin + "\n10.0.0.3 c\n" + kEnd + "\n" + after);
  EXPECT_EQ(HostsFileWriter::extract_block(before + old_block + after, kBegin, kEnd), "10.0.0.1 a\n10.0.0.2 b\n");
  // Another cluster's block is someone else's lines.
  const std::string other = HostsFileWriter::begin_marker("dev") + "\n1.1.1.1 x\n" +
                            HostsFileWriter::end_marker("dev") + "\n";
  EXPECT_EQ(HostsFileWriter::splice_block(other, kBegin, kEnd, "2.2.2.2 y\n", &err),
            other + kBegin + "\n2.2.2.2 y\n" + kEnd + "\n");
  // A marker-like line that is not exactly ours is not a marker.
  EXPECT_EQ(HostsFileWriter::extract_block(kBegin + "x\n" + kEnd + "\n", kBegin, kEnd), std::nullopt);
}

TEST(HostsFileBlock, MalformedMarkersAreRefusedNeverGuessed) {
  const struct {
    std::string text;
    std::string why;
  } cases[] = {
      {"a\n" + kBegin + "\nb\n", "(line 2) has no " + kEnd},
      {kEnd + "\n" + kBegin + "\n" + kEnd + "\n", "before any"},
      {kBegin + "\n" + kBegin + "\n" + kEnd + "\n", "a second " + kBegin + " line (line 2)"},
      {kBegin + "\n" + kEnd + "\n" + kEnd + "\n", "a second " + kEnd + " line (line 3)"},
      {kBegin + "\n" + kEnd + "\n" + kBegin + "\n" + kEnd + "\n", "a second " + kBegin},
  };
  for (const auto& c : cases) {
    std::string err;
    EXPECT_EQ(HostsFileWriter::splice_block(c.text, kBegin, kEnd, "x\n", &err), std::nullopt) << c.text;
    EXPECT_NE(err.find(c.why), std::string::npos) << err;
    EXPECT_EQ(HostsFileWriter::extract_block(c.text, kBegin, kEnd), std::nullopt);
  }
}

config::EventsConfig::HostsFile block_config(const std::string& path) {
  config::EventsConfig::HostsFile c = hosts_config(path);
  c.managed_block = true;
  c.aliases = {alias("role=control-plane", "api.internal.prod")};
  return c;
}

TEST(HostsFileBlock, WritesTheBlockAtomicallyKeepingModeAndTheOtherLines) {
  TempDir dir;
  const std::string path = dir / "hosts";
  const std::string mine = "127.0.0.1 localhost\n# operator's line\n10.9.9.9 db\n";
  test::write_file(path, mine, 0640);
  const struct stat before = stat_of(path);
  HostsFileWriter w(block_config(path), "gw-1", 1000, "prod");
  EXPECT_TRUE(w.update(cluster(), 0));
  const std::string body = HostsFileWriter::render(cluster(), block_config(path), "gw-1");
  EXPECT_NE(body.find("10.0.0.3 api.internal.prod\n"), std::string::npos) << body;
  EXPECT_EQ(test::read_file(path), mine + kBegin + "\n" + body + kEnd + "\n");
  const struct stat first = stat_of(path);
  EXPECT_EQ(first.st_mode & 07777, 0640u);  // the file's own mode, not 0644
  EXPECT_EQ(first.st_uid, before.st_uid);
  EXPECT_NE(first.st_ino, before.st_ino);  // replaced by rename
  EXPECT_EQ(test::list(dir.path()), std::vector<std::string>{"hosts"});

  // Someone edits their own lines; the next change keeps their edit.
  std::string edited = test::read_file(path);
  edited.insert(0, "10.8.8.8 added-later\n");
  test::write_file(path, edited, 0640);
  std::vector<engine::Member> members = cluster();
  members[2].status = MemberStatus::kDead;  // gw-2
  EXPECT_TRUE(w.update(members, 5000 * kMs));
  const std::string body2 = HostsFileWriter::render(members, block_config(path), "gw-1");
  EXPECT_EQ(test::read_file(path), "10.8.8.8 added-later\n" + mine + kBegin + "\n" + body2 + kEnd + "\n");
  EXPECT_EQ(w.counters().writes, 2u);

  // No change: no write. A restarted gateway finds its block in place.
  EXPECT_FALSE(w.update(members, 10'000 * kMs));
  HostsFileWriter again(block_config(path), "gw-1", 1000, "prod");
  const ino_t ino = stat_of(path).st_ino;
  EXPECT_FALSE(again.update(members, 0));
  EXPECT_EQ(again.counters().unchanged, 1u);
  EXPECT_EQ(stat_of(path).st_ino, ino);
}

TEST(HostsFileBlock, BrokenMarkersOrAMissingFileAreWriteErrorsAndTouchNothing) {
  TempDir dir;
  const std::string path = dir / "hosts";
  const std::string broken = "127.0.0.1 localhost\n" + kBegin + "\n10.0.0.1 gw-1\n";  // no END
  test::write_file(path, broken, 0644);
  HostsFileWriter w(block_config(path), "gw-1", 1000, "prod");
  EXPECT_FALSE(w.update(cluster(), 0));
  EXPECT_EQ(w.counters().write_errors, 1u);
  EXPECT_EQ(test::read_file(path), broken);
  EXPECT_EQ(test::list(dir.path()), std::vector<std::string>{"hosts"});
  // Fixed by hand: the retry (once the interval passed) writes.
  test::write_file(path, broken + kEnd + "\n", 0644);
  EXPECT_TRUE(w.poll(1000 * kMs));
  EXPECT_NE(test::read_file(path).find("10.0.0.3 gw-3\n"), std::string::npos);

  HostsFileWriter missing(block_config(dir / "nope"), "gw-1", 1000, "prod");
  EXPECT_FALSE(missing.update(cluster(), 0));
  EXPECT_EQ(missing.counters().write_errors, 1u);
  EXPECT_FALSE(test::exists(dir / "nope"));  // a block never creates the file
}

TEST(HostsFileBlock, ASymbolicLinkStaysALink) {
  TempDir dir;
  const std::string target = dir / "real-hosts";
  test::write_file(target, "127.0.0.1 localhost\n", 0644);
  const std::string link = dir / "hosts";
  ASSERT_EQ(::symlink("real-hosts", link.c_str()), 0);
  HostsFileWriter w(block_config(link), "gw-1", 1000, "prod");
  EXPECT_TRUE(w.update(cluster(), 0));
  struct stat st {};
  ASSERT_EQ(::lstat(link.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  EXPECT_NE(test::read_file(target).find(kBegin + "\n"), std::string::npos);
}

}  // namespace
}  // namespace gw::cp::events
