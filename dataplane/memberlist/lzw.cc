#include "dataplane/memberlist/lzw.h"

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
  std::uint32_t bits = 0;  // buffered input bits, least significant first
  std::uint32_t nbits = 0;
  std::uint32_t width = 9;
  std::uint32_t hi = kEnd;  // the code the next one read may define (as Go's reader counts)
  std::uint32_t overflow = 1u << width;
  std::uint32_t last = kNone;
  *out_len = 0;
  for (;;) {
    while (nbits < width) {
      // Input ran out before the end code: Go's reader fails the same way.
      if (ip == in_len) return LzwResult::kCorrupt;
      bits |= static_cast<std::uint32_t>(in[ip++]) << nbits;
      nbits += 8;
    }
    const std::uint32_t code = bits & ((1u << width) - 1);
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
    std::size_t start = o;  // where this code's string begins
    if (code < kClear) {
      if (o == cap) return LzwResult::kTooLarge;
      out[o++] = static_cast<std::uint8_t>(code);
    } else if (code <= hi) {
      // Every code in (kEnd, hi) was defined since the last clear, and so was
      // hi itself once the table is full (last is kNone only then: right
      // after a clear hi is kEnd). Otherwise hi is the code being defined:
      // the last string followed by its own first byte.
      const bool pending = code == hi && last != kNone;
      const std::uint32_t c0 = pending ? last : code;
      const std::size_t n = c0 < kClear ? 1 : t->length[c0];
      const std::size_t total = n + (pending ? 1 : 0);
      if (total > cap - o) return LzwResult::kTooLarge;
      std::uint32_t c = c0;
      std::size_t i = o + n - 1;
      while (c >= kClear) {
        out[i--] = t->suffix[c];
        c = t->prefix[c];
      }
      out[i] = static_cast<std::uint8_t>(c);
      if (pending) out[o + n] = out[o];
      o += total;
    } else {
      return LzwResult::kCorrupt;
    }
    if (last != kNone) {
      // Define hi as the last string plus this string's first byte.
      t->prefix[hi] = static_cast<std::uint16_t>(last);
      t->suffix[hi] = out[start];
      t->length[hi] = static_cast<std::uint16_t>((last < kClear ? 1 : t->length[last]) + 1);
    }
    last = code;
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
