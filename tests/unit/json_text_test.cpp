#include "core/common/json_text.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <limits>
#include <string>

namespace powerctl {
namespace {

using nlohmann::json;

std::string Number(double value) {
  std::string out;
  AppendJsonNumber(out, value);
  return out;
}

TEST(JsonTextTest, NumbersAreTheShortestFormThatReadsBackExactly) {
  EXPECT_EQ(Number(120.5), "120.5");
  EXPECT_EQ(Number(0.1), "0.1");
  for (double value : {1.0 / 3.0, 2.5e-300, 1e21, -7.25, 0.0}) {
    EXPECT_EQ(json::parse(Number(value)).get<double>(), value) << Number(value);
  }
  EXPECT_EQ(Number(std::numeric_limits<double>::quiet_NaN()), "null");
  EXPECT_EQ(Number(-std::numeric_limits<double>::infinity()), "null");
  std::string out;
  AppendJsonNumber(out, std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(out, "-9223372036854775808");
}

TEST(JsonTextTest, StringsArePlainWhenTheyCanBeAndEscapedWhenNot) {
  const std::string long_name(200, 'n');  // past the one-append buffer
  for (const std::string& text :
       {std::string("node-1"), long_name, std::string("tab\there \"q\" \\ caf\xc3\xa9")}) {
    std::string out;
    AppendJsonString(out, text);
    EXPECT_EQ(json::parse(out).get<std::string>(), text) << out;
  }
  std::string out;
  AppendJsonString(out, "bad \xff byte");
  EXPECT_EQ(json::parse(out).get<std::string>(), "bad \xef\xbf\xbd byte");  // U+FFFD
}

}  // namespace
}  // namespace powerctl
