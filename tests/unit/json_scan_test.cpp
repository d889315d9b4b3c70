#include "core/common/json_scan.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

namespace powerctl {
namespace {

// The byte-at-a-time definition the eight-at-a-time scan must agree with.
std::size_t Reference(std::string_view text, std::size_t from, bool ascii_only) {
  for (std::size_t i = from; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '"' || c == '\\' || c < 0x20 || (ascii_only && c >= 0x7f)) return i;
  }
  return text.size();
}

TEST(JsonScanTest, FindsEachSpecialByteAtEveryPosition) {
  // Every position within and around a word, each byte that ends a run, and one byte either
  // side of each class boundary (0x1f/0x20, 0x7e/0x7f, 0x7f/0x80) that must not or must.
  for (unsigned special : {0x22u, 0x5cu, 0x00u, 0x1fu, 0x7fu, 0x80u, 0xffu, 0x20u, 0x7eu}) {
    for (std::size_t length = 0; length < 20; ++length) {
      for (std::size_t at = 0; at < length; ++at) {
        std::string text(length, 'n');
        text[at] = static_cast<char>(special);
        for (bool ascii_only : {false, true}) {
          for (std::size_t from = 0; from <= length; ++from) {
            EXPECT_EQ(FindJsonStringSpecial(text, from, ascii_only),
                      Reference(text, from, ascii_only))
                << "byte " << special << " at " << at << " of " << length << " from " << from
                << " ascii_only " << ascii_only;
          }
        }
      }
    }
  }
}

TEST(JsonScanTest, AWordOfPlainBytesIsSkippedWhole) {
  const std::string name = "ip-10-0-3-17.eu-west-1.compute.internal";
  EXPECT_EQ(FindJsonStringSpecial(name, 0, true), name.size());
  EXPECT_EQ(FindJsonStringSpecial(name + "\",\"", 0, true), name.size());
  EXPECT_EQ(FindJsonStringSpecial("", 0), 0u);
}

TEST(JsonScanTest, AgreesWithTheByteLoopOnRandomBytes) {
  // Several special bytes in one word, so borrows between bytes are exercised: only the
  // lowest flagged byte of a word may be trusted, and that is the one returned.
  std::mt19937 random(20261125);
  for (int round = 0; round < 20000; ++round) {
    std::string text(random() % 40, '\0');
    for (char& c : text) {
      const unsigned r = random() % 8;
      c = static_cast<char>(r < 5 ? 'a' + random() % 26 : random() % 256);
    }
    const std::size_t from = text.empty() ? 0 : random() % (text.size() + 1);
    for (bool ascii_only : {false, true}) {
      ASSERT_EQ(FindJsonStringSpecial(text, from, ascii_only), Reference(text, from, ascii_only))
          << "round " << round;
    }
  }
}

}  // namespace
}  // namespace powerctl
