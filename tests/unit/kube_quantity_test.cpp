// Kubernetes quantities: exact CPU (n/u/m), decimal and binary memory suffixes, exponents.

#include "core/kube/quantity.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>

namespace powerctl::kube {
namespace {

using ::testing::HasSubstr;

double Cores(const std::string& text) {
  Result<double> r = ParseCpuCores(text);
  EXPECT_TRUE(r.ok()) << text << ": " << (r.ok() ? "" : r.error().message);
  return r.ok() ? *r : -1;
}

double Bytes(const std::string& text) {
  Result<double> r = ParseBytes(text);
  EXPECT_TRUE(r.ok()) << text << ": " << (r.ok() ? "" : r.error().message);
  return r.ok() ? *r : -1;
}

std::int64_t Scaled(const std::string& text, int scale) {
  Result<Quantity> q = ParseQuantity(text);
  EXPECT_TRUE(q.ok()) << text;
  if (!q.ok()) return -1;
  Result<std::int64_t> v = q->Scaled(scale);
  EXPECT_TRUE(v.ok()) << text;
  return v.ok() ? *v : -1;
}

TEST(QuantityTest, CpuSuffixesAreExact) {
  EXPECT_EQ(Cores("250m"), 0.25);
  EXPECT_EQ(Cores("1"), 1.0);
  EXPECT_EQ(Cores("1500000n"), 0.0015);
  EXPECT_EQ(Cores("12345u"), 0.012345);
  EXPECT_EQ(Cores("137774469n"), 0.137774469);
  EXPECT_EQ(Cores("0.5"), 0.5);
  EXPECT_EQ(Cores("2.5k"), 2500.0);
  EXPECT_EQ(Cores("0"), 0.0);
  EXPECT_EQ(Cores("0m"), 0.0);
  EXPECT_EQ(Cores("+1"), 1.0);
  EXPECT_EQ(Cores("-250m"), -0.25);
  EXPECT_EQ(Cores("1e-3"), 0.001);
  EXPECT_EQ(Scaled("1500000n", -9), 1500000);
  EXPECT_EQ(Scaled("12345u", -9), 12345000);
  EXPECT_EQ(Scaled("250m", -3), 250);
}

TEST(QuantityTest, MemorySuffixes) {
  EXPECT_EQ(Bytes("1Ki"), 1024.0);
  EXPECT_EQ(Bytes("1322244Ki"), 1322244.0 * 1024);
  EXPECT_EQ(Bytes("129Mi"), 129.0 * 1024 * 1024);
  EXPECT_EQ(Bytes("1.5Gi"), 1.5 * 1024 * 1024 * 1024);
  EXPECT_EQ(Bytes("1Ti"), 1099511627776.0);
  EXPECT_EQ(Bytes("1Pi"), 1125899906842624.0);
  EXPECT_EQ(Bytes("1Ei"), 1152921504606846976.0);
  EXPECT_EQ(Bytes("100M"), 1e8);
  EXPECT_EQ(Bytes("1G"), 1e9);
  EXPECT_EQ(Bytes("2T"), 2e12);
  EXPECT_EQ(Bytes("3P"), 3e15);
  EXPECT_EQ(Bytes("1E"), 1e18);  // "E" alone is exa, not an exponent
  EXPECT_EQ(Bytes("1e3"), 1000.0);
  EXPECT_EQ(Bytes("1E3"), 1000.0);
  EXPECT_EQ(Bytes("12e+2"), 1200.0);
  EXPECT_EQ(Bytes("1k"), 1000.0);
  EXPECT_EQ(Bytes("16Ei"), 16 * 1152921504606846976.0);  // beyond int64: a double
}

TEST(QuantityTest, ScaledRoundsUpLikeKubernetes) {
  EXPECT_EQ(Scaled("1500000n", -3), 2);  // MilliValue() of 1.5m
  EXPECT_EQ(Scaled("1n", 0), 1);
  EXPECT_EQ(Scaled("0.1", 0), 1);
  EXPECT_EQ(Scaled("-1500000n", -3), -1);  // ceil of -1.5
  EXPECT_EQ(Scaled("1.5Ki", 0), 1536);
  EXPECT_EQ(Scaled("100", 2), 1);
  EXPECT_EQ(Scaled("0.000", -9), 0);
  EXPECT_EQ(Scaled("007", 0), 7);
  EXPECT_EQ(Scaled(".5", -1), 5);
  EXPECT_EQ(Scaled("5.", 0), 5);
  Result<Quantity> huge = ParseQuantity("1e30");
  ASSERT_TRUE(huge.ok());
  EXPECT_FALSE(huge->Scaled(0).ok());
  EXPECT_DOUBLE_EQ(huge->ToDouble(), 1e30);
}

TEST(QuantityTest, Invalid) {
  for (const char* text : {"", "m", "abc", "1.2.3", "1 m", " 1", "1mm", "1Ki1", "1e", "1e+", "1ei",
                           "1KI", "--1", "+", ".", "1e99999999999", "1x"}) {
    Result<Quantity> q = ParseQuantity(text);
    EXPECT_FALSE(q.ok()) << "\"" << text << "\" parsed";
    if (!q.ok()) {
      EXPECT_EQ(q.error().code, ErrorCode::kInvalidInput);
      EXPECT_THAT(q.error().message, HasSubstr("invalid quantity \"" + std::string(text) + "\""));
    }
  }
  EXPECT_THAT(ParseQuantity("1.2345678901234567891").error().message,
              HasSubstr("significant digits"));
  EXPECT_TRUE(ParseQuantity("1000000000000000000000000").ok());  // zeros are not significant
  EXPECT_FALSE(ParseCpuCores("1e20").ok());                      // not representable in nanocores
}

// The quoted text (cut at 64 bytes) and the quoted suffix (cut at 8) used to end inside an
// "é": the message was invalid UTF-8 and a strict dump() of it threw.
TEST(QuantityTest, UntrustedTextInErrorsIsCutBetweenCharacters) {
  std::string accents;
  for (int i = 0; i < 40; ++i) accents += "\xc3\xa9";
  Result<Quantity> q = ParseQuantity("1a" + accents);
  ASSERT_FALSE(q.ok());
  EXPECT_THAT(q.error().message, HasSubstr("invalid quantity \"1a\xc3\xa9"));
  EXPECT_THAT(q.error().message, HasSubstr("unknown suffix \"a\xc3\xa9\xc3\xa9\xc3\xa9...\""));
  EXPECT_NO_THROW((void)nlohmann::json(q.error().message).dump()) << q.error().message;
  Result<double> cores = ParseCpuCores(std::string("1\xff\x1b[2J"));
  ASSERT_FALSE(cores.ok());
  EXPECT_THAT(cores.error().message, HasSubstr("invalid quantity \"1? [2J\""));
  EXPECT_NO_THROW((void)nlohmann::json(cores.error().message).dump());
}

}  // namespace
}  // namespace powerctl::kube
