// Cluster keys, the keyring, key files and cluster ids. libsodium, and
// ipsec-mb for AES-256-GCM (crypto/aes_gcm.h).
//
// A key file holds exactly 32 random bytes and must be readable by its owner
// only. Everything a node uses is derived from it with keyed BLAKE2b and a
// distinct label, so the raw key never touches two primitives:
//   key id   = first 4 bytes of BLAKE2b(key, "gossipgw/key-id/v1")
//   MAC key  = BLAKE2b-128(key, "gossipgw/mac1/v1")  (SipHash-2-4 header MAC)
//   AEAD key = BLAKE2b-256(key, "gossipgw/aead/v1")
//
// Nonce budget and rotation: nonces are an 8-byte random epoch drawn at boot
// (and again whenever the 4-byte counter wraps) followed by the counter, so one
// sender never repeats a nonce and two senders collide only if they draw the
// same epoch. With E epochs drawn under one key the chance of any collision is
// below E^2 / 2^65. Rotate a key before the cluster has drawn 2^20 epochs under
// it (about a million node starts; collision chance below 2^-25) and in any case
// before it has sealed 2^48 messages. A 10,000-node cluster that restarts every
// node daily reaches 2^20 epochs in about 100 days: rotate at least quarterly.
#pragma once

#include <sodium.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "crypto/aes_gcm.h"
#include "crypto/siphash.h"
#include "crypto/wire_header.h"

namespace gw::crypto {

inline constexpr std::size_t kKeyBytes = 32;
using KeyBytes = std::array<std::uint8_t, kKeyBytes>;

// Initialises libsodium. Call once at start-up before anything else here;
// returns false if the library cannot be initialised.
bool init() noexcept;

// True when this CPU can run AES-256-GCM (AES-NI and PCLMULQDQ), through
// ipsec-mb or libsodium.
bool aes256gcm_available() noexcept;

// The cleartext cluster id: first 8 bytes of BLAKE2b("gossipgw/cluster-id/v1" || name).
std::uint64_t derive_cluster_id(std::string_view cluster_name) noexcept;

std::uint32_t derive_key_id(const KeyBytes& key) noexcept;

// A key id as operators see it (gossipctl keyid, keys list, logs): 8 lowercase hex digits.
std::string key_id_text(std::uint32_t id);

// The receiver identity of a UDP endpoint (wire_header.h, Receiver): `ip` is
// 4 or 16 bytes in network order, `port` in host order. The tag is the first
// 2 bytes of BLAKE2b("gossipgw/receiver/v1" || ad). Not secret.
Receiver receiver_of(const std::uint8_t* ip, std::size_t ip_len, std::uint16_t port) noexcept;

// One key, with its derived material and precomputed AEAD state: for
// AES-256-GCM the round keys and GHASH powers are expanded once, here, when
// the key is installed, and wiped when the Key is destroyed or overwritten.
class alignas(64) Key {
 public:
  Key() = default;
  // Throws std::invalid_argument if `suite` is AES-256-GCM and the CPU cannot
  // run it (or cannot run `impl`, when that names one implementation).
  Key(const KeyBytes& key, Suite suite, AesGcmImpl impl = AesGcmImpl::kBest);
  Key(const Key&) = default;
  Key& operator=(const Key&) = default;
  ~Key();

  // What opens and seals an AES-256-GCM key (resolved, never kBest); kBest
  // for ChaCha20-Poly1305 keys, which always run on libsodium.
  AesGcmImpl aes_impl() const noexcept { return aes_impl_; }

  std::uint32_t id() const noexcept { return id_; }
  Suite suite() const noexcept { return suite_; }

  // SipHash-2-4 over the first kMacOffset header bytes.
  std::uint64_t header_mac(const std::uint8_t* header) const noexcept;
  // The MAC key as SipHash words (for siphash24_40_batch).
  const SipKey& mac_sip_key() const noexcept { return mac_sip_; }
  // Constant-time check of the MAC stored in a full header. Inline: the
  // worker runs it for every packet that names one of our keys.
  bool verify_header_mac(const std::uint8_t* header) const noexcept {
    static_assert(kMacOffset == 40, "siphash24_40 hashes exactly the 40 bytes before the MAC");
    // One 64-bit XOR and test: constant time, and far cheaper per packet than
    // a byte-wise compare (a forged flood pays this for every packet).
    return (siphash24_40(mac_sip_, header) ^ load_le64(header + kMacOffset)) == 0;
  }

  // Seals `len` bytes of `plaintext` into `out` (len + kTagBytes bytes),
  // authenticating the kHeaderBytes at `header` and the receiver `to`.
  // `out` may equal `plaintext`.
  void seal(const std::uint8_t* header, const Nonce& nonce, const std::uint8_t* plaintext, std::size_t len,
            std::uint8_t* out, const Receiver& to) const noexcept;

  // Opens `len` bytes (ciphertext || tag) in place, as receiver `me`; on
  // success the first len - kTagBytes bytes are the plaintext. On failure
  // (tampered, or sealed for another receiver) returns false and the buffer
  // content is unspecified.
  bool open_in_place(const std::uint8_t* header, const Nonce& nonce, std::uint8_t* data, std::size_t len,
                     const Receiver& me) const noexcept;

 private:
  std::uint32_t id_ = 0;
  Suite suite_ = Suite::kChaCha20Poly1305;
  std::array<std::uint8_t, crypto_shorthash_siphash24_KEYBYTES> mac_key_{};
  SipKey mac_sip_;  // mac_key_ as SipHash words, for verify_header_mac
  std::array<std::uint8_t, kKeyBytes> aead_key_{};
  AesGcmImpl aes_impl_ = AesGcmImpl::kBest;
  crypto_aead_aes256gcm_state aes_state_{};  // kLibsodium
  IpsecMbGcm gcm_{};                         // kIpsecMb
};

class KeyError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The keys a node holds: one primary that seals what it sends, and others still
// accepted while a rotation is under way. A value type: the control plane builds
// a new ring and publishes it; workers never see one change under them.
class Keyring {
 public:
  static constexpr std::size_t kMaxKeys = 8;

  // Throws KeyError if the id is already present or the ring is full.
  void add(const Key& key, bool primary);
  // Throws KeyError if the id is unknown.
  void set_primary(std::uint32_t id);
  // Throws KeyError if the id is unknown or is the primary.
  void remove(std::uint32_t id);

  // Hot path: a linear scan over at most kMaxKeys ids. One key id means one
  // AEAD attempt, never "try every key".
  const Key* find(std::uint32_t id) const noexcept {
    for (std::size_t i = 0; i < count_; ++i) {
      if (keys_[i].id() == id) return &keys_[i];
    }
    return nullptr;
  }
  const Key* primary() const noexcept { return find(primary_id_); }
  std::size_t size() const noexcept { return count_; }
  std::vector<std::uint32_t> ids() const;

 private:
  std::array<Key, kMaxKeys> keys_{};
  std::size_t count_ = 0;
  std::uint32_t primary_id_ = 0;
  bool has_primary_ = false;
};

// Reads a key file. Throws KeyError naming the file if it is missing,
// unreadable, not a regular file, accessible by group or others, or not
// exactly kKeyBytes long.
KeyBytes load_key_file(const std::string& path);

// Writes a new random key to `path` with mode 0600 and returns its id. Refuses
// to replace an existing file unless `overwrite`. Throws KeyError on failure.
std::uint32_t write_key_file(const std::string& path, bool overwrite);

}  // namespace gw::crypto
