// Verdicts of the check ladder (DESIGN.md). Every received packet gets exactly
// one, and increments exactly one counter named after it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace gw::dp {

enum class Verdict : std::uint8_t {
  kAccepted,         // opened and handed to the control lcore
  kNotGossip,        // not UDP to our address and port (ARP, other ports, ...)
  kMalformed,        // lengths or fields that lie; fragments; multi-segment frames
  kUnkeyed,          // no gossipgw header: too short, wrong magic or version
  kForeignCluster,   // another cluster's id
  kUnknownKey,       // key id (and suite) not in our keyring
  kBadMac,           // header MAC wrong: forged without the key
  kStale,            // header timestamp outside limits.replay_window_s of our clock
  kReplay,           // nonce already seen, or older than the sender's window
  kRateLimited,      // the source's token bucket was empty
  kBadAuth,          // AEAD open failed: tampered or forged with the key id
  kRingFull,         // the control lcore's ring for its class was full
  kAuthRetry,        // a header whose AEAD already failed here: not tried again
  kReplayTableFull,  // a new sender while limits.replay_senders windows are live
  kBeforeStart,      // header timestamp older than this gateway's start
  kWrongReceiver,    // sealed for another receiver (the header's receiver tag)
  kMartian,          // IP source that no member can have: ours, broadcast, multicast, 0/8, loopback
};
inline constexpr std::size_t kVerdictCount = 17;

// Counter names, stable: they are exported and documented.
inline constexpr std::array<std::string_view, kVerdictCount> kVerdictNames = {
    "accepted",
    "drop_not_gossip",
    "drop_malformed",
    "drop_unkeyed",
    "drop_foreign_cluster",
    "drop_unknown_key",
    "drop_bad_mac",
    "drop_stale",
    "drop_replay",
    "drop_rate_limited",
    "drop_bad_auth",
    "drop_ring_full",
    "drop_auth_retry",
    "drop_replay_table_full",
    "drop_before_start",
    "drop_wrong_receiver",
    "drop_martian",
};

constexpr std::string_view verdict_name(Verdict v) { return kVerdictNames[static_cast<std::size_t>(v)]; }

inline constexpr std::array<std::string_view, 4> kClassNames = {"urgent", "probe", "gossip", "bulk"};

}  // namespace gw::dp
