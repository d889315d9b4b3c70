#include "core/scoring/real_usage.h"

#include <gtest/gtest.h>

#include <string>

namespace powerctl::scoring {
namespace {

constexpr double kGi = 1024.0 * 1024.0 * 1024.0;

NodeUsage Memory(const std::string& node, double used_gi, double allocatable_gi) {
  NodeUsage u;
  u.node = node;
  u.memory_used_bytes = used_gi * kGi;
  u.memory_allocatable_bytes = allocatable_gi * kGi;
  return u;
}

config::ScoringSettings RealUsageSettings() {
  config::ScoringSettings s;
  s.unknown_score = 5;
  return s;
}

TEST(ScoreRealUsageTest, LowerUseScoresHigherProportionally) {
  // real-usage-scheduler's README case: node-02 at 33 % against two nodes at 13 %.
  auto scores = ScoreRealUsage(
      {Memory("node-01", 13, 100), Memory("node-02", 33, 100), Memory("node-03", 13, 100)},
      RealUsageSettings());
  ASSERT_EQ(scores.size(), 3u);
  EXPECT_DOUBLE_EQ(scores[0].component.value, 10.0);
  EXPECT_DOUBLE_EQ(scores[1].component.value, 0.0);
  EXPECT_DOUBLE_EQ(scores[2].component.value, 10.0);
  EXPECT_EQ(scores[1].component.name, "realUsage");
  EXPECT_EQ(scores[1].component.reason, "used memory 33.0% (lowest 13.0%, highest 33.0%)");
  auto mid = ScoreRealUsage({Memory("a", 20, 100), Memory("b", 30, 100), Memory("c", 60, 100)},
                            RealUsageSettings());
  EXPECT_DOUBLE_EQ(mid[1].component.value, 7.5);
}

TEST(ScoreRealUsageTest, MemoryAndCpuCountEqually) {
  NodeUsage a = Memory("a", 50, 100);  // memory 50 %
  a.cpu_used_cores = 1;
  a.cpu_allocatable_cores = 10;  // cpu 10 % -> 30 %
  NodeUsage b;
  b.node = "b";
  b.cpu_used_cores = 7;
  b.cpu_allocatable_cores = 10;  // cpu only: 70 %
  auto scores = ScoreRealUsage({a, b}, RealUsageSettings());
  EXPECT_DOUBLE_EQ(*scores[0].utilization, 0.3);
  EXPECT_DOUBLE_EQ(*scores[1].utilization, 0.7);
  EXPECT_EQ(scores[0].component.reason,
            "used memory 50.0%, cpu 10.0% (lowest 30.0%, highest 70.0%)");
  EXPECT_EQ(scores[1].component.reason, "used cpu 70.0% (lowest 30.0%, highest 70.0%)");
}

TEST(ScoreRealUsageTest, AllEqualScoreTenNotZero) {
  auto scores = ScoreRealUsage({Memory("a", 40, 100), Memory("b", 20, 50)}, RealUsageSettings());
  for (const auto& s : scores) {
    EXPECT_DOUBLE_EQ(s.component.value, 10.0);
    EXPECT_EQ(s.component.reason, "used memory 40.0% (all nodes equal)");
  }
}

TEST(ScoreRealUsageTest, MissingDataGetsTheUnknownScoreInsteadOfAborting) {
  NodeUsage none;
  none.node = "b";
  none.missing_reason = "no sample newer than 60s";
  NodeUsage zero_allocatable = Memory("c", 1, 0);
  auto scores = ScoreRealUsage({Memory("a", 10, 100), none, zero_allocatable}, RealUsageSettings());
  EXPECT_DOUBLE_EQ(scores[0].component.value, 10.0);
  EXPECT_EQ(scores[0].component.reason, "used memory 10.0% (the only node with usage data)");
  EXPECT_DOUBLE_EQ(scores[1].component.value, 5.0);
  EXPECT_EQ(scores[1].component.reason, "no usage data: no sample newer than 60s");
  EXPECT_EQ(scores[2].component.reason, "no usage data");
  EXPECT_EQ(scores[2].utilization, std::nullopt);
}

TEST(ScoreRealUsageTest, OverAllocatableStillRanksLower) {
  auto scores = ScoreRealUsage({Memory("a", 90, 100), Memory("b", 110, 100)}, RealUsageSettings());
  EXPECT_DOUBLE_EQ(scores[0].component.value, 10.0);
  EXPECT_DOUBLE_EQ(scores[1].component.value, 0.0);
}

}  // namespace
}  // namespace powerctl::scoring
