#include "crypto/aes_gcm.h"

#include <intel-ipsec-mb.h>
#include <sodium.h>

#include <cstring>

namespace gw::crypto {
namespace {

static_assert(sizeof(gcm_key_data) <= sizeof(IpsecMbGcm{}.key_data), "IpsecMbGcm::key_data too small");
static_assert(alignof(gcm_key_data) <= alignof(IpsecMbGcm), "IpsecMbGcm under-aligned");
static_assert(sizeof(IpsecMbGcm::EncDec) == sizeof(aes_gcm_enc_dec_t));

// The process's ipsec-mb manager: written once, on first use (a C++ static
// with its own guard), read-only after that.
struct Manager {
  IMB_MGR* mgr = nullptr;
  IMB_ARCH arch = IMB_ARCH_NONE;
  std::uint64_t features = 0;
  bool usable = false;

  Manager() {
    mgr = alloc_mb_mgr(0);
    if (mgr == nullptr) return;
    init_mb_mgr_auto(mgr, &arch);
    features = mgr->features;
    constexpr std::uint64_t kNeed = IMB_FEATURE_AESNI | IMB_FEATURE_PCLMULQDQ;
    // IMB_ARCH_NOAESNI emulates AES in software: libsodium's ChaCha20 is faster.
    usable = arch != IMB_ARCH_NONE && arch != IMB_ARCH_NOAESNI && (features & kNeed) == kNeed &&
             mgr->gcm256_pre != nullptr && mgr->gcm256_enc != nullptr && mgr->gcm256_dec != nullptr;
  }
  ~Manager() {
    if (mgr != nullptr) free_mb_mgr(mgr);
  }
  Manager(const Manager&) = delete;
  Manager& operator=(const Manager&) = delete;
};

const Manager& manager() {
  static const Manager m;
  return m;
}

const char* arch_name(IMB_ARCH a) {
  switch (a) {
    case IMB_ARCH_NOAESNI:
      return "no-aesni";
    case IMB_ARCH_SSE:
      return "sse";
    case IMB_ARCH_AVX:
      return "avx";
    case IMB_ARCH_AVX2:
      return "avx2";
    case IMB_ARCH_AVX512:
      return "avx512";
    default:
      return "none";
  }
}

}  // namespace

bool ipsecmb_gcm_available() noexcept { return manager().usable; }

bool ipsecmb_gcm_expand(const std::uint8_t* key, IpsecMbGcm* out) noexcept {
  ipsecmb_gcm_clear(out);
  const Manager& m = manager();
  if (!m.usable) return false;
  m.mgr->gcm256_pre(key, reinterpret_cast<gcm_key_data*>(out->key_data));
  // ipsec-mb's functions take typed pointers; ours are the same ABI with
  // void* for the two opaque structs.
  out->enc = reinterpret_cast<IpsecMbGcm::EncDec>(m.mgr->gcm256_enc);
  out->dec = reinterpret_cast<IpsecMbGcm::EncDec>(m.mgr->gcm256_dec);
  return true;
}

bool ipsecmb_gcm_expand_len(const std::uint8_t* key, std::size_t key_len, IpsecMbGcm* out) noexcept {
  ipsecmb_gcm_clear(out);
  const Manager& m = manager();
  if (!m.usable) return false;
  aes_gcm_pre_t pre = nullptr;
  aes_gcm_enc_dec_t enc = nullptr;
  aes_gcm_enc_dec_t dec = nullptr;
  switch (key_len) {
    case 16:
      pre = m.mgr->gcm128_pre, enc = m.mgr->gcm128_enc, dec = m.mgr->gcm128_dec;
      break;
    case 24:
      pre = m.mgr->gcm192_pre, enc = m.mgr->gcm192_enc, dec = m.mgr->gcm192_dec;
      break;
    case 32:
      pre = m.mgr->gcm256_pre, enc = m.mgr->gcm256_enc, dec = m.mgr->gcm256_dec;
      break;
    default:
      return false;
  }
  if (pre == nullptr || enc == nullptr || dec == nullptr) return false;
  pre(key, reinterpret_cast<gcm_key_data*>(out->key_data));
  out->enc = reinterpret_cast<IpsecMbGcm::EncDec>(enc);
  out->dec = reinterpret_cast<IpsecMbGcm::EncDec>(dec);
  return true;
}

void ipsecmb_gcm_seal(const IpsecMbGcm& k, const std::uint8_t* nonce12, const std::uint8_t* aad, std::size_t aad_len,
                      const std::uint8_t* in, std::size_t len, std::uint8_t* out, std::uint8_t* tag) noexcept {
  gcm_context_data ctx;  // per call, on the stack: the key is shared read-only
  const auto enc = reinterpret_cast<aes_gcm_enc_dec_t>(k.enc);
  enc(reinterpret_cast<const gcm_key_data*>(k.key_data), &ctx, out, in, len, nonce12, aad, aad_len, tag, 16);
}

bool ipsecmb_gcm_open(const IpsecMbGcm& k, const std::uint8_t* nonce12, const std::uint8_t* aad, std::size_t aad_len,
                      std::uint8_t* data, std::size_t len, const std::uint8_t* tag) noexcept {
  // One pass decrypts and computes the tag; it is compared afterwards in
  // constant time, and a forgery's decryption is wiped.
  gcm_context_data ctx;
  std::uint8_t computed[16];
  const auto dec = reinterpret_cast<aes_gcm_enc_dec_t>(k.dec);
  dec(reinterpret_cast<const gcm_key_data*>(k.key_data), &ctx, data, data, len, nonce12, aad, aad_len, computed,
      sizeof computed);
  // Constant time: two 64-bit XORs ORed, one test (libsodium's
  // crypto_verify_16, a byte loop through volatile, took 13 % of a 128-byte
  // open here).
  std::uint64_t c0, c1, t0, t1;
  std::memcpy(&c0, computed, 8);
  std::memcpy(&c1, computed + 8, 8);
  std::memcpy(&t0, tag, 8);
  std::memcpy(&t1, tag + 8, 8);
  const bool ok = ((c0 ^ t0) | (c1 ^ t1)) == 0;
  if (!ok) sodium_memzero(data, len);
  sodium_memzero(&ctx, sizeof ctx);
  return ok;
}

bool ipsecmb_gcm_open_to(const IpsecMbGcm& k, const std::uint8_t* nonce12, const std::uint8_t* aad, std::size_t aad_len,
                         const std::uint8_t* in, std::size_t len, std::uint8_t* out, const std::uint8_t* tag) noexcept {
  gcm_context_data ctx;
  std::uint8_t computed[16];
  const auto dec = reinterpret_cast<aes_gcm_enc_dec_t>(k.dec);
  dec(reinterpret_cast<const gcm_key_data*>(k.key_data), &ctx, out, in, len, nonce12, aad, aad_len, computed,
      sizeof computed);
  std::uint64_t c0, c1, t0, t1;
  std::memcpy(&c0, computed, 8);
  std::memcpy(&c1, computed + 8, 8);
  std::memcpy(&t0, tag, 8);
  std::memcpy(&t1, tag + 8, 8);
  const bool ok = ((c0 ^ t0) | (c1 ^ t1)) == 0;
  if (!ok) sodium_memzero(out, len);
  sodium_memzero(&ctx, sizeof ctx);
  return ok;
}

std::uint32_t crc32_ieee(const std::uint8_t* data, std::size_t len) noexcept {
  const Manager& m = manager();
  if (m.mgr != nullptr && m.mgr->crc32_ethernet_fcs != nullptr) return m.mgr->crc32_ethernet_fcs(data, len);
  // Reflected polynomial 0xEDB88320, one bit at a time: only where ipsec-mb
  // could not even allocate its manager.
  std::uint32_t crc = 0xFFFFFFFFu;
  for (std::size_t i = 0; i < len; ++i) {
    crc ^= data[i];
    for (int b = 0; b < 8; ++b) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

void ipsecmb_gcm_clear(IpsecMbGcm* k) noexcept {
  imb_clear_mem(k->key_data, sizeof k->key_data);
  k->enc = nullptr;
  k->dec = nullptr;
}

std::string aes256gcm_impl_name() {
  const Manager& m = manager();
  if (m.usable) {
    std::string s = std::string("ipsec-mb ") + IMB_VERSION_STR + " " + arch_name(m.arch);
    std::string extra;
    if ((m.features & IMB_FEATURE_VAES) != 0) extra += "vaes";
    if ((m.features & IMB_FEATURE_VPCLMULQDQ) != 0) extra += extra.empty() ? "vpclmulqdq" : ", vpclmulqdq";
    if (!extra.empty()) s += " (" + extra + ")";
    return s;
  }
  if (crypto_aead_aes256gcm_is_available() == 1) return "libsodium (aesni, pclmul)";
  return "unavailable (no AES-NI/PCLMULQDQ)";
}

std::string chacha20poly1305_impl_name() {
  std::string s = std::string("libsodium ") + sodium_version_string();
  // libsodium picks its ChaCha20 code from these at sodium_init() (it has
  // no AVX-512 ChaCha20); Poly1305 runs on SSE2 wherever x86-64 does.
  if (sodium_runtime_has_avx2() == 1) return s + " (chacha20 avx2, poly1305 sse2)";
  if (sodium_runtime_has_ssse3() == 1) return s + " (chacha20 ssse3, poly1305 sse2)";
  return s + " (portable)";
}

}  // namespace gw::crypto
