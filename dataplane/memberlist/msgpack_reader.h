// A bounded msgpack reader for the subset memberlist's messages use: maps
// with string keys, unsigned and signed integers, booleans, nil, strings and
// byte strings (both the old raw and the new str/bin spellings, which Go's
// codec reads alike), and arrays. It reads in place (values are spans into
// the input), never allocates, never throws, and fails closed: every read
// checks the remaining length first, and a failed read leaves the reader
// failed.
//
// Why not libmsgpack-cxx (Debian's msgpack-c++ 4.1.3): its unpack() builds
// objects in a zone that mallocs chunks, and its visitor parse() keeps the
// container stack in a std::vector and reports some errors by exception;
// the inspect path may do neither. The subset is small enough to read here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>

namespace gw::dp::ml {

class MsgpackReader {
 public:
  MsgpackReader(const std::uint8_t* p, std::size_t n) noexcept : p_(p), end_(p + n) {}

  bool ok() const noexcept { return ok_; }
  bool at_end() const noexcept { return p_ == end_; }
  std::size_t remaining() const noexcept { return static_cast<std::size_t>(end_ - p_); }

  // The next value's first byte, without consuming it (0xc1, never used by
  // msgpack, at the end).
  std::uint8_t peek() const noexcept { return p_ < end_ ? *p_ : 0xc1; }
  bool next_is_nil() const noexcept { return peek() == 0xc0; }

  // A map header: fixmap, map16, map32.
  bool read_map(std::uint32_t* n) noexcept {
    const std::uint8_t b = peek();
    if (b >= 0x80 && b <= 0x8f) return take1(), *n = b & 0x0fu, true;
    if (b == 0xde) return take1(), read_be(2, n);
    if (b == 0xdf) return take1(), read_be(4, n);
    return fail();
  }
  // An array header: fixarray, array16, array32.
  bool read_array(std::uint32_t* n) noexcept {
    const std::uint8_t b = peek();
    if (b >= 0x90 && b <= 0x9f) return take1(), *n = b & 0x0fu, true;
    if (b == 0xdc) return take1(), read_be(2, n);
    if (b == 0xdd) return take1(), read_be(4, n);
    return fail();
  }
  // A string or byte string (fixstr, str8/16/32, bin8/16/32); nil reads as empty.
  bool read_bytes(std::span<const std::uint8_t>* out) noexcept {
    const std::uint8_t b = peek();
    std::uint32_t len = 0;
    if (b >= 0xa0 && b <= 0xbf) {
      take1();
      len = b & 0x1fu;
    } else if (b == 0xd9 || b == 0xc4) {
      take1();
      if (!read_be(1, &len)) return false;
    } else if (b == 0xda || b == 0xc5) {
      take1();
      if (!read_be(2, &len)) return false;
    } else if (b == 0xdb || b == 0xc6) {
      take1();
      if (!read_be(4, &len)) return false;
    } else if (b == 0xc0) {
      take1();
      *out = {};
      return true;
    } else {
      return fail();
    }
    if (len > remaining()) return fail();
    *out = {p_, len};
    p_ += len;
    return true;
  }
  // An integer that must be >= 0 and <= `max` (Go's codec refuses a negative
  // value or an overflow for an unsigned field); nil reads as 0.
  bool read_uint(std::uint64_t max, std::uint64_t* out) noexcept {
    std::int64_t s = 0;
    std::uint64_t u = 0;
    bool neg = false;
    if (!read_integer(&u, &s, &neg)) return false;
    if (neg || u > max) return fail();
    *out = u;
    return true;
  }
  // A signed integer within [lo, hi]; nil reads as 0.
  bool read_int(std::int64_t lo, std::int64_t hi, std::int64_t* out) noexcept {
    std::int64_t s = 0;
    std::uint64_t u = 0;
    bool neg = false;
    if (!read_integer(&u, &s, &neg)) return false;
    if (!neg) {
      if (u > static_cast<std::uint64_t>(INT64_MAX)) return fail();
      s = static_cast<std::int64_t>(u);
    }
    if (s < lo || s > hi) return fail();
    *out = s;
    return true;
  }
  bool read_bool(bool* out) noexcept {
    const std::uint8_t b = peek();
    if (b == 0xc2 || b == 0xc3) return take1(), *out = b == 0xc3, true;
    if (b == 0xc0) return take1(), *out = false, true;
    return fail();
  }
  // Skips one value of any type this reader knows, nesting at most `depth`
  // containers deep (extension types and reserved bytes fail).
  bool skip(int depth) noexcept {
    const std::uint8_t b = peek();
    if (b <= 0x7f || b >= 0xe0 || b == 0xc0 || b == 0xc2 || b == 0xc3) return take1(), true;
    if ((b >= 0xa0 && b <= 0xbf) || b == 0xd9 || b == 0xda || b == 0xdb || (b >= 0xc4 && b <= 0xc6)) {
      std::span<const std::uint8_t> s;
      return read_bytes(&s);
    }
    switch (b) {
      case 0xcc:
      case 0xd0:
        return take1(), advance(1);
      case 0xcd:
      case 0xd1:
        return take1(), advance(2);
      case 0xce:
      case 0xd2:
      case 0xca:
        return take1(), advance(4);
      case 0xcf:
      case 0xd3:
      case 0xcb:
        return take1(), advance(8);
      default:
        break;
    }
    if (depth <= 0) return fail();
    std::uint32_t n = 0;
    if ((b >= 0x90 && b <= 0x9f) || b == 0xdc || b == 0xdd) {
      if (!read_array(&n)) return false;
    } else if ((b >= 0x80 && b <= 0x8f) || b == 0xde || b == 0xdf) {
      if (!read_map(&n)) return false;
      // Each entry is a key and a value; a count that cannot fit fails below.
      if (n > remaining()) return fail();
      n *= 2;
    } else {
      return fail();
    }
    // Every element takes at least one byte: a count past the end is a lie,
    // refused before the loop so a 4-byte header cannot spin 4 G times.
    if (n > remaining()) return fail();
    for (std::uint32_t i = 0; i < n; ++i) {
      if (!skip(depth - 1)) return false;
    }
    return true;
  }

 private:
  bool fail() noexcept {
    ok_ = false;
    p_ = end_;
    return false;
  }
  void take1() noexcept { ++p_; }
  bool advance(std::size_t n) noexcept {
    if (n > remaining()) return fail();
    p_ += n;
    return true;
  }
  bool read_be(std::size_t n, std::uint32_t* out) noexcept {
    if (n > remaining()) return fail();
    std::uint32_t v = 0;
    for (std::size_t i = 0; i < n; ++i) v = (v << 8) | p_[i];
    p_ += n;
    *out = v;
    return true;
  }
  bool read_be64(std::size_t n, std::uint64_t* out) noexcept {
    if (n > remaining()) return fail();
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < n; ++i) v = (v << 8) | p_[i];
    p_ += n;
    *out = v;
    return true;
  }
  // Reads any integer encoding: non-negative ones into *u, negative ones
  // into *s with *neg set.
  bool read_integer(std::uint64_t* u, std::int64_t* s, bool* neg) noexcept {
    const std::uint8_t b = peek();
    *neg = false;
    if (b <= 0x7f) return take1(), *u = b, true;
    if (b >= 0xe0) return take1(), *neg = true, *s = static_cast<std::int8_t>(b), true;
    if (b == 0xc0) return take1(), *u = 0, true;
    std::uint64_t v = 0;
    switch (b) {
      case 0xcc:
      case 0xcd:
      case 0xce:
      case 0xcf: {
        take1();
        if (!read_be64(std::size_t{1} << (b - 0xcc), &v)) return false;
        *u = v;
        return true;
      }
      case 0xd0:
      case 0xd1:
      case 0xd2:
      case 0xd3: {
        take1();
        const std::size_t n = std::size_t{1} << (b - 0xd0);
        if (!read_be64(n, &v)) return false;
        // Sign-extend from n bytes.
        const unsigned shift = static_cast<unsigned>(64 - 8 * n);
        const std::int64_t sv = static_cast<std::int64_t>(v << shift) >> shift;
        if (sv < 0) {
          *neg = true;
          *s = sv;
        } else {
          *u = static_cast<std::uint64_t>(sv);
        }
        return true;
      }
      default:
        return fail();
    }
  }

  const std::uint8_t* p_;
  const std::uint8_t* end_;
  bool ok_ = true;
};

// Compares a key read from a map with a field name.
// Field names are a few bytes: a loop the compiler inlines beats a memcmp call.
inline bool key_is(std::span<const std::uint8_t> key, std::string_view name) noexcept {
  if (key.size() != name.size()) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    if (key[i] != static_cast<std::uint8_t>(name[i])) return false;
  }
  return true;
}

}  // namespace gw::dp::ml
