#include "crypto/keys.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace gw::crypto {
namespace {

constexpr std::string_view kKeyIdLabel = "gossipgw/key-id/v1";
constexpr std::string_view kMacLabel = "gossipgw/mac1/v1";
constexpr std::string_view kAeadLabel = "gossipgw/aead/v1";
constexpr std::string_view kClusterLabel = "gossipgw/cluster-id/v1";

const unsigned char* bytes(std::string_view s) noexcept { return reinterpret_cast<const unsigned char*>(s.data()); }

// Keyed BLAKE2b of a label: one derived secret per purpose.
template <std::size_t N>
std::array<std::uint8_t, N> derive(const KeyBytes& key, std::string_view label) noexcept {
  static_assert(N >= crypto_generichash_BYTES_MIN && N <= crypto_generichash_BYTES_MAX);
  std::array<std::uint8_t, N> out{};
  crypto_generichash(out.data(), N, bytes(label), label.size(), key.data(), key.size());
  return out;
}

std::string errno_text(int err) { return std::strerror(err); }

std::string octal_mode(mode_t mode) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(mode & 07777));
  return buf;
}

}  // namespace

bool init() noexcept { return sodium_init() >= 0; }

bool aes256gcm_available() noexcept { return ipsecmb_gcm_available() || crypto_aead_aes256gcm_is_available() == 1; }

std::uint64_t derive_cluster_id(std::string_view cluster_name) noexcept {
  crypto_generichash_state st;
  std::array<std::uint8_t, crypto_generichash_BYTES_MIN> digest{};
  crypto_generichash_init(&st, nullptr, 0, digest.size());
  crypto_generichash_update(&st, bytes(kClusterLabel), kClusterLabel.size());
  crypto_generichash_update(&st, bytes(cluster_name), cluster_name.size());
  crypto_generichash_final(&st, digest.data(), digest.size());
  std::uint64_t id = 0;
  for (int i = 0; i < 8; ++i) id = (id << 8) | digest[static_cast<std::size_t>(i)];
  return id;
}

std::uint32_t derive_key_id(const KeyBytes& key) noexcept {
  const auto d = derive<crypto_generichash_BYTES_MIN>(key, kKeyIdLabel);
  return (std::uint32_t{d[0]} << 24) | (std::uint32_t{d[1]} << 16) | (std::uint32_t{d[2]} << 8) | std::uint32_t{d[3]};
}

Key::Key(const KeyBytes& key, Suite suite, AesGcmImpl impl)
    : id_(derive_key_id(key)),
      suite_(suite),
      mac_key_(derive<crypto_shorthash_siphash24_KEYBYTES>(key, kMacLabel)),
      aead_key_(derive<kKeyBytes>(key, kAeadLabel)) {
  mac_sip_ = SipKey::from_bytes(mac_key_.data());
  if (suite_ == Suite::kAes256Gcm) {
    if (!aes256gcm_available()) {
      throw std::invalid_argument("AES-256-GCM is not available on this CPU (needs AES-NI and PCLMUL)");
    }
    if (impl == AesGcmImpl::kBest) {
      impl = ipsecmb_gcm_available() ? AesGcmImpl::kIpsecMb : AesGcmImpl::kLibsodium;
    }
    if (impl == AesGcmImpl::kIpsecMb) {
      if (!ipsecmb_gcm_expand(aead_key_.data(), &gcm_)) {
        throw std::invalid_argument("AES-256-GCM through ipsec-mb is not available on this CPU");
      }
    } else {
      if (crypto_aead_aes256gcm_is_available() != 1) {
        throw std::invalid_argument("libsodium's AES-256-GCM is not available on this CPU");
      }
      crypto_aead_aes256gcm_beforenm(&aes_state_, aead_key_.data());
    }
    aes_impl_ = impl;
  }
}

Key::~Key() {
  sodium_memzero(mac_key_.data(), mac_key_.size());
  sodium_memzero(&mac_sip_, sizeof mac_sip_);
  sodium_memzero(aead_key_.data(), aead_key_.size());
  sodium_memzero(&aes_state_, sizeof aes_state_);
  ipsecmb_gcm_clear(&gcm_);
}

std::uint64_t Key::header_mac(const std::uint8_t* header) const noexcept {
  std::array<std::uint8_t, crypto_shorthash_siphash24_BYTES> out{};
  crypto_shorthash_siphash24(out.data(), header, kMacOffset, mac_key_.data());
  std::uint64_t v = 0;
  for (std::uint8_t b : out) v = (v << 8) | b;
  return v;
}

namespace {

// The associated data: the header, then whom it is for (wire_header.h).
constexpr std::size_t kAdBytes = kHeaderBytes + kReceiverAdBytes;
using AdBuffer = std::array<std::uint8_t, kAdBytes>;

void build_ad(const std::uint8_t* header, const Receiver& r, AdBuffer& ad) noexcept {
  std::memcpy(ad.data(), header, kHeaderBytes);
  std::memcpy(ad.data() + kHeaderBytes, r.ad.data(), kReceiverAdBytes);
}

}  // namespace

Receiver receiver_of(const std::uint8_t* ip, std::size_t ip_len, std::uint16_t port) noexcept {
  static constexpr std::string_view kLabel = "gossipgw/receiver/v1";
  Receiver r;
  const std::size_t n = ip_len > 16 ? 16 : ip_len;
  r.ad[0] = static_cast<std::uint8_t>(n);
  std::memcpy(r.ad.data() + 1, ip, n);
  r.ad[17] = static_cast<std::uint8_t>(port >> 8);
  r.ad[18] = static_cast<std::uint8_t>(port);
  std::array<std::uint8_t, kLabel.size() + kReceiverAdBytes> in{};
  std::memcpy(in.data(), kLabel.data(), kLabel.size());
  std::memcpy(in.data() + kLabel.size(), r.ad.data(), kReceiverAdBytes);
  std::array<std::uint8_t, 16> h{};
  crypto_generichash(h.data(), h.size(), in.data(), in.size(), nullptr, 0);
  r.tag = static_cast<std::uint16_t>((h[0] << 8) | h[1]);
  return r;
}

void Key::seal(const std::uint8_t* header, const Nonce& nonce, const std::uint8_t* plaintext, std::size_t len,
               std::uint8_t* out, const Receiver& to) const noexcept {
  AdBuffer ad;
  build_ad(header, to, ad);
  unsigned long long out_len = 0;
  if (suite_ == Suite::kAes256Gcm && aes_impl_ == AesGcmImpl::kIpsecMb) {
    ipsecmb_gcm_seal(gcm_, nonce.data(), ad.data(), ad.size(), plaintext, len, out, out + len);
  } else if (suite_ == Suite::kAes256Gcm) {
    crypto_aead_aes256gcm_encrypt_afternm(out, &out_len, plaintext, len, ad.data(), ad.size(), nullptr, nonce.data(),
                                          &aes_state_);
  } else {
    crypto_aead_chacha20poly1305_ietf_encrypt(out, &out_len, plaintext, len, ad.data(), ad.size(), nullptr,
                                              nonce.data(), aead_key_.data());
  }
}

bool Key::open_in_place(const std::uint8_t* header, const Nonce& nonce, std::uint8_t* data, std::size_t len,
                        const Receiver& me) const noexcept {
  if (len < kTagBytes) return false;
  AdBuffer ad;
  build_ad(header, me, ad);
  unsigned long long out_len = 0;
  int rc;
  if (suite_ == Suite::kAes256Gcm && aes_impl_ == AesGcmImpl::kIpsecMb) {
    const std::size_t n = len - kTagBytes;
    rc = ipsecmb_gcm_open(gcm_, nonce.data(), ad.data(), ad.size(), data, n, data + n) ? 0 : -1;
  } else if (suite_ == Suite::kAes256Gcm) {
    rc = crypto_aead_aes256gcm_decrypt_afternm(data, &out_len, nullptr, data, len, ad.data(), ad.size(), nonce.data(),
                                               &aes_state_);
  } else {
    rc = crypto_aead_chacha20poly1305_ietf_decrypt(data, &out_len, nullptr, data, len, ad.data(), ad.size(),
                                                   nonce.data(), aead_key_.data());
  }
  return rc == 0;
}

void Keyring::add(const Key& key, bool primary) {
  if (find(key.id()) != nullptr) {
    throw KeyError("key " + key_id_text(key.id()) + " is already in the keyring");
  }
  if (count_ == kMaxKeys) {
    throw KeyError("keyring is full (" + std::to_string(kMaxKeys) + " keys); remove one first");
  }
  keys_[count_++] = key;
  if (primary || !has_primary_) {
    primary_id_ = key.id();
    has_primary_ = true;
  }
}

void Keyring::set_primary(std::uint32_t id) {
  if (find(id) == nullptr) throw KeyError("key " + key_id_text(id) + " is not in the keyring");
  primary_id_ = id;
  has_primary_ = true;
}

void Keyring::remove(std::uint32_t id) {
  if (find(id) == nullptr) throw KeyError("key " + key_id_text(id) + " is not in the keyring");
  if (has_primary_ && id == primary_id_) {
    throw KeyError("key " + key_id_text(id) + " is the primary key; make another key primary first");
  }
  for (std::size_t i = 0; i < count_; ++i) {
    if (keys_[i].id() == id) {
      keys_[i] = keys_[count_ - 1];
      keys_[count_ - 1] = Key{};
      --count_;
      return;
    }
  }
}

std::vector<std::uint32_t> Keyring::ids() const {
  std::vector<std::uint32_t> out;
  for (std::size_t i = 0; i < count_; ++i) out.push_back(keys_[i].id());
  return out;
}

KeyBytes load_key_file(const std::string& path) {
  const std::string where = "key file '" + path + "'";
  // O_NONBLOCK: opening a FIFO would otherwise wait for a writer for ever
  // (issue 17); the fstat below refuses anything but a regular file.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw KeyError(where + ": cannot open: " + errno_text(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};

  // fstat the open descriptor so the checks apply to what we read.
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw KeyError(where + ": cannot stat: " + errno_text(errno));
  if (!S_ISREG(st.st_mode)) throw KeyError(where + ": not a regular file (a FIFO, device, socket or directory)");
  if ((st.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    throw KeyError(where + ": permissions " + octal_mode(st.st_mode) +
                   " let group or others access it; run: chmod 600 '" + path + "'");
  }
  if (st.st_size != static_cast<off_t>(kKeyBytes)) {
    throw KeyError(where + ": has " + std::to_string(st.st_size) + " bytes; a key is exactly " +
                   std::to_string(kKeyBytes) + " bytes (make one with: gossipctl keygen)");
  }
  KeyBytes key{};
  std::size_t got = 0;
  while (got < key.size()) {
    const ssize_t n = ::read(fd, key.data() + got, key.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw KeyError(where + ": cannot read: " + errno_text(errno));
    if (n == 0) throw KeyError(where + ": shorter than " + std::to_string(kKeyBytes) + " bytes");
    got += static_cast<std::size_t>(n);
  }
  return key;
}

std::uint32_t write_key_file(const std::string& path, bool overwrite) {
  const std::string where = "key file '" + path + "'";
  KeyBytes key{};
  randombytes_buf(key.data(), key.size());
  const std::uint32_t id = derive_key_id(key);

  // Write a private temporary file, then rename: a crash never leaves a
  // half-written key under the real name.
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) throw KeyError(where + ": cannot create: " + errno_text(errno));
  bool ok = ::fchmod(fd, 0600) == 0 && ::write(fd, key.data(), key.size()) == static_cast<ssize_t>(key.size()) &&
            ::fsync(fd) == 0;
  const int write_errno = errno;
  ::close(fd);
  sodium_memzero(key.data(), key.size());
  if (ok && !overwrite) {
    // link() fails if the name exists, so we never replace a key by accident.
    ok = ::link(tmp.c_str(), path.c_str()) == 0;
    const int link_errno = errno;
    ::unlink(tmp.c_str());
    if (!ok) {
      throw KeyError(where + ": cannot create: " + errno_text(link_errno) +
                     (link_errno == EEXIST ? " (use --force to replace it)" : ""));
    }
  } else if (ok) {
    ok = ::rename(tmp.c_str(), path.c_str()) == 0;
    if (!ok) {
      const int rename_errno = errno;
      ::unlink(tmp.c_str());
      throw KeyError(where + ": cannot replace: " + errno_text(rename_errno));
    }
  } else {
    ::unlink(tmp.c_str());
    throw KeyError(where + ": cannot write: " + errno_text(write_errno));
  }
  return id;
}

std::string key_id_text(std::uint32_t id) {
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", id);
  return buf;
}

}  // namespace gw::crypto
