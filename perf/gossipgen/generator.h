// gossipgen's traffic model: which kinds of packets exist, which verdict the
// gateway must give each one, and a seeded generator of their frames.
//
// The generator is deterministic: the same GenOptions always give the same
// packets, byte for byte (std::mt19937_64 with hand-rolled bounded draws and
// shuffle, so the output does not depend on the standard library's
// distributions; nonces from a NonceSource whose epoch is derived from the
// seed). Only main.cc touches files and flags; tests and fuzz-corpus builders
// call generate() directly.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "control/engine/message_type.h"
#include "crypto/keys.h"
#include "crypto/wire_header.h"
#include "perf/gossipgen/frames.h"

namespace gw::perf {

// What a packet is meant to exercise. The order is the order of the JSON.
enum class Kind : std::uint8_t {
  kValid,
  kValidSecondary,
  kForeign,
  kUnknownKey,
  kForgedHeader,
  kForgedTag,
  kForgedCiphertext,
  kUnkeyedRandom,
  kUnkeyedShort,
  kUnkeyedVersion,
  kUnkeyedMemberlist,
  kNotGossip,
  kMalformed,
  // Exact copy of an earlier valid frame: drop_replay.
  kReplayed,
  // Valid but for a header timestamp outside the replay window: drop_stale.
  kStale,
  // Valid packets all from one source outside the /24: the first
  // unknown_burst are accepted, the rest drop_rate_limited (the gateway's
  // clock frozen, so no bucket refills during the run).
  kFlood,
  // Valid, but sealed for another member (another address, same port):
  // drop_wrong_receiver (wire version 2 binds a datagram to its receiver).
  kWrongReceiver,
  // Valid datagrams from a source no member can have (the gateway's own
  // address, broadcast, multicast, 0.0.0.0 / ::, loopback): drop_martian.
  kMartian,
  // Valid, but the header claims urgent for content that is not (suspect,
  // user data, syncs): accepted by the worker, then dropped on the control
  // lcore and counted in class_drop_mismatch; its messages are not served.
  kClassAbuse,
  // The drain attack (issue 17 item 1): one real datagram for us with a
  // ciphertext bit flipped, sent again and again from a member's address
  // (the base address of the /24, which valid packets also use): the first
  // copy drop_bad_auth, every later one drop_auth_retry; the member's own
  // packets are still accepted (its bucket is charged only after an AEAD).
  kDrain,
  // The same attack from many spoofed sources at once: 16 real datagrams
  // for us, each with a ciphertext bit flipped, every copy from a random
  // address of the /24 and a random port and MAC (sources no bucket or
  // window has seen): the first copy of each drop_bad_auth, every later one
  // drop_auth_retry, whatever its source.
  kDrainSpoofed,
};
inline constexpr std::size_t kKindCount = 21;

// "valid", "valid_secondary", ... as on the command line and in the JSON.
std::string_view kind_name(Kind k) noexcept;
std::optional<Kind> parse_kind_name(std::string_view name) noexcept;

// The gateway verdicts gossipgen can predict, named as the gateway's counters.
enum class Verdict : std::uint8_t {
  kAccepted,
  kDropNotGossip,
  kDropMalformed,
  kDropUnkeyed,
  kDropForeignCluster,
  kDropUnknownKey,
  kDropBadMac,
  kDropStale,
  kDropReplay,
  kDropRateLimited,
  kDropBadAuth,
  kDropWrongReceiver,
  kDropMartian,
  kDropAuthRetry,
};
inline constexpr std::size_t kVerdictCount = 14;

std::string_view verdict_name(Verdict v) noexcept;  // "accepted", "drop_not_gossip", ...
// The verdict of a kind's packets (for flood: of those within the burst).
Verdict expected_verdict(Kind k) noexcept;

// The gateway's built-in classifier rule names (dataplane/classifier.cc),
// in priority order, then "unmatched": what the truth's "unkeyed" counts.
inline constexpr std::size_t kUnkeyedLabelCount = 14;
const std::array<std::string_view, kUnkeyedLabelCount>& unkeyed_labels() noexcept;
// What the gateway's built-in signatures call an unkeyed UDP payload, by an
// independent decode of memberlist's framing (not by regular expression):
// an index into unkeyed_labels().
std::size_t unkeyed_label(const std::uint8_t* payload, std::size_t len) noexcept;

// gw.proto.Message body types, in field-number order (ping = 1 ... user_data = 11).
using MsgType = cp::engine::MessageType;
inline constexpr std::size_t kMsgTypeCount = cp::engine::kMessageTypeCount;

std::string_view msg_type_name(MsgType t) noexcept;  // "ping", "indirect_ping", ...
// The header class a datagram gets from its most urgent message (DESIGN.md).
crypto::PriorityClass class_of(MsgType t) noexcept;

using Mix = std::array<std::uint32_t, kKindCount>;

// The mix used when --mix is absent; unkeyed_memberlist only with a corpus.
Mix default_mix(bool have_corpus) noexcept;

class GenError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// "kind=count,kind=count": kinds left out get 0. Throws GenError on an
// unknown kind, a repeated kind, or a count that is not a number.
Mix parse_mix(std::string_view spec);

struct GenOptions {
  std::uint64_t seed = 1;
  Mix mix{};
  // Target Ethernet frame length (without FCS) for sealed and random
  // payloads; 0 leaves them their natural size. Clamped to what fits a
  // 1514-byte frame and max_payload.
  std::size_t frame_size = 0;
  std::string cluster;
  std::string foreign_cluster = "other-cluster";
  // Our ring, primary first. valid_secondary seals with keys[1].
  std::vector<crypto::KeyBytes> keys;
  crypto::Suite suite = crypto::Suite::kChaCha20Poly1305;
  IpAddr dst_ip;
  std::uint16_t dst_port = 7946;
  // Base of the /24 the sources are drawn from; default 10.0.0.2 or fd00::2.
  std::optional<IpAddr> src_ip;
  MacAddr dst_mac = {0x02, 0x00, 0x00, 0x00, 0x00, 0x01};
  std::uint32_t timestamp = 1700000000;
  // UDP payloads replayed, in order and cycling, by unkeyed_memberlist.
  std::vector<std::vector<std::uint8_t>> corpus;
  // The gateway's limits.max_payload_bytes: a larger payload_len is malformed.
  std::size_t max_payload = 1400;
  // The gateway's limits.replay_window_s: stale packets lie beyond it.
  std::uint32_t replay_window_s = 30;
  // The gateway's limits.unknown_burst: flood packets past it are rate-limited.
  std::uint32_t unknown_burst = 200;
  // Sender nonce epochs (as if from this many gateway boots), used in turn by
  // every sealed packet. 1 (default): one epoch, one replay window at the
  // gateway. Many epochs against a small limits.replay_senders make the
  // gateway evict each window before its next packet, so an endlessly
  // replayed pcap keeps exercising the accept path (perf/bench/run.sh).
  std::uint32_t nonce_epochs = 1;
};

struct Packet {
  Kind kind = Kind::kValid;
  Verdict verdict = Verdict::kAccepted;
  // Which sub-case of the kind this is, e.g. "arp" or "ipv4_ihl" (static string).
  std::string_view variant;
  Frame frame;
  // Accepted packets only: the header class and the messages sealed inside.
  std::optional<crypto::PriorityClass> cls;
  std::array<std::uint32_t, kMsgTypeCount> messages{};
  // Unkeyed packets only: index into unkeyed_labels().
  std::size_t unkeyed_label = 0;
  // Accepted, but its class does not match its content (class_abuse): the
  // control lcore drops it and does not count its messages.
  bool class_mismatch = false;
};

// Largest packet count one run may ask for.
inline constexpr std::uint64_t kMaxPackets = 10'000'000;

// Throws GenError when the options cannot be met (no key, valid_secondary
// with one key, memberlist without a usable corpus, foreign cluster equal to
// ours, mixed address families, AES-256-GCM on a CPU without it...).
void check_options(const GenOptions& opts);

// Hands every packet of the mix to `sink`, in a seeded shuffled order, one at
// a time (memory stays flat however many are asked for). Runs check_options
// first. Needs crypto::init().
void generate(const GenOptions& opts, const std::function<void(const Packet&)>& sink);
// The same packets, collected.
std::vector<Packet> generate(const GenOptions& opts);

// Accumulates the ground truth packet by packet.
class TruthCounts {
 public:
  void add(const Packet& p) noexcept;
  // The summary (see perf/gossipgen/main.cc for its layout).
  nlohmann::ordered_json json(std::uint64_t seed) const;

 private:
  std::uint64_t packets_ = 0;
  std::uint64_t class_mismatch_ = 0;
  std::array<std::uint64_t, kKindCount> kinds_{};
  std::array<std::uint64_t, kVerdictCount> verdicts_{};
  std::array<std::uint64_t, kMsgTypeCount> messages_{};
  std::array<std::uint64_t, crypto::kClassCount> classes_{};
  std::array<std::uint64_t, kUnkeyedLabelCount> unkeyed_{};
};

// TruthCounts over `packets`.
nlohmann::ordered_json truth_json(const GenOptions& opts, const std::vector<Packet>& packets);

}  // namespace gw::perf
