// control/host/engine_host.h: decode, feed the engine, seal and shape. A
// payload goes in as a worker hands it over; what comes out is read back from
// a fake transmit path, opened as its receiver would open it and decoded.
#include "control/host/engine_host.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <variant>
#include <vector>

#include "control/codec.h"
#include "crypto/keys.h"
#include "crypto/operator_key.h"
#include "crypto/wire_header.h"

namespace gw::cp {
namespace {

using engine::Address;

constexpr std::uint64_t kSecondNs = 1'000'000'000ULL;
constexpr std::uint64_t kNowNs = 1000 * kSecondNs;                 // monotonic
constexpr std::uint64_t kStartUnixNs = 1'800'000'000 * kSecondNs;  // wall clock when the host started
constexpr std::uint32_t kUnixS = 1'800'000'001;
constexpr std::uint64_t kClusterId = 0x5151;

Address addr(std::uint8_t i) { return Address{{10, 0, 0, i}, 7946}; }

crypto::KeyBytes key_bytes(std::uint8_t fill) {
  crypto::KeyBytes k{};
  k.fill(fill);
  return k;
}

// The operator's signing key (issue 51: cluster-wide key changes need it).
const crypto::OperatorSigner& operator_signer() {
  static const crypto::OperatorSigner signer(key_bytes(0xA5));
  return signer;
}

struct Datagram {
  dp::Endpoint to;
  crypto::PriorityClass cls;
  std::vector<std::uint8_t> bytes;
};

struct RecordingSink : dp::DatagramSink {
  std::vector<Datagram> sent;
  bool send(const dp::Endpoint& to, crypto::PriorityClass cls, const std::uint8_t* d, std::size_t n) noexcept override {
    sent.push_back({to, cls, std::vector<std::uint8_t>(d, d + n)});
    return true;
  }
};

// Opens `d` as the member at `to` would, with `key`: the payload it carries,
// decoded; nullopt if it does not open (wrong key, wrong receiver, tampered).
std::optional<DecodeResult> open(const Datagram& d, const Address& to, const crypto::KeyBytes& key) {
  crypto::WireHeader h;
  if (crypto::parse_header(d.bytes.data(), d.bytes.size(), &h) != crypto::HeaderStatus::kOk) return std::nullopt;
  const crypto::Key k(key, crypto::Suite::kChaCha20Poly1305);
  if (h.key_id != k.id() || h.cluster_id != kClusterId || h.cls != d.cls) return std::nullopt;
  std::vector<std::uint8_t> body(d.bytes.begin() + crypto::kHeaderBytes, d.bytes.end());
  if (!k.open_in_place(d.bytes.data(), h.nonce, body.data(), body.size(),
                       crypto::receiver_of(to.ip.data(), 4, to.port))) {
    return std::nullopt;
  }
  body.resize(body.size() - crypto::kTagBytes);
  return decode(body);
}

// Gateway "n0" at 10.0.0.100 that knows the live member "n1" at 10.0.0.1.
struct Host {
  explicit Host(bool with_primary = true) {
    auto first = std::make_unique<dp::DataplaneSnapshot>();
    if (with_primary) first->keys.add(crypto::Key(key_bytes(1), crypto::Suite::kChaCha20Poly1305), true);
    snapshots = std::make_unique<dp::SnapshotExchange>(1, std::move(first));
    EngineHost::Options o;
    o.engine = engine::EngineConfig::lan();
    o.engine.name = "n0";
    o.engine.addr = addr(100);
    o.cluster_id = kClusterId;
    o.snapshots = snapshots.get();
    o.rng_seed = 7;
    o.started_unix_ns = kStartUnixNs;
    o.operator_key = operator_signer().public_key();
    o.shaper.bytes_per_sec = 0;  // unlimited: every datagram leaves at once
    host = std::make_unique<EngineHost>(o, sink, kNowNs);
    host->engine().handle(addr(1), {engine::Alive{1, "n1", addr(1), {}, 1}}, kNowNs);
  }

  void receive(const std::vector<std::uint8_t>& payload, const Address& from,
               crypto::PriorityClass cls = crypto::PriorityClass::kProbe) {
    dp::Handoff h;
    h.data = payload.data();
    h.len = static_cast<std::uint32_t>(payload.size());
    h.from = to_endpoint(from);
    h.key_id = crypto::derive_key_id(key_bytes(1));
    h.cls = cls;
    host->on_payload(h, kNowNs, counters);
  }
  // The datagrams sent to `to`, opened and decoded, taken from the sink.
  std::vector<DecodeResult> sent_to(const Address& to) {
    std::vector<DecodeResult> out;
    for (const Datagram& d : sink.sent) {
      if (to_engine_address(d.to) != to) continue;
      std::optional<DecodeResult> r = open(d, to, key_bytes(1));
      EXPECT_TRUE(r.has_value()) << "a datagram to its receiver that does not open";
      if (r) out.push_back(std::move(*r));
    }
    sink.sent.clear();
    return out;
  }

  RecordingSink sink;
  std::unique_ptr<dp::SnapshotExchange> snapshots;
  std::unique_ptr<EngineHost> host;
  ControlCounters counters;
};

bool has_ack(const DecodeResult& r, std::uint32_t seq_no) {
  for (const engine::Message& m : r.messages) {
    if (const auto* a = std::get_if<engine::Ack>(&m); a != nullptr && a->seq_no == seq_no && a->source == "n0") {
      return true;
    }
  }
  return false;
}

TEST(EngineHost, APayloadReachesTheEngineAndItsReplyLeavesSealedForTheSender) {
  Host h;
  h.receive(encode(engine::Compound{engine::Ping{42, "n0", "n1", addr(1)}}), addr(1));
  EXPECT_EQ(h.counters.msgs[0], 1u);  // one ping, decoded
  EXPECT_EQ(h.host->sender_key(addr(1)), crypto::derive_key_id(key_bytes(1)));
  const std::uint64_t sealed_before = h.host->counters().sealed;
  h.host->poll(kNowNs, kUnixS);
  const std::vector<DecodeResult> out = h.sent_to(addr(1));
  ASSERT_FALSE(out.empty());
  EXPECT_TRUE(std::any_of(out.begin(), out.end(), [](const DecodeResult& r) { return has_ack(r, 42); }));
  EXPECT_GT(h.host->counters().sealed, sealed_before);
}

TEST(EngineHost, WhatDoesNotDecodeOrClaimsAClassItsContentCannotHaveIsCountedNotServed) {
  Host h;
  h.receive({0x0a, 0x05, 0x01}, addr(1));  // not a Compound
  EXPECT_EQ(h.counters.msg_decode_error, 1u);
  h.receive({0x0a, 0x00}, addr(1));  // an empty Message
  h.receive({}, addr(1));            // nothing at all: no message, no key command
  EXPECT_EQ(h.counters.msg_unknown, 2u);
  // A ping claiming the urgent class.
  h.receive(encode(engine::Compound{engine::Ping{43, "n0", "n1", addr(1)}}), addr(1), crypto::PriorityClass::kUrgent);
  EXPECT_EQ(h.counters.class_drop_mismatch[static_cast<std::size_t>(crypto::PriorityClass::kUrgent)], 1u);
  EXPECT_EQ(h.counters.msgs[0], 0u);
  h.host->poll(kNowNs, kUnixS);
  for (const DecodeResult& r : h.sent_to(addr(1))) EXPECT_FALSE(has_ack(r, 43));
}

TEST(EngineHost, KeyResultsLeaveThroughTheSameSealingPathAsTheEngines) {
  Host h;
  KeyCommandMsg c;
  c.request_id = kStartUnixNs + kSecondNs;
  c.change.op = KeyChange::Op::kInstall;
  c.change.key = key_bytes(2);
  c.change.id = crypto::derive_key_id(c.change.key);
  c.origin = "n1";
  c.issued_unix_ns = c.request_id;
  c.signature = operator_signer().sign(key_command_statement(kClusterId, c.change, c.issued_unix_ns));
  h.receive(encode_key_command(c), addr(1), crypto::PriorityClass::kUrgent);
  EXPECT_EQ(h.host->counters().key_commands_applied, 1u);
  EXPECT_EQ(h.counters.msg_unknown + h.counters.msg_decode_error, 0u);
  const std::uint64_t sealed_before = h.host->counters().sealed;
  h.host->poll(kNowNs, kUnixS);
  // Sealed with the cluster's primary for n1, urgent, and counted as sealed
  // like every engine datagram.
  ASSERT_FALSE(h.sink.sent.empty());
  bool answered = false;
  for (const Datagram& d : h.sink.sent) {
    if (to_engine_address(d.to) != addr(1)) continue;
    const std::optional<DecodeResult> r = open(d, addr(1), key_bytes(1));
    ASSERT_TRUE(r.has_value());
    if (!r->key_control) continue;
    EXPECT_EQ(d.cls, crypto::PriorityClass::kUrgent);
    ASSERT_TRUE(r->key_control->result.has_value());
    EXPECT_EQ(r->key_control->result->request_id, c.request_id);
    EXPECT_TRUE(r->key_control->result->ok);
    answered = true;
  }
  EXPECT_TRUE(answered);
  EXPECT_GT(h.host->counters().sealed, sealed_before);
}

TEST(EngineHost, WithoutAPrimaryKeyNothingLeavesOnEitherPath) {
  Host h(/*with_primary=*/false);
  h.receive(encode(engine::Compound{engine::Ping{44, "n0", "n1", addr(1)}}), addr(1));
  KeyCommandMsg list;
  list.request_id = kStartUnixNs + kSecondNs;
  list.change.op = KeyChange::Op::kList;
  list.origin = "n1";
  h.receive(encode_key_command(list), addr(1), crypto::PriorityClass::kUrgent);
  h.host->poll(kNowNs, kUnixS);
  EXPECT_TRUE(h.sink.sent.empty());
  EXPECT_EQ(h.host->counters().sealed, 0u);
  // The ack and the list's answer at least, each counted once.
  EXPECT_GE(h.host->counters().drop_no_primary, 2u);
}

TEST(EngineHost, AnAckOfOurPingGivesItsRoundTrip) {
  Host h;
  // Run the engine's timers until it probes n1.
  std::optional<std::uint32_t> seq;
  for (std::uint64_t t = kNowNs; t < kNowNs + 10 * kSecondNs && !seq; t += 100'000'000ULL) {
    h.host->poll(t, kUnixS);
    for (const DecodeResult& r : h.sent_to(addr(1))) {
      for (const engine::Message& m : r.messages) {
        if (const auto* p = std::get_if<engine::Ping>(&m)) seq = p->seq_no;
      }
    }
  }
  ASSERT_TRUE(seq.has_value());
  EXPECT_EQ(h.host->probe_rtt().count, 0u);
  h.receive(encode(engine::Compound{engine::Ack{*seq, "n1"}}), addr(1));
  EXPECT_EQ(h.host->probe_rtt().count, 1u);
}

// Issue 52 item 10: the first member (no seed to ask) is joined, and says so.
TEST(EngineHost, TheFirstMemberWithoutSeedsIsJoinedOnceStarted) {
  Host h;
  EXPECT_FALSE(h.host->engine().joined());
  h.host->start(kNowNs, kUnixS);
  EXPECT_TRUE(h.host->engine().joined());
  EXPECT_TRUE(h.host->seeds().empty());
}

// Issue 52 item 2: manual joins add seeds (at most kMaxManualSeeds, the
// oldest going first) and never remove a configured one.
TEST(EngineHost, ManualJoinsAddToTheConfiguredSeedsBounded) {
  RecordingSink sink;
  auto first = std::make_unique<dp::DataplaneSnapshot>();
  first->keys.add(crypto::Key(key_bytes(1), crypto::Suite::kChaCha20Poly1305), true);
  dp::SnapshotExchange snapshots(1, std::move(first));
  EngineHost::Options o;
  o.engine = engine::EngineConfig::lan();
  o.engine.name = "n0";
  o.engine.addr = addr(100);
  o.seeds = {addr(5), addr(6)};
  o.snapshots = &snapshots;
  o.shaper.bytes_per_sec = 0;
  EngineHost host(o, sink, kNowNs);
  host.start(kNowNs, kUnixS);
  EXPECT_EQ(host.seeds(), (std::vector<Address>{addr(5), addr(6)}));
  host.join(addr(6), kNowNs);  // a configured seed: nothing added
  EXPECT_EQ(host.seeds().size(), 2u);
  for (std::uint8_t i = 20; i < 26; ++i) host.join(addr(i), kNowNs);
  EXPECT_EQ(host.seeds(), (std::vector<Address>{addr(5), addr(6), addr(22), addr(23), addr(24), addr(25)}));
}

}  // namespace
}  // namespace gw::cp
