// control/host/engine_host.h: who may change our keyring through a cluster key
// command (issue 17 item 9, issue 51 item 6). Only what the operator signed,
// relayed by a live member from its own address, each applied at most
// once, also across a restart.
#include <gtest/gtest.h>

#include "control/codec.h"
#include "control/host/engine_host.h"
#include "control/host/key_ops.h"
#include "crypto/keys.h"
#include "crypto/operator_key.h"

namespace gw::cp {
namespace {

using engine::Address;

constexpr std::uint64_t kSecondNs = 1'000'000'000ULL;
constexpr std::uint64_t kStartNs = 1000 * kSecondNs;               // monotonic
constexpr std::uint64_t kStartUnixNs = 1'800'000'000 * kSecondNs;  // wall clock when the host started

constexpr std::uint64_t kClusterId = 0xC1C1C1C1C1C1C1C1ULL;

Address addr(std::uint8_t i) { return Address{{10, 0, 0, i}, 7946}; }

crypto::KeyBytes key_bytes(std::uint8_t fill) {
  crypto::KeyBytes k{};
  k.fill(fill);
  return k;
}

const crypto::OperatorSigner& op_key() {
  static const crypto::OperatorSigner s(key_bytes(0xA5));
  return s;
}

struct CountingSink : dp::DatagramSink {
  std::size_t sent = 0;
  bool send(const dp::Endpoint&, crypto::PriorityClass, const std::uint8_t*, std::size_t) noexcept override {
    ++sent;
    return true;
  }
};

// One gateway "n0" that knows the live member "n1" at 10.0.0.1.
struct Node {
  explicit Node(std::uint64_t started_unix_ns) {
    auto first = std::make_unique<dp::DataplaneSnapshot>();
    first->keys.add(crypto::Key(key_bytes(1), crypto::Suite::kChaCha20Poly1305), true);
    snapshots = std::make_unique<dp::SnapshotExchange>(1, std::move(first));
    EngineHost::Options o;
    o.engine = engine::EngineConfig::lan();
    o.engine.name = "n0";
    o.engine.addr = addr(100);
    o.snapshots = snapshots.get();
    o.rng_seed = 7;
    o.started_unix_ns = started_unix_ns;
    o.cluster_id = kClusterId;
    o.operator_key = op_key().public_key();
    host = std::make_unique<EngineHost>(o, sink, kStartNs);
    host->engine().handle(addr(1), {engine::Alive{1, "n1", addr(1), {}, 1}}, kStartNs);
  }

  void receive(const KeyCommandMsg& c, const Address& from) {
    const std::vector<std::uint8_t> bytes = encode_key_command(c);
    dp::Handoff h;
    h.data = bytes.data();
    h.len = static_cast<std::uint32_t>(bytes.size());
    h.from = to_endpoint(from);
    h.key_id = crypto::derive_key_id(key_bytes(1));
    host->on_payload(h, kStartNs + kSecondNs, counters);
  }
  bool has(std::uint8_t fill) const {
    return snapshots->current().keys.find(crypto::derive_key_id(key_bytes(fill))) != nullptr;
  }

  CountingSink sink;
  std::unique_ptr<dp::SnapshotExchange> snapshots;
  std::unique_ptr<EngineHost> host;
  ControlCounters counters;
};

// Signed by the operator when issued at `request_id`.
KeyCommandMsg install(std::uint8_t fill, std::uint64_t request_id, std::string origin = "n1") {
  KeyCommandMsg c;
  c.request_id = request_id;
  c.change.op = KeyChange::Op::kInstall;
  c.change.key = key_bytes(fill);
  c.origin = std::move(origin);
  c.issued_unix_ns = request_id;
  c.signature = op_key().sign(key_command_statement(kClusterId, c.change, request_id));
  return c;
}

TEST(EngineHostKeyCommands, OnlyTheLiveMemberThatIssuedItMayChangeTheKeyring) {
  Node n(kStartUnixNs);
  ASSERT_NE(n.host->engine().member("n1"), nullptr);
  // Someone with a cluster key, sending from an address that is not n1's.
  n.receive(install(2, kStartUnixNs + kSecondNs), addr(9));
  // A name nobody in the cluster has.
  n.receive(install(2, kStartUnixNs + kSecondNs, "n7"), addr(9));
  EXPECT_FALSE(n.has(2));
  EXPECT_EQ(n.host->counters().key_commands_not_member, 2u);
  EXPECT_EQ(n.host->counters().key_commands_applied, 0u);
  // n1 itself.
  n.receive(install(2, kStartUnixNs + kSecondNs), addr(1));
  EXPECT_TRUE(n.has(2));
  EXPECT_EQ(n.host->counters().key_commands_applied, 1u);
}

TEST(EngineHostKeyCommands, EachCommandIsAppliedAtMostOnce) {
  Node n(kStartUnixNs);
  const KeyCommandMsg c = install(2, kStartUnixNs + kSecondNs);
  n.receive(c, addr(1));
  ASSERT_TRUE(n.has(2));
  // The operator removes the key here; the old command comes again (a retry
  // or a replay): it must not bring the key back.
  KeyChange remove;
  remove.op = KeyChange::Op::kRemove;
  remove.id = crypto::derive_key_id(key_bytes(2));
  ASSERT_EQ(apply_key_change(*n.snapshots, crypto::Suite::kChaCha20Poly1305, remove, false), "");
  n.receive(c, addr(1));
  EXPECT_FALSE(n.has(2));
  EXPECT_EQ(n.host->counters().key_commands_repeated, 1u);
  // A command older than the newest signed one applied, never seen
  // before: a replay from the past.
  n.receive(install(3, kStartUnixNs + 2 * kSecondNs), addr(1));
  ASSERT_TRUE(n.has(3));
  n.receive(install(4, kStartUnixNs + kSecondNs + 1), addr(1));
  EXPECT_FALSE(n.has(4));
  EXPECT_EQ(n.host->counters().key_commands_stale, 1u);
}

TEST(EngineHostKeyCommands, ACommandFromBeforeARestartIsNotAppliedAgain) {
  const KeyCommandMsg c = install(2, kStartUnixNs + kSecondNs);
  {
    Node before(kStartUnixNs);
    before.receive(c, addr(1));
    ASSERT_TRUE(before.has(2));
  }
  // Restarted a minute later with the config's keyring (no key 2): the
  // recorded command, replayed, is refused.
  Node after(kStartUnixNs + 60 * kSecondNs);
  after.receive(c, addr(1));
  EXPECT_FALSE(after.has(2));
  EXPECT_EQ(after.host->counters().key_commands_stale, 1u);
  // A command issued after the restart is applied.
  after.receive(install(2, kStartUnixNs + 61 * kSecondNs), addr(1));
  EXPECT_TRUE(after.has(2));
}

// Issue 51 item 6, through the whole host (decode included): a member that
// holds the cluster key, relaying from its own address, cannot change our
// keyring without the operator's signature.
TEST(EngineHostKeyCommands, TheClusterKeyAloneChangesNoKeyring) {
  Node n(kStartUnixNs);
  KeyCommandMsg c = install(2, kStartUnixNs + kSecondNs);
  c.signature = {};
  n.receive(c, addr(1));
  EXPECT_FALSE(n.has(2));
  EXPECT_EQ(n.host->counters().key_commands_unsigned, 1u);
  EXPECT_EQ(n.host->counters().key_commands_applied, 0u);
}

}  // namespace
}  // namespace gw::cp
