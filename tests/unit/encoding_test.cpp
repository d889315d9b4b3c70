// ExcerptForMessage: untrusted text shortened for an error message, always valid UTF-8.

#include "core/common/encoding.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>

namespace powerctl {
namespace {

// What every excerpt must allow: nlohmann's strict dump() (throws on invalid UTF-8).
void ExpectDumps(const std::string& text) {
  EXPECT_NO_THROW((void)nlohmann::json(text).dump()) << text;
}

std::string Repeat(const std::string& unit, int times) {
  std::string out;
  for (int i = 0; i < times; ++i) out += unit;
  return out;
}

TEST(ExcerptForMessageTest, ValidTextThatFitsIsUnchanged) {
  for (const std::string text : {"", "abc", "caf\xc3\xa9", "\xe2\x82\xac 5", "\xf0\x9f\x94\x8c!"}) {
    EXPECT_EQ(ExcerptForMessage(text, 40), text);
    EXPECT_EQ(ExcerptForMessage(text, text.size()), text);
    ExpectDumps(ExcerptForMessage(text, 40));
  }
}

TEST(ExcerptForMessageTest, LongTextIsCutAndMarked) {
  EXPECT_EQ(ExcerptForMessage(std::string(100, 'x'), 40), std::string(40, 'x') + "...");
  EXPECT_EQ(ExcerptForMessage("abcd", 3), "abc...");
  EXPECT_EQ(ExcerptForMessage("abcd", 0), "...");
  EXPECT_EQ(ExcerptForMessage("", 0), "");
}

TEST(ExcerptForMessageTest, NeverCutsInsideATwoByteCharacter) {
  // The Prometheus sample: byte 40 is the first byte of the twentieth "é".
  const std::string text = "a" + Repeat("\xc3\xa9", 30);
  const std::string excerpt = ExcerptForMessage(text, 40);
  EXPECT_EQ(excerpt, "a" + Repeat("\xc3\xa9", 19) + "...");
  ExpectDumps(excerpt);
}

TEST(ExcerptForMessageTest, NeverCutsInsideAThreeByteCharacter) {
  const std::string euro = "\xe2\x82\xac";
  const std::string text = Repeat(euro, 10);
  EXPECT_EQ(ExcerptForMessage(text, 7), Repeat(euro, 2) + "...");  // 7 = 2 x 3 + 1
  EXPECT_EQ(ExcerptForMessage(text, 8), Repeat(euro, 2) + "...");
  EXPECT_EQ(ExcerptForMessage(text, 9), Repeat(euro, 3) + "...");
  EXPECT_EQ(ExcerptForMessage(text, 2), "...");
  for (std::size_t max = 0; max <= text.size(); ++max) ExpectDumps(ExcerptForMessage(text, max));
}

TEST(ExcerptForMessageTest, NeverCutsInsideAFourByteCharacter) {
  const std::string plug = "\xf0\x9f\x94\x8c";  // U+1F50C
  const std::string text = "ab" + Repeat(plug, 5);
  EXPECT_EQ(ExcerptForMessage(text, 5), "ab...");
  EXPECT_EQ(ExcerptForMessage(text, 9), "ab" + plug + "...");
  EXPECT_EQ(ExcerptForMessage(text, 10), "ab" + Repeat(plug, 2) + "...");
  for (std::size_t max = 0; max <= text.size(); ++max) ExpectDumps(ExcerptForMessage(text, max));
}

TEST(ExcerptForMessageTest, InvalidBytesBecomeQuestionMarks) {
  EXPECT_EQ(ExcerptForMessage("\xff\xfe", 40), "??");
  EXPECT_EQ(ExcerptForMessage("a\x80"
                              "b",
                              40),
            "a?b");                                 // lone continuation
  EXPECT_EQ(ExcerptForMessage("a\xc3", 40), "a?");  // truncated sequence
  EXPECT_EQ(ExcerptForMessage("\xe2\x82"
                              "x",
                              40),
            "??x");                                                   // truncated, then ASCII
  EXPECT_EQ(ExcerptForMessage("\xc0\xaf", 40), "??");                 // overlong "/"
  EXPECT_EQ(ExcerptForMessage("\xe0\x80\xaf", 40), "???");            // overlong, 3 bytes
  EXPECT_EQ(ExcerptForMessage("\xed\xa0\x80", 40), "???");            // a UTF-16 surrogate
  EXPECT_EQ(ExcerptForMessage("\xf4\x90\x80\x80", 40), "????");       // above U+10FFFF
  EXPECT_EQ(ExcerptForMessage("\xf8\x88\x80\x80\x80", 40), "?????");  // 5-byte form
  EXPECT_EQ(ExcerptForMessage("\xff\xff\xff\xff", 2), "??...");
  // Every single byte and every pair of bytes, at every cut.
  for (int a = 0; a < 256; ++a) {
    for (int b = 0; b < 256; b += 5) {
      const std::string text = {static_cast<char>(a), static_cast<char>(b), '\xa9'};
      for (std::size_t max = 0; max <= 4; ++max) {
        const std::string excerpt = ExcerptForMessage(text, max);
        ASSERT_NO_THROW((void)nlohmann::json(excerpt).dump()) << a << " " << b << " " << max;
      }
    }
  }
}

TEST(ExcerptForMessageTest, ControlCharactersBecomeSpaces) {
  EXPECT_EQ(ExcerptForMessage("a\r\nb\tc", 40), "a  b c");
  EXPECT_EQ(ExcerptForMessage(std::string("x\0y", 3), 40), "x y");
  EXPECT_EQ(ExcerptForMessage("\x1b[31mred\x7f", 40), " [31mred ");
  EXPECT_EQ(ExcerptForMessage("\xc2\x9b"
                              "31m",
                              40),
            " 31m");                                         // C1 CSI, U+009B
  EXPECT_EQ(ExcerptForMessage("\xc2\xa0", 40), "\xc2\xa0");  // U+00A0 is printable
  const std::string excerpt = ExcerptForMessage("line\none\x1b", 40);
  EXPECT_EQ(excerpt.find_first_of(std::string("\n\x1b\x7f", 3)), std::string::npos);
  ExpectDumps(excerpt);
}

}  // namespace
}  // namespace powerctl
