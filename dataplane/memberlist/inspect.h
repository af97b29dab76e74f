// Inspects one HashiCorp memberlist (Serf, Consul, Nomad) UDP gossip packet
// and returns a verdict: the per-packet core of the gateway's
// `mode: memberlist` (issue 54). The frame filter (filter.h) calls it once per
// gossip UDP payload that passed the allow-list and the source's token
// bucket, and counts the verdict (docs/filter-mode.md).
//
// The packet, as memberlist (0.2.2 to 0.6) reads it (net.go ingestPacket):
//
//   [0xF4 len label]            optional label header (>= 0.3); the label is the AES-GCM AAD
//   [vsn nonce(12) ct tag(16)]  when the cluster has a keyring: vsn 0 = PKCS7 padded, 1 = not
//   [0x0C crc32-be(4)]          optional CRC of the rest
//   [0x09 {Algo, Buf}]          optional LZW-compressed command
//   [0x07 n len(2)*n parts]     optional compound of n <= 255 messages
//   type byte + msgpack map     ping, indirect ping, ack, nack, suspect, alive, dead; user: Serf's bytes
//
// Checks run cheapest first and the first failure decides: length, label,
// version byte, one AES-GCM open per key (primary first), padding, CRC, LZW
// within config.max_inflated, compound framing, then each message in packet
// order: the probe rule (at most max_probe_messages ping/indirect ping/ack/
// nack, first), the msgpack read with bounds, and the message's own rules.
//
// Hot-path contract: no allocation, no exception, no log line, no lock; the
// decrypted and decompressed bytes go to the caller's Scratch (one per
// worker). The packet itself is never written: an accepted packet goes on to
// the agent unchanged.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "base/endpoint.h"
#include "dataplane/memberlist/keyring.h"
#include "dataplane/memberlist/lzw.h"
#include "dataplane/memberlist/verdict.h"

namespace gw::dp::ml {

// Is `a` (IPv4 as 4 bytes, IPv4-mapped IPv6 already folded to 4) the gossip
// address of a member the gateway knows? Called on the worker: must not
// block or allocate (a lookup in an immutable snapshot).
using KnownMemberFn = bool (*)(const void* ctx, const base::Address& a) noexcept;

struct Config {
  // The cluster's label (memberlist Config.Label, Consul's -segment/partition
  // label); empty: packets must carry no label header.
  std::string_view label;
  // The cluster's keys; nullptr or empty: a plaintext cluster (no open).
  const Keyring* keyring = nullptr;
  // Encryption rollout (memberlist GossipVerifyIncoming=false): a packet no
  // key opens is read as plaintext, and if it passes, counted
  // ml_accepted_plaintext. Off: it is ml_drop_plaintext / ml_drop_bad_auth.
  bool allow_plaintext = false;
  std::size_t max_packet = 65507;        // bytes of UDP payload (IPv4's maximum)
  std::size_t max_inflated = 64 * 1024;  // bytes a compressed command may expand to
  std::size_t max_name = 128;            // bytes of Node, From, SourceNode
  std::size_t max_meta = 512;            // bytes of an alive's Meta (memberlist's MetaMaxSize)
  unsigned max_probe_messages = 1;       // ping, indirect ping, ack, nack per packet (memberlist sends one)
  // The agent's gossip port: where an indirect ping with Port 0 is sent (memberlist's BindPort).
  std::uint16_t agent_port = 7946;
  // Known-member lookup for ping reply addresses and indirect-ping targets;
  // nullptr: no member is known, a ping may only ask for a reply to its
  // sender, and indirect-ping targets are not checked.
  KnownMemberFn is_known_member = nullptr;
  const void* member_ctx = nullptr;
};

// Per-worker buffers, allocated once (not on the packet path).
class Scratch {
 public:
  explicit Scratch(const Config& c)
      : plain_cap_(c.max_packet),
        inflated_cap_(c.max_inflated),
        plain_(new std::uint8_t[c.max_packet]),
        inflated_(new std::uint8_t[c.max_inflated == 0 ? 1 : c.max_inflated]),
        lzw_(new LzwTables) {}

  std::size_t plain_cap() const noexcept { return plain_cap_; }
  std::size_t inflated_cap() const noexcept { return inflated_cap_; }
  std::uint8_t* plain() noexcept { return plain_.get(); }
  std::uint8_t* inflated() noexcept { return inflated_.get(); }
  LzwTables* lzw() noexcept { return lzw_.get(); }

 private:
  std::size_t plain_cap_;
  std::size_t inflated_cap_;
  std::unique_ptr<std::uint8_t[]> plain_;
  std::unique_ptr<std::uint8_t[]> inflated_;
  std::unique_ptr<LzwTables> lzw_;
};

struct Result {
  Verdict verdict = Verdict::kMalformed;
  std::int8_t key_index = -1;  // the keyring index that opened it; -1: none (plaintext)
  bool crc = false;            // had a CRC wrapper
  bool compressed = false;     // had a compress wrapper
  std::uint16_t messages = 0;  // messages read (compound parts count one each)
  std::uint16_t types = 0;     // bit (1 << MsgType) per type of message read
};

// Inspects `len` bytes of UDP payload from `source` (its IP folded like
// KnownMemberFn's, and its UDP port). Any thread with its own Scratch.
Result inspect(const std::uint8_t* pkt, std::size_t len, const base::Address& source, const Config& cfg,
               Scratch& scratch) noexcept;

// The checks of inspect() that need no key, no state and no copy, and read
// only the packet's first bytes: length, label, and (with a keyring, unless
// cfg.allow_plaintext) the version byte and the smallest sealed size. Gives
// the verdict inspect() would give for a packet they refuse, kAccepted
// otherwise (inspect() may still refuse it). The filter runs it before the
// source's token bucket, cheapest check first: a plaintext, mislabelled or
// empty flood into an encrypted cluster costs no bucket lookup.
Verdict envelope(const std::uint8_t* pkt, std::size_t len, const Config& cfg) noexcept;

// `a` with an IPv4-mapped IPv6 address (::ffff:a.b.c.d) folded to 4 bytes.
base::Address fold_v4_mapped(const base::Address& a) noexcept;

}  // namespace gw::dp::ml
