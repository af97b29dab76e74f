// The check ladder over one contiguous frame, cheapest check first:
//   1. L2/L3/L4: Ethernet (one optional 802.1Q tag), IPv4 or IPv6, UDP to our
//      address and port. Not ours: not-gossip. Lengths that lie, IPv4
//      fragments (we never reassemble): malformed. A source no member can
//      have (our own address, broadcast, multicast, 0/8, loopback): martian.
//   2. Gateway header: too short, wrong magic or version: unkeyed.
//   3. Cluster id: foreign-cluster (checked before the rest of the header:
//      another cluster's packet is foreign whatever else it holds).
//   3b. The rest of the header: fields or lengths inconsistent, payload
//      over the limit: malformed. Receiver tag not ours: wrong-receiver.
//   4. Key id (and its suite) in the keyring: unknown-key. One key id, one key.
//   5. Header MAC (SipHash): bad-mac. Nothing below is reachable without a key.
//   6. Replay pre-check, read-only: header timestamp outside the window of
//      our clock: stale; before this gateway started: before-start; nonce seen or older than the sender's window:
//      replay. A header whose AEAD already failed on this lcore: auth-retry.
//   7. Per-source token bucket (known members get a larger budget), asked
//      read-only: rate-limited.
//   8. AEAD open in place: bad-auth (and the header's nonce is remembered as
//      failed). Only now is the nonce committed to the sender's replay
//      window and the source's bucket charged, so a forged packet can
//      neither advance a window nor spend a member's budget.
// Steps 6 and 7 read and write per-lcore state (LadderState); the rest only
// reads the config. Pure: no DPDK, no allocation, no exceptions, so tests and
// fuzzers run it on plain byte arrays.
//
// The stateful ladder and step 1 are defined inline (dataplane/ladder_inl.h,
// included at the end): the worker runs them for every packet, and a call
// with its results passed back through memory cost more than the checks.
#pragma once

#include <array>
#include <cstdint>

#include "config/config.h"
#include "crypto/keys.h"
#include "crypto/wire_header.h"
#include "dataplane/api/handoff.h"
#include "dataplane/api/verdict.h"

namespace gw::dp {

class ReplayTable;
class RateLimiter;
class FailedHeaders;
struct DataplaneSnapshot;

// Where gossip must be addressed to be ours. Addresses in network byte order.
struct LocalEndpoint {
  bool ipv6 = false;
  std::array<std::uint8_t, 4> ipv4{};
  std::array<std::uint8_t, 16> ipv6_addr{};
  std::uint16_t port = 0;  // host byte order
  // Our IPv4 subnet's broadcast and network addresses (node.prefix_len), as
  // martian sources; our own address when the prefix is unknown or /31, /32
  // (RFC 3021: no broadcast), so the check costs no branch either way.
  std::array<std::uint8_t, 4> ipv4_bcast{};
  std::array<std::uint8_t, 4> ipv4_net{};
  // Our receiver identity (crypto::receiver_of this address and port): a
  // datagram sealed for anyone else is refused.
  crypto::Receiver receiver;
};

// Parses an IPv4/IPv6 literal (and derives its receiver identity); false if
// it is neither.
bool parse_endpoint(const char* address, std::uint16_t port, LocalEndpoint* out) noexcept;

// Our IPv4 subnet from node.prefix_len (0: unknown): its broadcast and
// network addresses become martian sources. Any thread, before the workers run.
void set_ipv4_subnet(LocalEndpoint* ep, unsigned prefix_len) noexcept;

// Everything the ladder reads, fixed for the life of a snapshot.
struct LadderConfig {
  LocalEndpoint local;
  std::uint64_t cluster_id = 0;
  std::uint32_t max_payload_bytes = config::LimitsConfig{}.max_payload_bytes;
  const crypto::Keyring* keys = nullptr;
  // Header timestamps more than this many seconds from our clock are stale.
  std::uint32_t replay_window_s = config::LimitsConfig{}.replay_window_s;
  // Header timestamps before this Unix second are refused (before-start):
  // this gateway's start, so that what an earlier run of it accepted (its
  // replay windows are gone) cannot be accepted again. 0: no watermark.
  std::uint32_t not_before_s = 0;
};

// The per-lcore, mutable side of the ladder (steps 6 and 7) and the clock it
// reads, set once per burst by the worker (a fake in tests). Null tables and
// no clock skip their step: the stateless run_ladder() below uses that.
struct LadderState {
  bool have_clock = false;
  std::uint32_t now_s = 0;  // wall clock, Unix seconds (timestamp window)
  // Seconds the wall clock was stepped since start (WallClockFollower): the
  // restart watermark (LadderConfig::not_before_s) moves with it, since it
  // marks the instant this gateway started, not a reading of its clock.
  std::int32_t wall_step_s = 0;
  std::uint64_t now_ns = 0;  // monotonic nanoseconds (token buckets)
  ReplayTable* replay = nullptr;
  RateLimiter* rate = nullptr;
  FailedHeaders* failed = nullptr;  // headers whose AEAD failed (replay.h)
  // Who the control plane knows; null: every source is unknown.
  const DataplaneSnapshot* snapshot = nullptr;
};

// What step 1 learns about a datagram addressed to us. The source address is
// left in the frame: it is copied out only for packets that get past the
// header MAC, so a flood never pays for it.
struct UdpView {
  std::uint32_t payload_offset = 0;
  std::uint32_t payload_len = 0;
  const std::uint8_t* src_ip = nullptr;  // in the frame (not authenticated)
  std::uint8_t src_ip_len = 0;           // 4 or 16
  std::uint16_t src_port = 0;            // host byte order

  Endpoint from() const noexcept;
};

struct LadderResult {
  Verdict verdict = Verdict::kMalformed;
  crypto::PriorityClass cls = crypto::PriorityClass::kBulk;
  // For accepted packets: where the plaintext lies in the frame, and who sent it.
  // For unkeyed packets: the UDP payload instead (what the classifier scans).
  std::uint32_t plaintext_offset = 0;
  std::uint32_t plaintext_len = 0;
  Endpoint from;
  std::uint32_t key_id = 0;  // the key that opened it
  ReplayStamp stamp;         // its nonce and timestamp, for the control lcore's once-only check
};

// Step 1 only: on success returns kAccepted and fills `out`. A fast path
// takes untagged IPv4 without options (two 16-byte compares and the
// lengths); everything else goes to parse_l2_l4_general, which gives the
// same answer for what the fast path takes (tested frame by frame, and in
// fuzz_ladder).
inline Verdict parse_l2_l4_general(const LocalEndpoint& local, const std::uint8_t* frame, std::uint32_t len,
                                   UdpView* out) noexcept;
inline Verdict parse_l2_l4(const LocalEndpoint& local, const std::uint8_t* frame, std::uint32_t len,
                           UdpView* out) noexcept;

// Steps 1 to 4 (and 5, the header MAC, separately) for callers that check
// the MACs of a whole burst side by side (crypto::siphash24_40_batch).
struct LadderFront {
  UdpView udp;
  const crypto::Key* key = nullptr;  // the key the header names
  std::uint8_t* dgram = nullptr;     // the datagram (header) in the frame
};

// What steps 1-4 decide. Small on purpose: the worker gets one per packet,
// and a whole LadderResult, zeroed per packet, cost more than the checks.
struct FrontResult {
  Verdict verdict = Verdict::kMalformed;
  // For kUnkeyed: the UDP payload (what the classifier scans); for
  // kUnknownKey: the datagram (its header names the key id we lack).
  std::uint32_t payload_offset = 0;
  std::uint32_t payload_len = 0;
};

// Steps 1-4. kAccepted means the packet names one of our keys and `out` is
// filled: its header MAC (out->key over out->dgram) must be checked next.
// Any other verdict is final.
inline FrontResult ladder_front(const LadderConfig& cfg, std::uint8_t* frame, std::uint32_t len,
                                LadderFront* out) noexcept;

// Steps 6-8 for a packet whose header MAC verified: the verdict run_ladder
// would give. Only kAccepted writes `out` (what run_ladder would return): a
// dropped packet costs no result struct.
inline Verdict ladder_back(const LadderConfig& cfg, LadderState& st, const LadderFront& f, LadderResult* out) noexcept;

// The whole ladder. Decrypts in place: on kAccepted the plaintext replaces the
// ciphertext in `frame`, and the nonce is committed to `st.replay`.
inline LadderResult run_ladder(const LadderConfig& cfg, LadderState& st, std::uint8_t* frame,
                               std::uint32_t len) noexcept;

// Stateless: steps 6 and 7 skipped (no clock, no tables). For tools, tests
// and fuzzers that look at single frames; never the worker.
LadderResult run_ladder(const LadderConfig& cfg, std::uint8_t* frame, std::uint32_t len) noexcept;

}  // namespace gw::dp

#include "dataplane/ladder_inl.h"  // IWYU pragma: export
