// control/host/key_change.h: the cluster key-change protocol on its own, with
// a real engine for the membership, a fake send and times passed in (no
// EngineHost, no sealing, no sleeps).
#include "control/host/key_change.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "control/codec.h"
#include "control/host/key_ops.h"
#include "crypto/keys.h"
#include "crypto/operator_key.h"

namespace gw::cp {
namespace {

using engine::Address;

constexpr std::uint64_t kSecondNs = 1'000'000'000ULL;
constexpr std::uint64_t kNowNs = 1000 * kSecondNs;                 // monotonic
constexpr std::uint64_t kStartUnixNs = 1'800'000'000 * kSecondNs;  // wall clock when this node started
constexpr std::uint32_t kUnixS = 1'800'000'010;                    // wall clock now

constexpr std::uint64_t kClusterId = 0xC1C1C1C1C1C1C1C1ULL;

Address addr(std::uint8_t i) { return Address{{10, 0, 0, i}, 7946}; }

crypto::KeyBytes key_bytes(std::uint8_t fill) {
  crypto::KeyBytes k{};
  k.fill(fill);
  return k;
}

// The operator's signing key (its seed), and another one nobody configured.
const crypto::OperatorSigner& op_key() {
  static const crypto::OperatorSigner s(key_bytes(0xA5));
  return s;
}
const crypto::OperatorSigner& other_key() {
  static const crypto::OperatorSigner s(key_bytes(0x5A));
  return s;
}

ClusterKeyChange::Authorisation sign(const KeyChange& change, std::uint64_t issued,
                                     const crypto::OperatorSigner& by = op_key(), std::uint64_t cluster = kClusterId) {
  return {issued, by.sign(key_command_statement(cluster, change, issued))};
}

struct Sent {
  Address to;
  KeyControl what;
};

// "n0", which knows the live members "n1" (10.0.0.1) and "n2" (10.0.0.2).
struct Node {
  explicit Node(std::uint64_t started_unix_ns = kStartUnixNs, bool with_snapshots = true, bool with_operator_key = true,
                KeyringSaver saver = {}) {
    auto first = std::make_unique<dp::DataplaneSnapshot>();
    first->keys.add(crypto::Key(key_bytes(1), crypto::Suite::kChaCha20Poly1305), true);
    snapshots = std::make_unique<dp::SnapshotExchange>(1, std::move(first));
    engine::EngineConfig cfg = engine::EngineConfig::lan();
    cfg.name = "n0";
    cfg.addr = addr(100);
    eng = std::make_unique<engine::Engine>(cfg, 7, kNowNs);
    eng->handle(addr(1), {engine::Alive{1, "n1", addr(1), {}, 1}}, kNowNs);
    eng->handle(addr(2), {engine::Alive{1, "n2", addr(2), {}, 1}}, kNowNs);
    ClusterKeyChange::Options o;
    o.snapshots = with_snapshots ? snapshots.get() : nullptr;
    o.keys = &snapshots->current().keys;
    o.started_unix_ns = started_unix_ns;
    o.started_mono_ns = kNowNs;
    if (with_operator_key) o.operator_key = op_key().public_key();
    o.cluster_id = kClusterId;
    o.saver = std::move(saver);
    keys = std::make_unique<ClusterKeyChange>(
        o, *eng,
        [this](const Address& to, std::span<const std::uint8_t> plain, std::uint64_t, std::uint32_t) {
          const DecodeResult r = decode(plain);
          EXPECT_TRUE(r.ok() && r.key_control.has_value());
          if (r.key_control) sent.push_back({to, *r.key_control});
          return send_ok;
        },
        counters);
  }

  void receive(const KeyCommandMsg& c, const Address& from) { keys->on_key_control(KeyControl{c, std::nullopt}, from); }
  void receive(const KeyResultMsg& r, const Address& from) { keys->on_key_control(KeyControl{std::nullopt, r}, from); }
  bool has(std::uint8_t fill) const {
    return snapshots->current().keys.find(crypto::derive_key_id(key_bytes(fill))) != nullptr;
  }
  // What tick() sent, taken.
  std::vector<Sent> take(std::uint64_t now_ns = kNowNs) {
    keys->tick(now_ns, kUnixS);
    return std::exchange(sent, {});
  }

  std::unique_ptr<dp::SnapshotExchange> snapshots;
  std::unique_ptr<engine::Engine> eng;
  KeyCommandCounters counters;
  std::vector<Sent> sent;
  bool send_ok = true;
  std::unique_ptr<ClusterKeyChange> keys;
};

// A command as a member relays it: signed by the operator when issued at
// `request_id` (the relaying origin stamps its request ids the same way).
KeyCommandMsg signed_command(KeyChange change, std::uint64_t request_id, std::string origin = "n1") {
  KeyCommandMsg c;
  c.request_id = request_id;
  c.change = change;
  c.origin = std::move(origin);
  const ClusterKeyChange::Authorisation a = sign(change, request_id);
  c.issued_unix_ns = a.issued_unix_ns;
  c.signature = a.signature;
  return c;
}

KeyCommandMsg install(std::uint8_t fill, std::uint64_t request_id, std::string origin = "n1") {
  KeyChange change;
  change.op = KeyChange::Op::kInstall;
  change.key = key_bytes(fill);
  change.id = crypto::derive_key_id(change.key);
  return signed_command(change, request_id, std::move(origin));
}

// ---- as a member that receives commands ----

TEST(ClusterKeyChangeMember, AppliesACommandOnceAndAnswersARetryWithoutApplyingAgain) {
  Node n;
  const KeyCommandMsg c = install(2, kStartUnixNs + kSecondNs);
  n.receive(c, addr(1));
  EXPECT_TRUE(n.has(2));
  EXPECT_EQ(n.counters.key_commands_applied, 1u);
  std::vector<Sent> out = n.take();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].to, addr(1));
  ASSERT_TRUE(out[0].what.result.has_value());
  EXPECT_EQ(out[0].what.result->request_id, c.request_id);
  EXPECT_EQ(out[0].what.result->node, "n0");
  EXPECT_TRUE(out[0].what.result->ok);

  // The key is removed here; the origin's retry of the same command is
  // answered again, and does not bring the key back.
  KeyChange remove;
  remove.op = KeyChange::Op::kRemove;
  remove.id = crypto::derive_key_id(key_bytes(2));
  ASSERT_EQ(apply_key_change(*n.snapshots, crypto::Suite::kChaCha20Poly1305, remove, false), "");
  n.receive(c, addr(1));
  EXPECT_FALSE(n.has(2));
  EXPECT_EQ(n.counters.key_commands_repeated, 1u);
  EXPECT_EQ(n.counters.key_commands_applied, 1u);
  out = n.take();
  ASSERT_EQ(out.size(), 1u);
  ASSERT_TRUE(out[0].what.result.has_value());
  EXPECT_TRUE(out[0].what.result->ok);
  EXPECT_TRUE(n.keys->idle());
}

TEST(ClusterKeyChangeMember, ARefusedChangeIsAnsweredWithWhy) {
  Node n;
  KeyChange change;
  change.op = KeyChange::Op::kUse;
  change.id = 0x12345678;  // not in the keyring
  n.receive(signed_command(change, kStartUnixNs + kSecondNs), addr(1));
  EXPECT_EQ(n.counters.key_commands_refused, 1u);
  const std::vector<Sent> out = n.take();
  ASSERT_EQ(out.size(), 1u);
  ASSERT_TRUE(out[0].what.result.has_value());
  EXPECT_FALSE(out[0].what.result->ok);
  EXPECT_FALSE(out[0].what.result->error.empty());
}

TEST(ClusterKeyChangeMember, RefusesCommandsFromBeforeItStartedAndReplays) {
  Node n(kStartUnixNs + kSecondNs / 2);
  // Issued a minute before this node started: a recording from an earlier run.
  n.receive(install(2, kStartUnixNs - 60 * kSecondNs), addr(1));
  EXPECT_FALSE(n.has(2));
  EXPECT_EQ(n.counters.key_commands_stale, 1u);
  std::vector<Sent> out = n.take();
  ASSERT_EQ(out.size(), 1u);  // answered, so a real origin learns why
  ASSERT_TRUE(out[0].what.result.has_value());
  EXPECT_FALSE(out[0].what.result->ok);
  // Issued in the second this node started, a little before it: not held
  // against it (ids are stamped from a clock read in whole seconds).
  n.receive(install(3, kStartUnixNs + 1), addr(1));
  EXPECT_TRUE(n.has(3));
  // Older than the newest signed change applied, never seen: a replay.
  n.receive(install(4, kStartUnixNs + 2 * kSecondNs), addr(1));
  ASSERT_TRUE(n.has(4));
  n.receive(install(5, kStartUnixNs + kSecondNs), addr(1));
  EXPECT_FALSE(n.has(5));
  EXPECT_EQ(n.counters.key_commands_stale, 2u);
  EXPECT_EQ(n.counters.key_commands_applied, 2u);
}

TEST(ClusterKeyChangeMember, IgnoresCommandsNotFromTheLiveMemberThatIssuedThem) {
  Node n;
  n.receive(install(2, kStartUnixNs + kSecondNs), addr(9));        // n1's name, another address
  n.receive(install(2, kStartUnixNs + kSecondNs, "n7"), addr(9));  // nobody's name
  n.receive(install(2, kStartUnixNs + kSecondNs, "n2"), addr(1));  // n2's name from n1
  EXPECT_FALSE(n.has(2));
  EXPECT_EQ(n.counters.key_commands_not_member, 3u);
  EXPECT_EQ(n.counters.key_commands_applied + n.counters.key_commands_stale, 0u);
  EXPECT_TRUE(n.keys->idle());  // not even answered
  EXPECT_TRUE(n.take().empty());
}

TEST(ClusterKeyChangeMember, AnswersAListWithItsKeyringEveryTime) {
  Node n;
  KeyCommandMsg list;
  list.request_id = kStartUnixNs + kSecondNs;
  list.change.op = KeyChange::Op::kList;
  list.origin = "n1";
  for (int i = 0; i < 2; ++i) {
    n.receive(list, addr(1));
    const std::vector<Sent> out = n.take();
    ASSERT_EQ(out.size(), 1u);
    ASSERT_TRUE(out[0].what.result.has_value());
    EXPECT_TRUE(out[0].what.result->ok);
    EXPECT_EQ(out[0].what.result->key_ids, std::vector<std::uint32_t>{crypto::derive_key_id(key_bytes(1))});
    EXPECT_EQ(out[0].what.result->primary, crypto::derive_key_id(key_bytes(1)));
  }
  EXPECT_EQ(n.counters.key_commands_repeated, 0u);
  EXPECT_EQ(n.counters.key_commands_applied, 0u);
}

TEST(ClusterKeyChangeMember, OurOwnCommandReflectedBackIsNotApplied) {
  Node n;
  n.receive(install(2, kStartUnixNs + kSecondNs, "n0"), addr(1));
  EXPECT_FALSE(n.has(2));
  EXPECT_EQ(n.counters.key_results_unsolicited, 1u);
}

// ---- as the origin ----

TEST(ClusterKeyChangeOrigin, AppliesHereSendsToEveryLiveMemberAndRetriesUntilAnswered) {
  Node n;
  std::optional<ClusterKeyChange::Outcome> done;
  KeyChange change;
  change.op = KeyChange::Op::kInstall;
  change.key = key_bytes(2);
  const ClusterKeyChange::Authorisation auth = sign(change, std::uint64_t{kUnixS} * kSecondNs);
  ASSERT_EQ(n.keys->start(change, auth, kNowNs, kUnixS, [&](const ClusterKeyChange::Outcome& o) { done = o; }), "");
  EXPECT_TRUE(n.has(2));  // applied here first
  // Sent at once to n1 and n2.
  ASSERT_EQ(n.sent.size(), 2u);
  const std::uint64_t id = n.sent[0].what.command->request_id;
  EXPECT_GE(id, std::uint64_t{kUnixS} * kSecondNs);
  for (const Sent& s : std::exchange(n.sent, {})) {
    ASSERT_TRUE(s.what.command.has_value());
    EXPECT_EQ(s.what.command->origin, "n0");
    EXPECT_EQ(s.what.command->change.id, crypto::derive_key_id(key_bytes(2)));
    EXPECT_EQ(s.what.command->request_id, id);
    EXPECT_EQ(s.what.command->signature, auth.signature);  // the operator's, relayed
    EXPECT_EQ(s.what.command->issued_unix_ns, auth.issued_unix_ns);
  }
  EXPECT_EQ(n.counters.key_commands_sent, 2u);
  // n1 answers; nothing is resent before the retry interval.
  n.receive(KeyResultMsg{id, "n1", true, {}, {}, 0}, addr(1));
  EXPECT_EQ(n.counters.key_results_received, 1u);
  EXPECT_TRUE(n.take(kNowNs + ClusterKeyChange::kRetryNs - 1).empty());
  // Then only to n2, which has not.
  std::vector<Sent> out = n.take(kNowNs + ClusterKeyChange::kRetryNs);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].to, addr(2));
  EXPECT_EQ(n.counters.key_commands_sent, 3u);
  EXPECT_FALSE(done.has_value());
  // The deadline: done, n2 never answered.
  (void)n.take(kNowNs + ClusterKeyChange::kTimeoutNs);
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(done->request_id, id);
  EXPECT_EQ(done->targets, 2u);
  EXPECT_EQ(done->ok, std::vector<std::string>{"n1"});
  EXPECT_EQ(done->no_answer, std::vector<std::string>{"n2"});
  EXPECT_TRUE(n.keys->idle());
}

TEST(ClusterKeyChangeOrigin, EndsAsSoonAsEveryMemberAnswered) {
  Node n;
  std::optional<ClusterKeyChange::Outcome> done;
  KeyChange list;
  list.op = KeyChange::Op::kList;
  ASSERT_EQ(n.keys->start(list, {}, kNowNs, kUnixS, [&](const ClusterKeyChange::Outcome& o) { done = o; }), "");
  const std::uint64_t id = n.sent.at(0).what.command->request_id;
  n.receive(KeyResultMsg{id, "n1", true, {}, {7, 8}, 8}, addr(1));
  n.receive(KeyResultMsg{id, "n2", false, "no", {}, 0}, addr(2));
  n.receive(KeyResultMsg{id, "n2", true, {}, {}, 0}, addr(2));      // a second answer: not ours to count
  n.receive(KeyResultMsg{id + 1, "n1", true, {}, {}, 0}, addr(1));  // for no request of ours
  EXPECT_EQ(n.counters.key_results_received, 4u);
  EXPECT_EQ(n.counters.key_results_unsolicited, 2u);
  (void)n.take(kNowNs + 1);
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(done->ok, std::vector<std::string>{"n1"});
  ASSERT_EQ(done->refused.size(), 1u);
  EXPECT_EQ(done->refused[0], (std::pair<std::string, std::string>{"n2", "no"}));
  EXPECT_TRUE(done->no_answer.empty());
  EXPECT_EQ(done->keyrings.at("n1"), (std::pair<std::vector<std::uint32_t>, std::uint32_t>{{7, 8}, 8}));
}

TEST(ClusterKeyChangeOrigin, ASendTheShaperDroppedIsNotCountedAsSent) {
  Node n;
  n.send_ok = false;
  KeyChange list;
  list.op = KeyChange::Op::kList;
  ASSERT_EQ(n.keys->start(list, {}, kNowNs, kUnixS, {}), "");
  EXPECT_EQ(n.sent.size(), 2u);
  EXPECT_EQ(n.counters.key_commands_sent, 0u);
}

TEST(ClusterKeyChangeOrigin, RefusesWhatItCannotStart) {
  Node without(kStartUnixNs, /*with_snapshots=*/false);
  KeyChange list;
  list.op = KeyChange::Op::kList;
  EXPECT_NE(without.keys->start(list, {}, kNowNs, kUnixS, {}), "");
  EXPECT_TRUE(without.sent.empty());

  Node n;
  KeyChange install_primary;
  install_primary.op = KeyChange::Op::kInstall;
  install_primary.key = key_bytes(2);
  install_primary.primary = true;
  EXPECT_NE(
      n.keys->start(install_primary, sign(install_primary, std::uint64_t{kUnixS} * kSecondNs), kNowNs, kUnixS, {}), "");
  EXPECT_FALSE(n.has(2));
  for (std::size_t i = 0; i < ClusterKeyChange::kMaxInFlight; ++i) {
    EXPECT_EQ(n.keys->start(list, {}, kNowNs, kUnixS, {}), "");
  }
  EXPECT_NE(n.keys->start(list, {}, kNowNs, kUnixS, {}), "");
  // Each started change has its own, increasing request id.
  std::vector<std::uint64_t> ids;
  for (const Sent& s : n.sent) {
    if (ids.empty() || ids.back() != s.what.command->request_id) ids.push_back(s.what.command->request_id);
  }
  ASSERT_EQ(ids.size(), ClusterKeyChange::kMaxInFlight);
  EXPECT_TRUE(std::is_sorted(ids.begin(), ids.end()));
  EXPECT_EQ(std::adjacent_find(ids.begin(), ids.end()), ids.end());
}

// Issue 51 item 8: a node started with its clock 300 s ahead, corrected
// since, takes the operator's commands signed after its real start (before:
// refused as issued before it started, for 300 s).
TEST(ClusterKeyChangeMember, TheStartInstantFollowsAClockStep) {
  Node n(kStartUnixNs + 300 * kSecondNs);  // what the wrong clock read at start
  n.keys->note_time(static_cast<std::uint32_t>(kStartUnixNs / kSecondNs + 1), kNowNs + kSecondNs);  // NTP stepped it back
  n.receive(install(2, kStartUnixNs + kSecondNs), addr(1));
  EXPECT_TRUE(n.has(2));
  // What was signed before the real start is still refused.
  n.receive(install(3, kStartUnixNs - 60 * kSecondNs), addr(1));
  EXPECT_FALSE(n.has(3));
  EXPECT_EQ(n.counters.key_commands_stale, 1u);
}

// ---- the operator's signature (issue 51 item 6) ----

// Before: any member holding the cluster key could install, use and remove
// keys on every member (an insider made the cluster's keyring its own).
TEST(ClusterKeyChangeMember, AKeyHolderWithoutTheOperatorKeyChangesNoKeyring) {
  Node n;
  const std::uint64_t t = kStartUnixNs + kSecondNs;
  KeyCommandMsg unsigned_install = install(2, t);
  unsigned_install.signature = {};  // what a member with only the cluster key can send
  n.receive(unsigned_install, addr(1));
  KeyCommandMsg other = install(2, t + 1);
  other.signature = sign(other.change, t + 1, other_key()).signature;  // a key nobody configured
  n.receive(other, addr(1));
  KeyCommandMsg wrong_cluster = install(2, t + 2);
  wrong_cluster.signature = sign(wrong_cluster.change, t + 2, op_key(), kClusterId + 1).signature;
  n.receive(wrong_cluster, addr(1));
  // A real signature, on another change: the operator installed key 3, not key 2.
  KeyCommandMsg swapped = install(3, t + 3);
  swapped.change.key = key_bytes(2);
  swapped.change.id = crypto::derive_key_id(swapped.change.key);
  n.receive(swapped, addr(1));
  // ...or at another time (a replay moved forward to pass the freshness checks).
  KeyCommandMsg later = install(2, t + 4);
  later.issued_unix_ns = t + 5;
  n.receive(later, addr(1));
  EXPECT_FALSE(n.has(2));
  EXPECT_EQ(n.counters.key_commands_unsigned, 5u);
  EXPECT_EQ(n.counters.key_commands_applied, 0u);
  const std::vector<Sent> out = n.take();  // each answered with why
  ASSERT_EQ(out.size(), 5u);
  for (const Sent& s : out) {
    ASSERT_TRUE(s.what.result.has_value());
    EXPECT_FALSE(s.what.result->ok);
    EXPECT_NE(s.what.result->error.find("operator"), std::string::npos) << s.what.result->error;
  }
  // The operator's own command goes through.
  n.receive(install(2, t + 6), addr(1));
  EXPECT_TRUE(n.has(2));
  EXPECT_EQ(n.counters.key_commands_applied, 1u);

  // A member without cluster.operator_public_key applies no change at all.
  Node bare(kStartUnixNs, true, /*with_operator_key=*/false);
  bare.receive(install(2, t), addr(1));
  EXPECT_FALSE(bare.has(2));
  EXPECT_EQ(bare.counters.key_commands_unsigned, 1u);
}

// A command claiming a member's origin, sent from that member's (spoofed)
// address: before, applied and logged as that member's request. Now what
// a relay claims authorises nothing: unsigned it is refused, and a signed
// command recorded earlier is a replay.
TEST(ClusterKeyChangeMember, ACommandFromASpoofedMemberAddressIsNotThatMembersRequest) {
  Node n;
  KeyCommandMsg forged = install(2, kStartUnixNs + kSecondNs);
  forged.signature[0] ^= 1;
  n.receive(forged, addr(1));  // "n1" from n1's address
  EXPECT_FALSE(n.has(2));
  EXPECT_EQ(n.counters.key_commands_unsigned, 1u);
  const KeyCommandMsg real = install(3, kStartUnixNs + 2 * kSecondNs);
  n.receive(real, addr(1));
  ASSERT_TRUE(n.has(3));
  KeyChange remove;
  remove.op = KeyChange::Op::kRemove;
  remove.id = crypto::derive_key_id(key_bytes(3));
  n.receive(signed_command(remove, kStartUnixNs + 3 * kSecondNs, "n2"), addr(2));
  ASSERT_FALSE(n.has(3));
  // The recorded install, replayed as n2's request (another request id):
  // older than the newest signed change applied.
  KeyCommandMsg replay = real;
  replay.origin = "n2";
  replay.request_id += 7;
  n.receive(replay, addr(2));
  EXPECT_FALSE(n.has(3));
  EXPECT_EQ(n.counters.key_commands_stale, 1u);
}

TEST(ClusterKeyChangeOrigin, StartsOnlyWhatTheOperatorSigned) {
  Node n;
  KeyChange change;
  change.op = KeyChange::Op::kInstall;
  change.key = key_bytes(2);
  const std::uint64_t now = std::uint64_t{kUnixS} * kSecondNs;
  EXPECT_NE(n.keys->start(change, {}, kNowNs, kUnixS, {}).find("not signed"), std::string::npos);
  EXPECT_NE(n.keys->start(change, sign(change, now, other_key()), kNowNs, kUnixS, {}), "");
  // Signed long ago: stale (a command cannot be kept and submitted much later).
  EXPECT_NE(n.keys->start(change, sign(change, now - ClusterKeyChange::kMaxAgeNs - kSecondNs), kNowNs, kUnixS, {})
                .find("stale"),
            std::string::npos);
  EXPECT_FALSE(n.has(2));
  EXPECT_TRUE(n.sent.empty());
  EXPECT_EQ(n.counters.key_commands_unsigned, 2u);
  Node bare(kStartUnixNs, true, /*with_operator_key=*/false);
  EXPECT_NE(bare.keys->start(change, sign(change, now), kNowNs, kUnixS, {}).find("cluster.operator_public_key"),
            std::string::npos);
  EXPECT_EQ(n.keys->start(change, sign(change, now), kNowNs, kUnixS, {}), "");
  EXPECT_TRUE(n.has(2));
}

// Issue 52 item 5 with issue 51 item 6: a signed change is saved
// (control.state_dir) before it takes effect, on the member that issues it
// and on a member it is relayed to; one that cannot be saved is refused with
// the reason and never published, and an unsigned one never gets as far as
// the save.
TEST(ClusterKeyChange, ASignedChangeThatCannotBeSavedIsRefusedAndNotPublished) {
  std::string fail_with = "control.state_dir '/x': No space left on device";
  std::vector<std::vector<std::uint32_t>> saved;  // the keyrings the saver was given
  Node n(kStartUnixNs, true, true, [&](const crypto::Keyring& ring, const std::map<std::uint32_t, crypto::KeyBytes>&) {
    saved.push_back(ring.ids());
    return fail_with;
  });
  const std::uint64_t v0 = n.snapshots->current().version;
  KeyChange change;
  change.op = KeyChange::Op::kInstall;
  change.key = key_bytes(2);
  const std::uint64_t now = std::uint64_t{kUnixS} * kSecondNs;

  // Unsigned: refused before anything is saved.
  EXPECT_NE(n.keys->start(change, {}, kNowNs, kUnixS, {}).find("not signed"), std::string::npos);
  EXPECT_TRUE(saved.empty());

  // Signed, but the save fails: refused here, nothing published or sent.
  const std::string err = n.keys->start(change, sign(change, now), kNowNs, kUnixS, {});
  EXPECT_NE(err.find("could not be saved: control.state_dir '/x': No space left on device"), std::string::npos) << err;
  ASSERT_EQ(saved.size(), 1u);
  EXPECT_EQ(saved[0].size(), 2u);  // the keyring it would have led to
  EXPECT_FALSE(n.has(2));
  EXPECT_EQ(n.snapshots->current().version, v0);
  EXPECT_TRUE(n.sent.empty());
  EXPECT_EQ(n.counters.key_commands_sent, 0u);

  // Relayed by n1, signed, the save fails: refused and answered with why.
  n.receive(install(3, kStartUnixNs + kSecondNs), addr(1));
  EXPECT_FALSE(n.has(3));
  EXPECT_EQ(n.snapshots->current().version, v0);
  EXPECT_EQ(n.counters.key_commands_refused, 1u);
  EXPECT_EQ(n.counters.key_commands_applied, 0u);
  std::vector<Sent> out = n.take();
  ASSERT_EQ(out.size(), 1u);
  ASSERT_TRUE(out[0].what.result.has_value());
  EXPECT_FALSE(out[0].what.result->ok);
  EXPECT_NE(out[0].what.result->error.find("could not be saved"), std::string::npos) << out[0].what.result->error;

  // Once it can be saved, the step run again (signed anew) goes through,
  // saved first.
  fail_with.clear();
  EXPECT_EQ(n.keys->start(change, sign(change, now + kSecondNs), kNowNs, kUnixS, {}), "");
  EXPECT_TRUE(n.has(2));
  EXPECT_EQ(saved.size(), 3u);
  n.receive(install(3, now + 2 * kSecondNs), addr(1));  // issued after the step above
  EXPECT_TRUE(n.has(3));
  EXPECT_EQ(n.counters.key_commands_applied, 1u);
  EXPECT_EQ(saved.size(), 4u);
}

}  // namespace
}  // namespace gw::cp
