#include "core/scoring/pod_slots.h"

#include <gtest/gtest.h>

#include <limits>
#include <memory>

namespace powerctl::scoring {
namespace {

// A node of `cores` cores and `max_pods` slots running `pods` pods of `pod_cpu` cores each.
cluster::NodeState SlotsNode(double cores, double max_pods, int pods, double pod_cpu) {
  cluster::NodeState node;
  node.name = "n";
  node.cpu_allocatable = cores;
  node.pods_allocatable = max_pods;
  for (int i = 0; i < pods; ++i) {
    auto pod = std::make_shared<cluster::PodInfo>();
    pod->requests.cpu_cores = pod_cpu;
    node.pods.push_back(pod);
    node.requested.cpu_cores += pod_cpu;
  }
  return node;
}

TEST(ReachableCpuTest, CountsTheAveragePodInTheOtherFreeSlots) {
  cluster::NodeState big = SlotsNode(384, 110, 10, 1.0);  // 100 free slots, 1 core per pod so far
  cluster::NodeState unknown = SlotsNode(64, 110, 10, 1.0);
  unknown.pods_allocatable.reset();
  auto reachable = ReachableCpu({&big, &unknown, nullptr}, 4.0);
  ASSERT_EQ(reachable.size(), 3u);
  EXPECT_DOUBLE_EQ(reachable[0], 4.0 + 99 * 1.0);
  EXPECT_TRUE(std::isinf(reachable[1]));
  EXPECT_TRUE(std::isinf(reachable[2]));
}

TEST(TypicalPodCpuTest, RoundsTheAverageToAboutOnePercent) {
  EXPECT_DOUBLE_EQ(TypicalPodCpu(1.0), 1.0);
  EXPECT_DOUBLE_EQ(TypicalPodCpu(0.1 + 1e-15), TypicalPodCpu(0.1 - 1e-15));
  for (double average : {0.0137, 0.25, 0.97, 3.3, 47.0}) {
    EXPECT_NEAR(TypicalPodCpu(average), average, average * 0.008 + 0.0005) << average;
  }
  EXPECT_DOUBLE_EQ(TypicalPodCpu(0.0002), 0.001);  // a millicore at least
  EXPECT_DOUBLE_EQ(TypicalPodCpu(0.0), 0.0);
}

TEST(ReachableCpuTest, ABindDoesNotMoveWhatTheOtherNodesReach) {
  // 1,000 pods of 0.1 cores over two nodes; one more lands on `a`. The exact average moves in
  // its last bits, and `b`'s remembered estimate must stay valid.
  cluster::NodeState a = SlotsNode(64, 1000, 499, 0.1);
  cluster::NodeState b = SlotsNode(64, 1000, 501, 0.1);
  const double before = ReachableCpu({&a, &b}, 0.1)[1];
  cluster::NodeState a_after = SlotsNode(64, 1000, 500, 0.1);
  EXPECT_EQ(ReachableCpu({&a_after, &b}, 0.1)[1], before);
  // A bind of a pod three times the average: the average moves 0.2 %, `b` reaches the same.
  a_after.requested.cpu_cores = a.requested.cpu_cores + 0.3;
  EXPECT_EQ(ReachableCpu({&a_after, &b}, 0.1)[1], before);
}

TEST(SlotShareFactorTest, RaisesSmallPodsOnANodeShortOfSlots) {
  // 384 cores, 110 slots, 99 used by 1-core pods: 285 free cores in 11 slots (25.9 each).
  cluster::NodeState node = SlotsNode(384, 110, 99, 1.0);
  const double reachable = 0.5 + 10 * 1.0;  // far below the free cores: short of slots
  const double used = 99.0 / 110.0;
  const double slot_cpu = (384.0 - 99.0) / 11.0;
  EXPECT_NEAR(SlotShareFactor(node, reachable, 0.5), 1 + (slot_cpu / 0.5 - 1) * used * used * used,
              1e-9);
  // A pod smaller still pays more; one as large as a slot's share pays nothing extra.
  EXPECT_GT(SlotShareFactor(node, reachable, 0.1), SlotShareFactor(node, reachable, 0.5));
  EXPECT_DOUBLE_EQ(SlotShareFactor(node, reachable, slot_cpu), 1.0);
}

TEST(SlotShareFactorTest, LeavesNodesThatAreNotShortOfSlotsAlone) {
  cluster::NodeState node = SlotsNode(16, 110, 50, 0.1);
  // The node's free slots can carry its free cores: no raise, however small the pod.
  EXPECT_DOUBLE_EQ(SlotShareFactor(node, /*reachable_cpu=*/100, 0.1), 1.0);
  // Missing facts: no raise.
  cluster::NodeState no_limit = node;
  no_limit.pods_allocatable.reset();
  EXPECT_DOUBLE_EQ(SlotShareFactor(no_limit, 1, 0.1), 1.0);
  // A pod without CPU, and a node without a free slot.
  EXPECT_DOUBLE_EQ(SlotShareFactor(node, 1, 0.0), 1.0);
  EXPECT_DOUBLE_EQ(SlotShareFactor(SlotsNode(16, 4, 4, 0.1), 1, 0.1), 1.0);
}

TEST(SlotShareFactorTest, IsPhasedInByTheShareOfSlotsUsed) {
  // Same free CPU per slot and pod, fewer slots used: a smaller raise; none on an empty node.
  cluster::NodeState empty = SlotsNode(384, 110, 0, 1.0);
  cluster::NodeState half = SlotsNode(384, 110, 55, 1.0);
  EXPECT_DOUBLE_EQ(SlotShareFactor(empty, 50, 0.25), 1.0);
  EXPECT_GT(SlotShareFactor(half, 50, 0.25), 1.0);
  EXPECT_LT(SlotShareFactor(half, 50, 0.25),
            SlotShareFactor(SlotsNode(384, 110, 99, 1.0), 20, 0.25));
}

TEST(ApplySlotShareTest, RaisesTheFillCostAndRecordsTheFactor) {
  cluster::NodeState short_of_slots = SlotsNode(384, 110, 99, 1.0);
  cluster::NodeState roomy = SlotsNode(16, 110, 10, 0.1);
  std::vector<predict::PowerEstimate> power(4);
  for (auto& p : power) p.fill_watts_per_core = 2.0;
  power[2].overcommitted = true;
  power[3].fill_watts_per_core.reset();
  std::vector<const cluster::NodeState*> nodes = {&short_of_slots, &roomy, &short_of_slots,
                                                  &short_of_slots};
  std::vector<double> reachable = {10, 1000, 10, 10};
  ApplySlotShare(power, nodes, reachable, 0.25);
  const double factor = SlotShareFactor(short_of_slots, 10, 0.25);
  EXPECT_GT(factor, 1.0);
  EXPECT_DOUBLE_EQ(*power[0].fill_watts_per_core, 2.0 * factor);
  EXPECT_DOUBLE_EQ(power[0].fill_slot_factor, factor);
  EXPECT_DOUBLE_EQ(*power[1].fill_watts_per_core, 2.0);
  EXPECT_DOUBLE_EQ(*power[2].fill_watts_per_core, 2.0);  // overcommitted: left alone
  EXPECT_FALSE(power[3].fill_watts_per_core);
  EXPECT_DOUBLE_EQ(power[3].fill_slot_factor, 1.0);
}

}  // namespace
}  // namespace powerctl::scoring
