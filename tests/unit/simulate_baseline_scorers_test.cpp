// The baseline scorers against the published code's test vectors
// (docs/reference/minimizepower.md, docs/reference/peaks.md).
#include "core/simulate/baseline_scorers.h"

#include <gtest/gtest.h>

#include <limits>

namespace powerctl::simulate {
namespace {

using V = std::vector<std::int64_t>;

TEST(SimulateMinimizePowerNormalizeTest, MatchesMinimizePowersTestVectors) {
  // TestNormalizeScore in MinimizePower's minimize_power_test.go.
  EXPECT_EQ(MinimizePowerNormalize({-1, 1, 4, 5, 7, 9}), (V{0, 100, 63, 50, 25, 0}));
  EXPECT_EQ(MinimizePowerNormalize({5, -1, 5}), (V{10, 0, 10}));
  EXPECT_EQ(MinimizePowerNormalize({-1, -1, -1}), (V{0, 0, 0}));
}

TEST(SimulateMinimizePowerNormalizeTest, APowerDecreaseLooksLikeAnError) {
  // MinimizePower's bug, kept on purpose: a predicted -3 W gets the worst score, like a failure.
  EXPECT_EQ(MinimizePowerNormalize({-3, 2, 6}), (V{0, 100, 0}));
}

TEST(SimulateMinimizePowerRawScoreTest, RoundsInputsAndReadsOnlyTheFirstContainer) {
  MinimizePowerNodeInputs node;
  node.cpu_capacity_cores = 30;
  node.cpu_used_cores = 5;
  node.ambient_norm = node.cpu1_norm = node.cpu2_norm = 0.5;
  node.model = BuiltinParams{100, 400, 1.0, 0.0};
  // 1 core on 30: before 0.1667 -> 0.2, after 0.2 -> 0.2: the rounding hides the pod.
  EXPECT_EQ(MinimizePowerRawScore(node, {1.0, 0}), 0);
  // 4 cores: 0.2 -> 0.3: 10% of 300 W = 30 W.
  EXPECT_EQ(MinimizePowerRawScore(node, {4.0, 0}), 30);
  // No request: limits x 0.85: 4 x 0.85 = 3.4 -> (8.4/30 = 0.28 -> 0.3).
  EXPECT_EQ(MinimizePowerRawScore(node, {0, 4.0}), 30);
  // Neither: MinimizePower cannot score the pod.
  EXPECT_EQ(MinimizePowerRawScore(node, {0, 0}), -1);
  // Limits beyond the free capacity: "overload".
  EXPECT_EQ(MinimizePowerRawScore(node, {1.0, 26.0}), -1);
  // A missing temperature label makes the node unscorable.
  node.cpu1_norm.reset();
  EXPECT_EQ(MinimizePowerRawScore(node, {4.0, 0}), -1);
}

TEST(SimulateMinimizePowerRawScoreTest, RoundTenthIsHalfUp) {
  EXPECT_DOUBLE_EQ(RoundTenth(0.25), 0.3);
  EXPECT_DOUBLE_EQ(RoundTenth(0.24), 0.2);
  EXPECT_DOUBLE_EQ(RoundTenth(0.36), 0.4);
}

TEST(SimulatePeaksTest, NormalizeFollowsThePlugin) {
  EXPECT_EQ(PeaksNormalize({0, 0, 0}), (V{0, 0, 0}));        // all zero: unchanged
  EXPECT_EQ(PeaksNormalize({7, 7}), (V{100, 100}));          // all equal, not zero: 100
  EXPECT_EQ(PeaksNormalize({10, 20, 30}), (V{100, 50, 0}));  // cheapest jump scores 100
  EXPECT_EQ(PeaksNormalize({10, 13, 30}), (V{100, 85, 0}));  // int64(15.0) = 15
}

TEST(SimulatePeaksTest, RawScoreIsTheModelsJumpTimes1e15AndZeroPast100Percent) {
  PeaksModel linear{100, 1e-13, 0.01};  // tiny k1 so the 1e15 factor stays in range
  std::int64_t small = PeaksRawScore(10, 1000, 10000, linear);  // 10% -> 20%
  double expected = 1e-13 * (std::exp(0.2) - std::exp(0.1)) * 1e15;
  EXPECT_NEAR(static_cast<double>(small), expected, 1.0);
  // 95% + 10% > 100%: raw 0, which PEAKS normalises to the best score.
  EXPECT_EQ(PeaksRawScore(95, 1000, 10000, linear), 0);
  EXPECT_EQ(PeaksNormalize({0, small}), (V{100, 0}));
}

TEST(SimulateDefaultSchedulerTest, LeastAllocatedAndBalancedAllocation) {
  RequestedResources r;
  r.cpu_allocatable_millis = 4000;
  r.memory_allocatable_bytes = 8000;
  r.cpu_millis = 1000;    // 25%
  r.memory_bytes = 4000;  // 50%
  EXPECT_EQ(LeastAllocatedScore(r), (75 + 50) / 2);
  EXPECT_EQ(BalancedAllocationScore(r), 75);  // (1 - |0.25 - 0.5|) * 100
  EXPECT_EQ(DefaultSchedulerScore(r), 62 + 75);
  r.memory_bytes = 8000;  // a full resource: balanced scores 0
  EXPECT_EQ(BalancedAllocationScore(r), 0);
  r.cpu_millis = 5000;  // more than allocatable: least-allocated 0 for CPU
  EXPECT_EQ(LeastAllocatedScore(r), 0);
}

RequestedResources Requested(std::int64_t cpu, std::int64_t memory, std::int64_t cpu_allocatable,
                             std::int64_t memory_allocatable) {
  RequestedResources r;
  r.cpu_millis = cpu;
  r.memory_bytes = memory;
  r.cpu_allocatable_millis = cpu_allocatable;
  r.memory_allocatable_bytes = memory_allocatable;
  return r;
}

// The cases of TestMostAllocatedScoringStrategy (kubernetes, pkg/scheduler/framework/plugins/
// noderesources/most_allocated_test.go) with the default resources (cpu and memory, weight 1).
// The requests here are what the plugin sums: the node's pods plus the incoming pod.
TEST(SimulateMostAllocatedTest, MatchesUpstreamCases) {
  // "nothing scheduled, nothing requested" (a pod without containers).
  EXPECT_EQ(MostAllocatedScore(Requested(0, 0, 4000, 10000)), 0);
  // "nothing scheduled, resources requested, differently sized nodes": 3000/5000 asked.
  EXPECT_EQ(MostAllocatedScore(Requested(3000, 5000, 4000, 10000)), 62);  // (75 + 50) / 2
  EXPECT_EQ(MostAllocatedScore(Requested(3000, 5000, 6000, 10000)), 50);  // (50 + 50) / 2
  // "no resources requested, pods scheduled with resources".
  EXPECT_EQ(MostAllocatedScore(Requested(6000, 0, 10000, 20000)), 30);     // (60 + 0) / 2
  EXPECT_EQ(MostAllocatedScore(Requested(6000, 5000, 10000, 20000)), 42);  // (60 + 25) / 2
  // "resources requested, pods scheduled with resources".
  EXPECT_EQ(MostAllocatedScore(Requested(6000, 10000, 10000, 20000)), 55);  // (60 + 50) / 2
  // "resources requested equal node capacity".
  EXPECT_EQ(MostAllocatedScore(Requested(5000, 9000, 5000, 10000)), 95);  // (100 + 90) / 2
  EXPECT_EQ(MostAllocatedScore(Requested(5000, 9000, 10000, 9000)), 75);  // (50 + 100) / 2
}

TEST(SimulateMostAllocatedTest, RequestsAboveAllocatableDependOnTheVersion) {
  // "no resources requested, pods scheduled, nonzero request for resource": three pods at the
  // defaults (100m, 200 MiB) on a 250m / 1000 MiB node. From 1.22 the CPU counts as full.
  constexpr std::int64_t kMiB = 1024 * 1024;
  RequestedResources over = Requested(300, 600 * kMiB, 250, 1000 * kMiB);
  EXPECT_EQ(MostAllocatedScore(over, OverAllocatable::kScoresFull), 80);  // (100 + 60) / 2
  EXPECT_EQ(MostAllocatedScore(over, OverAllocatable::kScoresZero), 30);  // (0 + 60) / 2, 1.20
  RequestedResources under = Requested(100, 200 * kMiB, 250, 1000 * kMiB);
  EXPECT_EQ(MostAllocatedScore(under, OverAllocatable::kScoresFull), 30);  // (40 + 20) / 2
  EXPECT_EQ(MostAllocatedScore(under, OverAllocatable::kScoresZero), 30);
  // No allocatable at all scores 0 rather than dividing by zero.
  EXPECT_EQ(MostAllocatedScore(Requested(100, 100, 0, 0)), 0);
}

TEST(SimulateMostAllocatedTest, IsTheMirrorOfLeastAllocated) {
  RequestedResources r = Requested(1000, 2000, 4000, 8000);
  EXPECT_EQ(MostAllocatedScore(r), 25);
  EXPECT_EQ(MostAllocatedScore(r) + LeastAllocatedScore(r), 100);
}

}  // namespace
}  // namespace powerctl::simulate
