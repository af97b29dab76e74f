#include "crypto/datagram.h"

namespace gw::crypto {

std::size_t seal_datagram(const Key& key, const SealParams& params, NonceSource& nonces, const std::uint8_t* plaintext,
                          std::size_t len, std::uint8_t* out, std::size_t out_cap) noexcept {
  if (len > kMaxPlaintextBytes) return 0;
  const std::size_t total = kHeaderBytes + len + kTagBytes;
  if (total > out_cap) return 0;

  WireHeader h;
  h.cls = params.cls;
  h.suite = key.suite();
  h.cluster_id = params.cluster_id;
  h.key_id = key.id();
  h.timestamp = params.timestamp;
  h.nonce = nonces.next();
  h.payload_len = static_cast<std::uint16_t>(len + kTagBytes);
  h.receiver = params.to.tag;
  write_header(h, out);
  h.mac = key.header_mac(out);
  write_header(h, out);
  key.seal(out, h.nonce, plaintext, len, out + kHeaderBytes, params.to);
  return total;
}

}  // namespace gw::crypto
