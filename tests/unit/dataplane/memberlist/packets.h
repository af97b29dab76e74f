// A test-only encoder of memberlist UDP packets, written independently of
// the inspector: msgpack through Debian's msgpack-c++ (libmsgpack-cxx-dev),
// LZW as Go's compress/lzw writes it (LSB, 8-bit literals), AES-GCM sealing
// through crypto/aes_gcm (ipsec-mb). golden.txt (tests/memberlist) holds
// packets a real memberlist wrote; this encoder builds what memberlist never
// sends.
#pragma once

#include <msgpack.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "crypto/aes_gcm.h"

namespace gw::dp::ml::test {

using Bytes = std::vector<std::uint8_t>;

inline Bytes bytes_of(std::string_view s) { return Bytes(s.begin(), s.end()); }

inline Bytes from_hex(std::string_view h) {
  Bytes out;
  for (std::size_t i = 0; i + 1 < h.size(); i += 2) {
    out.push_back(static_cast<std::uint8_t>(std::stoul(std::string(h.substr(i, 2)), nullptr, 16)));
  }
  return out;
}

// One msgpack value of a message field.
struct Str {
  std::string s;
};
struct Bin {
  Bytes b;
};
struct UintArray {
  std::vector<std::uint64_t> v;
};
using Value = std::variant<std::uint64_t, std::int64_t, bool, Str, Bin, UintArray, std::nullptr_t>;
using Fields = std::vector<std::pair<std::string, Value>>;

// A message: type byte, then a msgpack map of `fields` in order (Go's codec
// writes struct fields in declaration order; the inspector does not care).
inline Bytes message(std::uint8_t type, const Fields& fields) {
  msgpack::sbuffer buf;
  msgpack::packer<msgpack::sbuffer> pk(buf);
  pk.pack_map(static_cast<std::uint32_t>(fields.size()));
  for (const auto& [k, v] : fields) {
    pk.pack_str(static_cast<std::uint32_t>(k.size()));
    pk.pack_str_body(k.data(), static_cast<std::uint32_t>(k.size()));
    if (const auto* u = std::get_if<std::uint64_t>(&v)) {
      pk.pack_uint64(*u);
    } else if (const auto* i = std::get_if<std::int64_t>(&v)) {
      pk.pack_int64(*i);
    } else if (const auto* b = std::get_if<bool>(&v)) {
      if (*b) {
        pk.pack_true();
      } else {
        pk.pack_false();
      }
    } else if (const auto* s = std::get_if<Str>(&v)) {
      pk.pack_str(static_cast<std::uint32_t>(s->s.size()));
      pk.pack_str_body(s->s.data(), static_cast<std::uint32_t>(s->s.size()));
    } else if (const auto* bb = std::get_if<Bin>(&v)) {
      pk.pack_bin(static_cast<std::uint32_t>(bb->b.size()));
      pk.pack_bin_body(reinterpret_cast<const char*>(bb->b.data()), static_cast<std::uint32_t>(bb->b.size()));
    } else if (const auto* a = std::get_if<UintArray>(&v)) {
      pk.pack_array(static_cast<std::uint32_t>(a->v.size()));
      for (auto x : a->v) pk.pack_uint64(x);
    } else {
      pk.pack_nil();
    }
  }
  Bytes out(1 + buf.size());
  out[0] = type;
  std::memcpy(out.data() + 1, buf.data(), buf.size());
  return out;
}

inline Bin ip4(std::uint8_t a, std::uint8_t b, std::uint8_t c, std::uint8_t d) { return Bin{{a, b, c, d}}; }

inline Bytes ping(std::uint32_t seq, Bin source_addr, std::uint64_t source_port, std::string node = "node-b") {
  return message(0, {{"SeqNo", std::uint64_t{seq}},
                     {"Node", Str{std::move(node)}},
                     {"SourceAddr", std::move(source_addr)},
                     {"SourcePort", source_port},
                     {"SourceNode", Str{"node-a"}}});
}
inline Bytes indirect_ping(Bin target, std::uint64_t port, Bin source_addr, std::uint64_t source_port) {
  return message(1, {{"SeqNo", std::uint64_t{9}},
                     {"Target", std::move(target)},
                     {"Port", port},
                     {"Node", Str{"node-c"}},
                     {"Nack", true},
                     {"SourceAddr", std::move(source_addr)},
                     {"SourcePort", source_port},
                     {"SourceNode", Str{"node-a"}}});
}
inline Bytes ack(std::uint32_t seq) {
  return message(2, {{"SeqNo", std::uint64_t{seq}}, {"Payload", Bin{bytes_of("coord")}}});
}
inline Bytes nack(std::uint32_t seq) { return message(11, {{"SeqNo", std::uint64_t{seq}}}); }
inline Bytes alive(Value vsn, std::string node = "node-x", Bin addr = ip4(10, 0, 1, 1)) {
  return message(4, {{"Incarnation", std::uint64_t{1}},
                     {"Node", Str{std::move(node)}},
                     {"Addr", std::move(addr)},
                     {"Port", std::uint64_t{7946}},
                     {"Meta", Bin{bytes_of("role=db")}},
                     {"Vsn", std::move(vsn)}});
}
inline Bin vsn6() { return Bin{{1, 5, 2, 2, 5, 4}}; }
inline Bytes suspect(std::string node = "node-c", std::string from = "node-a") {
  return message(3,
                 {{"Incarnation", std::uint64_t{3}}, {"Node", Str{std::move(node)}}, {"From", Str{std::move(from)}}});
}
inline Bytes dead() {
  return message(5, {{"Incarnation", std::uint64_t{4}}, {"Node", Str{"node-c"}}, {"From", Str{"node-a"}}});
}
inline Bytes user(std::string_view serf) {
  // Sized up front: GCC 12's -Warray-bounds misreads insert() after a
  // one-element initializer list at -O2.
  Bytes out(1 + serf.size());
  out[0] = 8;
  std::copy(serf.begin(), serf.end(), out.begin() + 1);
  return out;
}

inline Bytes compound(const std::vector<Bytes>& parts) {
  Bytes out{7, static_cast<std::uint8_t>(parts.size())};
  for (const auto& p : parts) {
    out.push_back(static_cast<std::uint8_t>(p.size() >> 8));
    out.push_back(static_cast<std::uint8_t>(p.size()));
  }
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

inline Bytes with_crc(const Bytes& in, std::uint32_t xor_mask = 0) {
  const std::uint32_t c = crypto::crc32_ieee(in.data(), in.size()) ^ xor_mask;
  Bytes out{12, static_cast<std::uint8_t>(c >> 24), static_cast<std::uint8_t>(c >> 16),
            static_cast<std::uint8_t>(c >> 8), static_cast<std::uint8_t>(c)};
  out.insert(out.end(), in.begin(), in.end());
  return out;
}

// LZW as Go's compress/lzw Writer (LSB, literal width 8): a clear code
// first, codes of 9 to 12 bits, a clear whenever the table fills, the end
// code last.
inline Bytes lzw(const Bytes& in, bool end_code = true) {
  Bytes out;
  std::uint64_t acc = 0;
  unsigned nbits = 0;
  unsigned width = 9;
  unsigned hi = 257;
  auto emit = [&](unsigned code) {
    acc |= static_cast<std::uint64_t>(code) << nbits;
    nbits += width;
    while (nbits >= 8) {
      out.push_back(static_cast<std::uint8_t>(acc));
      acc >>= 8;
      nbits -= 8;
    }
  };
  std::map<std::pair<unsigned, std::uint8_t>, unsigned> dict;
  auto reset = [&] {
    dict.clear();
    width = 9;
    hi = 257;
  };
  emit(256);
  reset();
  const auto step = [&] {
    // After a code: the decoder counts one more code; the table may grow a
    // bit or, full at 12 bits, be cleared.
    ++hi;
    if (hi >= (1u << width)) {
      if (width < 12) {
        ++width;
      } else {
        emit(256);
        reset();
        return false;
      }
    }
    return true;
  };
  if (!in.empty()) {
    unsigned w = in[0];
    for (std::size_t i = 1; i < in.size(); ++i) {
      const std::uint8_t c = in[i];
      auto it = dict.find({w, c});
      if (it != dict.end()) {
        w = it->second;
        continue;
      }
      emit(w);
      const unsigned entry = hi + 1;
      if (step() && entry <= 4095) dict[{w, c}] = entry;
      w = c;
    }
    emit(w);
    step();
  }
  if (end_code) emit(257);
  if (nbits > 0) out.push_back(static_cast<std::uint8_t>(acc));
  return out;
}

inline Bytes compress(const Bytes& in, std::uint64_t algo = 0, bool end_code = true) {
  return message(9, {{"Algo", algo}, {"Buf", Bin{lzw(in, end_code)}}});
}

inline Bytes label_header(std::string_view label) {
  Bytes out{244, static_cast<std::uint8_t>(label.size())};
  out.insert(out.end(), label.begin(), label.end());
  return out;
}

// Seals `plain` as memberlist's encryptPayload: version, nonce, ciphertext,
// tag, with the label as AAD; version 0 pads PKCS7 (pad_override: write
// that byte as the padding instead, to build broken padding).
inline Bytes seal(const Bytes& key, const Bytes& plain, std::uint8_t vsn = 1, std::string_view label = {},
                  int pad_override = -1) {
  crypto::IpsecMbGcm k;
  if (!crypto::ipsecmb_gcm_expand_len(key.data(), key.size(), &k)) throw std::runtime_error("bad test key");
  Bytes msg = plain;
  if (vsn == 0) {
    const std::size_t pad = 16 - msg.size() % 16;
    for (std::size_t i = 0; i < pad; ++i) {
      msg.push_back(static_cast<std::uint8_t>(pad_override >= 0 ? pad_override : static_cast<int>(pad)));
    }
  }
  Bytes out = label.empty() ? Bytes{} : label_header(label);
  out.push_back(vsn);
  const std::size_t nonce_at = out.size();
  for (std::uint8_t i = 0; i < 12; ++i) out.push_back(static_cast<std::uint8_t>(0xa0 + i));
  const std::size_t ct_at = out.size();
  out.resize(ct_at + msg.size() + 16);
  crypto::ipsecmb_gcm_seal(k, out.data() + nonce_at, reinterpret_cast<const std::uint8_t*>(label.data()), label.size(),
                           msg.data(), msg.size(), out.data() + ct_at, out.data() + ct_at + msg.size());
  crypto::ipsecmb_gcm_clear(&k);
  return out;
}

// One line of tests/memberlist/golden.txt.
struct Golden {
  std::string name;
  Bytes key;  // empty: plaintext
  std::string label;
  std::string source;
  Bytes packet;
};

inline std::vector<Golden> read_golden(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::vector<Golden> out;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ss(line);
    std::string name, key, label, source, pkt;
    if (!(ss >> name >> key >> label >> source >> pkt)) continue;
    out.push_back({name, key == "-" ? Bytes{} : from_hex(key), label == "-" ? "" : label, source, from_hex(pkt)});
  }
  return out;
}

}  // namespace gw::dp::ml::test
