#include "core/common/json_bounds.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

namespace powerctl {
namespace {

std::string Nested(int depth) {
  return std::string(static_cast<std::size_t>(depth), '[') +
         std::string(static_cast<std::size_t>(depth), ']');
}

TEST(JsonBoundsTest, AcceptsDocumentsWithinTheLimits) {
  EXPECT_FALSE(JsonBoundsViolation(""));
  EXPECT_FALSE(JsonBoundsViolation("42"));
  EXPECT_FALSE(JsonBoundsViolation(Nested(64)));
  EXPECT_FALSE(JsonBoundsViolation(R"({"a": [{"b": {}}], "c": [1, 2]})"));
  const nlohmann::json parsed = ParseJsonBounded(R"({"a": [1, {"b": null}]})");
  ASSERT_TRUE(parsed.is_object());
  EXPECT_EQ(parsed["a"][1]["b"], nullptr);
}

TEST(JsonBoundsTest, RejectsNestingDeeperThanTheLimit) {
  const auto violation = JsonBoundsViolation(Nested(65));
  ASSERT_TRUE(violation);
  EXPECT_EQ(*violation, "is nested deeper than 64 levels at byte 64");
  EXPECT_TRUE(ParseJsonBounded(Nested(65)).is_discarded());
  // Siblings do not add up: depth is the deepest path, not the number of containers.
  std::string wide;
  for (int i = 0; i < 1000; ++i) wide += (i == 0 ? "" : ",") + Nested(10);
  EXPECT_FALSE(JsonBoundsViolation("[" + wide + "]"));
  // Objects count like arrays; unclosed openers count too.
  EXPECT_TRUE(JsonBoundsViolation(std::string(65, '{')));
  EXPECT_TRUE(JsonBoundsViolation(R"({"a":)" + std::string(64, '[')));
}

TEST(JsonBoundsTest, IgnoresBracketsInsideStrings) {
  const std::string brackets(1000, '[');
  EXPECT_FALSE(JsonBoundsViolation(R"({"k": ")" + brackets + R"("})"));
  // An escaped quote does not end the string; an escaped backslash does not escape the quote.
  EXPECT_FALSE(JsonBoundsViolation(R"(["\"[[[[", "\\"])"));
  EXPECT_TRUE(JsonBoundsViolation(R"(["\\")" + std::string(64, '[')));
  EXPECT_EQ(ParseJsonBounded(R"(["\"[", "\\"])"), nlohmann::json::array({"\"[", "\\"}));
}

TEST(JsonBoundsTest, ExtraClosersDoNotBuyDepth) {
  // "]]]" before the openers must not let 64 + 3 levels through.
  EXPECT_TRUE(JsonBoundsViolation("]]]" + std::string(65, '[')));
}

TEST(JsonBoundsTest, RejectsTextLargerThanTheLimit) {
  JsonLimits limits;
  limits.max_bytes = 10;
  const auto violation = JsonBoundsViolation("[1,2,3,4,5,6]", limits);
  ASSERT_TRUE(violation);
  EXPECT_EQ(*violation, "is 13 bytes, more than 10");
  EXPECT_TRUE(ParseJsonBounded("[1,2,3,4,5,6]", limits).is_discarded());
  EXPECT_FALSE(ParseJsonBounded("[1,2,3,4]", limits).is_discarded());
}

TEST(JsonBoundsTest, KubeLimitsAllowDeeperObjects) {
  EXPECT_FALSE(JsonBoundsViolation(Nested(128), kKubeJsonLimits));
  EXPECT_TRUE(JsonBoundsViolation(Nested(129), kKubeJsonLimits));
}

TEST(JsonBoundsTest, InvalidJsonIsDiscardedNotThrown) {
  EXPECT_TRUE(ParseJsonBounded("{").is_discarded());
  EXPECT_TRUE(ParseJsonBounded("[1,]").is_discarded());
  EXPECT_TRUE(ParseJsonBounded("\"\\").is_discarded());
}

TEST(JsonBoundsTest, PassesTheCallbackThrough) {
  // Drop every "skip" key, as the Prometheus client drops series it has decoded.
  nlohmann::json::parser_callback_t drop = [](int, nlohmann::json::parse_event_t event,
                                              nlohmann::json& value) {
    return !(event == nlohmann::json::parse_event_t::key && value == "skip");
  };
  EXPECT_EQ(ParseJsonBounded(R"({"skip": 1, "keep": 2})", kDefaultJsonLimits, drop),
            nlohmann::json({{"keep", 2}}));
}

TEST(JsonBoundsTest, ScanIsLinear) {
  // 8 MiB of openers, the shape that would overflow the stack when copied or dumped.
  const std::string deep(8 << 20, '[');
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(ParseJsonBounded(deep).is_discarded());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

}  // namespace
}  // namespace powerctl
