#include "core/common/shared_text.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sstream>

namespace powerctl {
namespace {

TEST(SharedTextTest, CopiesShareOneBuffer) {
  SharedText a = std::string("Prometheus at http://prometheus.monitoring:9090");
  SharedText b = a;
  EXPECT_EQ(&a.str(), &b.str());
  EXPECT_EQ(a, b);
  // Equal texts made separately are equal without being the same buffer.
  SharedText c = "Prometheus at http://prometheus.monitoring:9090";
  EXPECT_NE(&a.str(), &c.str());
  EXPECT_EQ(a, c);
  EXPECT_FALSE(a == SharedText("other"));
}

TEST(SharedTextTest, EmptyHoldsNothing) {
  SharedText none;
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(none.str(), "");
  EXPECT_EQ(none, SharedText(std::string()));
  EXPECT_TRUE(SharedText("").empty());
  EXPECT_EQ(none.size(), 0u);
}

TEST(SharedTextTest, ReadsAsItsString) {
  SharedText text = "stale: measured 2m ago";
  const std::string& s = text;
  EXPECT_EQ(s, "stale: measured 2m ago");
  EXPECT_TRUE(text.starts_with("stale"));
  EXPECT_FALSE(text.starts_with("fresh"));
  EXPECT_EQ(text + "; the last refresh failed", "stale: measured 2m ago; the last refresh failed");
  EXPECT_EQ("why: " + text, "why: stale: measured 2m ago");
  EXPECT_EQ(fmt::format("[{}]", text), "[stale: measured 2m ago]");
  std::ostringstream out;
  out << text;
  EXPECT_EQ(out.str(), "stale: measured 2m ago");
  nlohmann::json j;
  j["reason"] = text;
  EXPECT_EQ(j.dump(), R"({"reason":"stale: measured 2m ago"})");
  EXPECT_EQ(text.size(), 22u);
}

}  // namespace
}  // namespace powerctl
