#include "core/common/names.h"

#include <gtest/gtest.h>

#include <chrono>
#include <regex>
#include <string>
#include <string_view>

namespace powerctl {
namespace {

// Every string over `alphabet` up to `max_length` characters, passed to `check`.
template <typename Check>
void ForAllStrings(std::string_view alphabet, std::size_t max_length, Check check) {
  std::string s;
  auto extend = [&](auto& self) -> void {
    check(s);
    if (s.size() == max_length) return;
    for (char c : alphabet) {
      s.push_back(c);
      self(self);
      s.pop_back();
    }
  };
  extend(extend);
}

TEST(NamesTest, QuantityAcceptsKubernetesQuantities) {
  for (const char* ok : {"1", "100m", "0.5", ".5", "5.", "+1", "-2", "64Mi", "2G", "1e3", "1E-2",
                         "1E", "3Ki", "1.5Ei", "0"}) {
    EXPECT_EQ(ValidateQuantity(ok), "") << ok;
  }
  for (const char* bad :
       {"", ".", "+", "m", "1e", "1e+", "1KiB", "1 m", "1.2.3", "--1", "1mm", "e3", "1Ki2"}) {
    EXPECT_NE(ValidateQuantity(bad), "") << bad;
  }
}

// The scanners replaced std::regex (which recursed per character and overflowed the stack on
// long input, tests/fuzz/corpus/config_fuzzer/regex-stack-overflow-*): they must accept
// exactly what the regular expressions accepted.
TEST(NamesTest, QuantityScannerMatchesTheRegularExpression) {
  const std::regex quantity(
      R"(^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E|[eE][+-]?[0-9]+)?$)");
  ForAllStrings("1.+-eEKim", 5, [&](const std::string& s) {
    EXPECT_EQ(ValidateQuantity(s).empty(), std::regex_match(s, quantity)) << s;
  });
}

TEST(NamesTest, ImageRepositoryScannerMatchesTheRegularExpression) {
  const std::regex repository(
      R"(^[a-z0-9]+([._-]+[a-z0-9]+)*(:[0-9]+)?(/[a-z0-9]+([._-]+[a-z0-9]+)*)*$)");
  // No ':' or '@' after the last '/', which ValidateImageReference strips as a tag or digest.
  ForAllStrings("a1.-/:", 6, [&](const std::string& s) {
    const std::size_t slash = s.rfind('/');
    const std::size_t colon = s.rfind(':');
    if (colon != std::string::npos && (slash == std::string::npos || colon > slash)) return;
    if (s.empty()) return;
    EXPECT_EQ(ValidateImageReference(s).empty(), std::regex_match(s, repository)) << s;
  });
}

TEST(NamesTest, ImageReferences) {
  for (const char* ok : {"nginx", "nginx:1.25", "localhost/powerctl:0.1.0",
                         "registry.example.com:5000/team/powerctl@sha256:abc",
                         "registry.k8s.io/kube-scheduler:v1.30.0", "a__b/c-d.e"}) {
    EXPECT_EQ(ValidateImageReference(ok), "") << ok;
  }
  for (const char* bad :
       {"", "Nginx", "a b", "/x", "x/", "a//b", "-a", "a-", "host:port/x", "host:/x", "a/b:c/d"}) {
    EXPECT_NE(ValidateImageReference(bad), "") << bad;
  }
}

TEST(NamesTest, MetricNames) {
  EXPECT_TRUE(IsMetricName("package_power_avg"));
  EXPECT_TRUE(IsMetricName("Node-Temp_1"));
  EXPECT_FALSE(IsMetricName(""));
  EXPECT_FALSE(IsMetricName("a/b"));
  EXPECT_FALSE(IsMetricName("a\\b"));
  EXPECT_FALSE(IsMetricName("a b"));
  EXPECT_TRUE(IsMetricName(std::string(253, 'a')));
  EXPECT_FALSE(IsMetricName(std::string(254, 'a')));
}

TEST(NamesTest, LongInputIsRejectedQuickly) {
  const auto start = std::chrono::steady_clock::now();
  const std::string long_name(1 << 20, 'a');
  EXPECT_NE(ValidateImageReference(long_name), "");
  EXPECT_NE(ValidateQuantity(std::string(1 << 20, '1')), "");
  EXPECT_FALSE(IsMetricName(long_name));
  EXPECT_EQ(ValidateImageReference(std::string(500, 'a') + "/b"), "");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
}

}  // namespace
}  // namespace powerctl
