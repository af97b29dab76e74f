// A bounded LZW decoder for memberlist's compress wrapper: Go's
// compress/lzw with LSB bit order and 8-bit literals (codes of 9 to 12 bits,
// clear = 256, end = 257), which is what memberlist writes (util.go,
// compressPayload). Output goes to a caller's buffer and stops at its size,
// so a small packet cannot expand without bound (LZW reaches about 1:300 on
// a run of one byte); the code tables live in the caller's scratch.
//
// Like Go's reader, the stream must end with the end code; bytes after it
// are ignored.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gw::dp::ml {

// Every code's string is a run of bytes already in the output (the previous
// code's string plus the first byte of the next), so a code is an offset and
// a length there: decoding copies forward instead of walking a prefix chain.
struct LzwTables {
  static constexpr std::size_t kCodes = 1u << 12;
  std::uint32_t offset[kCodes];
  std::uint16_t length[kCodes];
};

enum class LzwResult : std::uint8_t { kOk, kCorrupt, kTooLarge };

// Decodes `in` into `out` (at most `cap` bytes); *out_len is the decoded size.
LzwResult lzw_decode(const std::uint8_t* in, std::size_t in_len, std::uint8_t* out, std::size_t cap,
                     std::size_t* out_len, LzwTables* t) noexcept;

}  // namespace gw::dp::ml
