#include "dataplane/memberlist/lzw.h"

#include <cstring>

namespace gw::dp::ml {
namespace {

constexpr std::uint32_t kClear = 256;
constexpr std::uint32_t kEnd = 257;
constexpr std::uint32_t kMaxWidth = 12;
constexpr std::uint32_t kNone = 0xffff;

}  // namespace

LzwResult lzw_decode(const std::uint8_t* in, std::size_t in_len, std::uint8_t* out, std::size_t cap,
                     std::size_t* out_len, LzwTables* t) noexcept {
  std::size_t o = 0;
  std::size_t ip = 0;
  std::uint64_t bits = 0;  // buffered input bits, least significant first
  std::uint32_t nbits = 0;
  std::uint32_t width = 9;
  std::uint32_t hi = kEnd;  // the code the next one read may define (as Go's reader counts)
  std::uint32_t overflow = 1u << width;
  std::uint32_t last = kNone;
  std::size_t last_start = 0;  // where the last code's string is in `out`
  std::size_t last_len = 0;
  *out_len = 0;
  for (;;) {
    if (nbits < width) {
      if (in_len - ip >= 4) {
        // Four bytes at once (little-endian, as the codes are packed); at
        // most 11 bits are left over, so they fit a 64-bit buffer.
        std::uint32_t w4 = 0;
        std::memcpy(&w4, in + ip, 4);
        bits |= static_cast<std::uint64_t>(w4) << nbits;
        nbits += 32;
        ip += 4;
      } else {
        while (nbits < width) {
          // Input ran out before the end code: Go's reader fails the same way.
          if (ip == in_len) return LzwResult::kCorrupt;
          bits |= static_cast<std::uint64_t>(in[ip++]) << nbits;
          nbits += 8;
        }
      }
    }
    const auto code = static_cast<std::uint32_t>(bits & ((1u << width) - 1));
    bits >>= width;
    nbits -= width;

    if (code == kClear) {
      width = 9;
      hi = kEnd;
      overflow = 1u << width;
      last = kNone;
      continue;
    }
    if (code == kEnd) {
      *out_len = o;
      return LzwResult::kOk;
    }
    const std::size_t start = o;
    std::size_t n = 0;
    if (code < kClear) {
      if (o == cap) return LzwResult::kTooLarge;
      out[o++] = static_cast<std::uint8_t>(code);
      n = 1;
    } else if (code <= hi) {
      // Every code in (kEnd, hi) was defined since the last clear, and so was
      // hi itself once the table is full (last is kNone only then: right
      // after a clear hi is kEnd). Otherwise hi is the code being defined:
      // the last string followed by its own first byte, which a forward
      // byte copy from the last string's start produces.
      const bool pending = code == hi && last != kNone;
      const std::size_t src = pending ? last_start : t->offset[code];
      n = pending ? last_len + 1 : t->length[code];
      if (n > cap - o) return LzwResult::kTooLarge;
      if (!pending && n <= 16 && o - src >= 16 && cap - o >= 16) {
        // Most strings are short: one fixed 16-byte copy, from output
        // already written and not overlapping the destination; the bytes
        // past n are overwritten by the next code or lie past the output.
        std::memcpy(out + o, out + src, 16);
      } else if (!pending) {
        // A defined code's string ends at or before o: no overlap.
        std::memcpy(out + o, out + src, n);
      } else {
        // The last string (which ends exactly at o) and its first byte.
        std::memcpy(out + o, out + src, n - 1);
        out[o + n - 1] = out[src];
      }
      o += n;
    } else {
      return LzwResult::kCorrupt;
    }
    if (last != kNone) {
      // hi: the last string and this one's first byte, i.e. the bytes from
      // the last string's start up to one past its end.
      t->offset[hi] = static_cast<std::uint32_t>(last_start);
      t->length[hi] = static_cast<std::uint16_t>(last_len + 1);
    }
    last = code;
    last_start = start;
    last_len = n;
    ++hi;
    if (hi >= overflow) {
      if (width == kMaxWidth) {
        // Table full: no more definitions until the writer clears.
        last = kNone;
        --hi;
      } else {
        ++width;
        overflow = 1u << width;
      }
    }
  }
}

}  // namespace gw::dp::ml
