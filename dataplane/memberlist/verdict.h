// Verdicts of the memberlist packet inspector (inspect.h): one per UDP
// packet, each with one counter, cheapest check first, like the native
// ladder's (dataplane/api/verdict.h). `mode: memberlist` exports them
// (gossipgw_ml_inspect_total{verdict}, stats JSON `ml.<name>`).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace gw::dp::ml {

enum class Verdict : std::uint8_t {
  kAccepted,           // opened by a key of the keyring (or a plaintext cluster) and every check passed
  kAcceptedPlaintext,  // not opened by any key, read as plaintext because allow_plaintext (rollout)
  kTooShort,           // empty, or shorter than the smallest sealed packet of its version
  kTooLong,            // longer than config.max_packet
  kBadLabel,           // label header malformed, missing, unexpected, or not ours
  kPlaintext,          // a keyring is set and the version byte is not 0 or 1 (plaintext or garbage)
  kBadAuth,            // no key of the keyring opened it
  kBadPadding,         // version 0: PKCS7 padding that lies (would panic memberlist's pkcs7decode)
  kBadCrc,             // CRC32 wrapper whose checksum does not match
  kBadCompression,     // compress wrapper: not LZW, or an LZW stream that is corrupt or does not end
  kInflateLimit,       // decompressed size over config.max_inflated
  kBadCompound,        // compound: no parts, lengths past the end, an empty part, bytes left over
  kNesting,            // a wrapper where memberlist never puts one (CRC inside, compress in a compound, ...)
  kMalformed,          // msgpack that lies, a field of the wrong type or range, a struct as an array, ...
  kUnexpectedType,     // a message type memberlist does not take over UDP (push-pull, err, encrypt, unknown)
  kProbeCount,         // more than config.max_probe_messages ping/indirect-ping/ack/nack, or one not first
  kProbeSource,        // a ping's reply address is neither the sender nor a known member
  kProbeTarget,        // an indirect ping's target is not a known member
  kBadVsn,             // an alive whose Vsn has neither 0 nor 6 entries (crashes memberlist 0.2.2)
  kNameTooLong,        // Node, From or SourceNode longer than config.max_name
};
inline constexpr std::size_t kVerdictCount = 20;

// Counter names, stable: filter mode exports them (docs/filter-mode.md).
inline constexpr std::array<std::string_view, kVerdictCount> kVerdictNames = {
    "ml_accepted",          "ml_accepted_plaintext",   "ml_drop_too_short",       "ml_drop_too_long",
    "ml_drop_label",        "ml_drop_plaintext",       "ml_drop_bad_auth",        "ml_drop_bad_padding",
    "ml_drop_bad_crc",      "ml_drop_bad_compression", "ml_drop_inflate_limit",   "ml_drop_bad_compound",
    "ml_drop_nesting",      "ml_drop_malformed",       "ml_drop_unexpected_type", "ml_drop_probe_count",
    "ml_drop_probe_source", "ml_drop_probe_target",    "ml_drop_bad_vsn",         "ml_drop_name_too_long",
};

constexpr std::string_view verdict_name(Verdict v) { return kVerdictNames[static_cast<std::size_t>(v)]; }
constexpr bool accepted(Verdict v) { return v == Verdict::kAccepted || v == Verdict::kAcceptedPlaintext; }

// memberlist's message type bytes (net.go; the numbers are the protocol).
enum class MsgType : std::uint8_t {
  kPing = 0,
  kIndirectPing = 1,
  kAck = 2,
  kSuspect = 3,
  kAlive = 4,
  kDead = 5,
  kPushPull = 6,
  kCompound = 7,
  kUser = 8,
  kCompress = 9,
  kEncrypt = 10,
  kNack = 11,
  kHasCrc = 12,
  kErr = 13,
};
inline constexpr std::uint8_t kLabelByte = 244;  // hasLabelMsg (memberlist >= 0.3)

}  // namespace gw::dp::ml
