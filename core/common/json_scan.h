#pragma once
// Skipping the bytes of a JSON string that need no attention, eight at a time. A 5,000-node
// request or answer is mostly node names inside quotes, and the byte-at-a-time loops that
// looked for the closing quote (bounds check, NodeNames scan, answer encoder) were a fifth
// of a prioritize's instructions with cloud-length names.

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace powerctl {

namespace json_scan_internal {

inline constexpr std::uint64_t kOnes = 0x0101010101010101ULL;
inline constexpr std::uint64_t kHighBits = 0x8080808080808080ULL;

// High bit set in each byte of `x` below `n` (n <= 0x80). Bytes above the lowest flagged one
// may be flagged wrongly (a borrow), so only the lowest flag is to be trusted.
constexpr std::uint64_t BytesBelow(std::uint64_t x, unsigned n) {
  return (x - kOnes * n) & ~x & kHighBits;
}
constexpr std::uint64_t BytesEqual(std::uint64_t x, unsigned char c) {
  return BytesBelow(x ^ (kOnes * c), 1);
}

// The bytes that end a run: '"', '\\', control bytes and, when asked, bytes >= 0x7f.
constexpr std::uint64_t SpecialBytes(std::uint64_t x, bool ascii_only) {
  std::uint64_t special = BytesEqual(x, '"') | BytesEqual(x, '\\') | BytesBelow(x, 0x20);
  if (ascii_only) special |= (x & kHighBits) | BytesEqual(x, 0x7f);
  return special;
}

constexpr bool IsSpecial(unsigned char c, bool ascii_only) {
  return c == '"' || c == '\\' || c < 0x20 || (ascii_only && c >= 0x7f);
}

}  // namespace json_scan_internal

// The index of the first byte at or after `from` that is '"', '\\' or a control byte (and,
// with `ascii_only`, 0x7f or above), or text.size() when there is none.
inline std::size_t FindJsonStringSpecial(std::string_view text, std::size_t from,
                                         bool ascii_only = false) {
  using namespace json_scan_internal;
  std::size_t i = from;
  if constexpr (std::endian::native == std::endian::little) {
    for (; i + 8 <= text.size(); i += 8) {
      std::uint64_t word;
      std::memcpy(&word, text.data() + i, sizeof word);
      if (const std::uint64_t special = SpecialBytes(word, ascii_only); special != 0) {
        return i + static_cast<std::size_t>(std::countr_zero(special)) / 8;
      }
    }
  }
  for (; i < text.size(); ++i) {
    if (IsSpecial(static_cast<unsigned char>(text[i]), ascii_only)) return i;
  }
  return text.size();
}

}  // namespace powerctl
