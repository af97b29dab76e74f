// AES-256-GCM through the Intel ipsec-mb library's direct GCM API (issue 19).
//
// libsodium's AES-256-GCM opens a 512-byte datagram about 4 x slower than
// ipsec-mb's VAES/AVX-512 code on the same core, so the aes256gcm suite runs
// on ipsec-mb wherever the CPU has AES-NI and PCLMULQDQ; libsodium stays for
// ChaCha20-Poly1305 and as the reference AES-256-GCM that tests hold
// ipsec-mb to, byte for byte. The wire format is the same (RFC 5116
// AEAD_AES_256_GCM: 12-byte nonce, 16-byte tag appended to the ciphertext).
//
// The implementation is chosen once per process from the CPU flags
// (init_mb_mgr_auto: SSE, AVX, AVX2 or AVX-512, with VAES/VPCLMULQDQ where
// present). The manager is only a table of function pointers after that; a
// key copies the two it needs, so workers never touch it on the packet path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace gw::crypto {

// Which code seals and opens AES-256-GCM for a key.
enum class AesGcmImpl : std::uint8_t {
  kBest,       // ipsec-mb where it runs on this CPU, else libsodium
  kLibsodium,  // crypto_aead_aes256gcm_*_afternm (tests, and CPUs ipsec-mb cannot use)
  kIpsecMb,    // ipsec-mb's direct API; a Key asking for it throws if unavailable
};

// The precomputed key (round keys and GHASH powers) and the two functions a
// key calls. Opaque here so that only aes_gcm.cc includes intel-ipsec-mb.h.
struct IpsecMbGcm {
  using EncDec = void (*)(const void* key, void* ctx, std::uint8_t* out, const std::uint8_t* in, std::uint64_t len,
                          const std::uint8_t* iv, const std::uint8_t* aad, std::uint64_t aad_len, std::uint8_t* tag,
                          std::uint64_t tag_len);
  // Sized and aligned as ipsec-mb 1.3's struct gcm_key_data (aes_gcm.cc checks).
  alignas(64) std::uint8_t key_data[1024];
  EncDec enc = nullptr;
  EncDec dec = nullptr;
};

// True when ipsec-mb initialised with an AES-NI code path on this CPU.
bool ipsecmb_gcm_available() noexcept;

// Expands `key` (32 bytes) into `out` and picks the functions. Returns false
// (and leaves `out` cleared) when ipsec-mb is unavailable.
bool ipsecmb_gcm_expand(const std::uint8_t* key, IpsecMbGcm* out) noexcept;

// Expands an AES key of 16, 24 or 32 bytes (AES-128/192/256-GCM, the key
// sizes HashiCorp memberlist accepts) into `out`. Returns false (and leaves
// `out` cleared) for another length or when ipsec-mb is unavailable.
bool ipsecmb_gcm_expand_len(const std::uint8_t* key, std::size_t key_len, IpsecMbGcm* out) noexcept;

// Seals `len` bytes of `in` to `out` (may equal `in`) and writes the 16-byte
// tag at `tag`. `k` must have been expanded.
void ipsecmb_gcm_seal(const IpsecMbGcm& k, const std::uint8_t* nonce12, const std::uint8_t* aad, std::size_t aad_len,
                      const std::uint8_t* in, std::size_t len, std::uint8_t* out, std::uint8_t* tag) noexcept;

// Opens `len` ciphertext bytes in place and checks them against the 16-byte
// `tag` in constant time. On failure the buffer is wiped (nothing
// unauthenticated stays readable) and false is returned.
bool ipsecmb_gcm_open(const IpsecMbGcm& k, const std::uint8_t* nonce12, const std::uint8_t* aad, std::size_t aad_len,
                      std::uint8_t* data, std::size_t len, const std::uint8_t* tag) noexcept;

// Opens `len` ciphertext bytes of `in` into `out` (the two must not
// overlap), leaving `in` untouched: for a filter that forwards the packet it
// inspects unchanged. Same tag check and wipe of `out` on failure as
// ipsecmb_gcm_open.
bool ipsecmb_gcm_open_to(const IpsecMbGcm& k, const std::uint8_t* nonce12, const std::uint8_t* aad, std::size_t aad_len,
                         const std::uint8_t* in, std::size_t len, std::uint8_t* out, const std::uint8_t* tag) noexcept;

// CRC-32 of IEEE 802.3 (zlib's crc32, Go's crc32.ChecksumIEEE) through
// ipsec-mb's folded PCLMULQDQ code, with a bytewise table where ipsec-mb has
// no manager.
std::uint32_t crc32_ieee(const std::uint8_t* data, std::size_t len) noexcept;

// Wipes the expanded key (ipsec-mb's imb_clear_mem, which the compiler may
// not elide).
void ipsecmb_gcm_clear(IpsecMbGcm* k) noexcept;

// What seals the aes256gcm suite here, for the startup log and gossipctl
// info: e.g. "ipsec-mb 1.3.0 avx512 (vaes, vpclmulqdq)" or "libsodium (aesni)".
std::string aes256gcm_impl_name();
// What seals chacha20poly1305: libsodium and the instruction set it picked.
std::string chacha20poly1305_impl_name();

}  // namespace gw::crypto
