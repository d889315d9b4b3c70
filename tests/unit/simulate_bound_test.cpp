// The lower bound simulate measures every scorer against: never above a real placement's
// watts, exact where no curve bends, and what simulate reports.
#include "core/simulate/bound.h"
#include "core/simulate/power_model.h"
#include "core/simulate/simulate.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace powerctl::simulate {
namespace {

SimNode Node(const std::string& name, double cores, std::vector<double> curve) {
  SimNode n;
  n.name = name;
  n.cpu_cores = cores;
  n.memory_bytes = 64.0 * (1 << 30);
  n.max_pods = 100000;  // slots never bind, except where a test says so
  n.power_curve = std::move(curve);
  return n;
}

// `cores` of work as 100 equal pods.
std::vector<double> Pods(double cores) {
  return std::vector<double>(100, cores / 100);
}

NodeRuntime Runtime(const SimNode& node, double base) {
  NodeRuntime n;
  n.node = &node;
  n.base_cpu_used = n.cpu_used = base;
  return n;
}

// The cheapest way to put `added` cores on two nodes, tried on a fine grid of splits.
double BestSplit(const NodeRuntime& a, const NodeRuntime& b, double added, bool idle_off) {
  double best = 1e18;
  const double free_a = a.node->cpu_cores - a.base_cpu_used;
  const double free_b = b.node->cpu_cores - b.base_cpu_used;
  for (int k = 0; k <= 3000; ++k) {
    const double x = added * k / 3000.0;
    if (x > free_a + 1e-9 || added - x > free_b + 1e-9) continue;
    auto watts = [idle_off](const NodeRuntime& n, double more) {
      if (idle_off && more <= 0) return 0.0;
      return TrueWatts(*n.node, (n.base_cpu_used + more) / n.node->cpu_cores);
    };
    best = std::min(best, watts(a, x) + watts(b, added - x));
  }
  return best;
}

TEST(LowerBoundTest, NeverAboveAnyPlacementAndExactForLinearCurves) {
  // Real shapes: a concave many-core server and one with a jump near the top.
  SimNode concave = Node("concave", 128, {82, 181, 205, 228, 249, 268, 288, 309, 332, 352, 395});
  SimNode jumpy = Node("jumpy", 112, {50, 119, 142, 165, 189, 200, 223, 252, 295, 346, 415});
  std::vector<NodeRuntime> nodes = {Runtime(concave, 3), Runtime(jumpy, 5)};
  for (bool idle_off : {false, true}) {
    for (double added : {0.0, 10.0, 40.0, 90.0, 150.0, 232.0}) {
      const double bound = LowerBoundWatts(nodes, Pods(added), idle_off);
      EXPECT_LE(bound, BestSplit(nodes[0], nodes[1], added, idle_off) + 1e-6)
          << "added " << added << " idle_off " << idle_off;
    }
  }
  // No bend: the relaxation is the problem itself.
  SimNode a = Node("a", 10, {100, 110, 120, 130, 140, 150, 160, 170, 180, 190, 200});
  SimNode b = Node("b", 10, {50, 80, 110, 140, 170, 200, 230, 260, 290, 320, 350});
  std::vector<NodeRuntime> linear = {Runtime(a, 0), Runtime(b, 0)};
  for (double added : {0.0, 4.0, 10.0, 15.0}) {
    EXPECT_NEAR(LowerBoundWatts(linear, Pods(added), false),
                BestSplit(linear[0], linear[1], added, false), 1e-6)
        << added;
  }
  EXPECT_NEAR(LowerBoundWatts(linear, Pods(4), false), 150 + 4 * 10,
              1e-9);  // all on the cheap node
}

TEST(LowerBoundTest, SwitchingIdleNodesOffLowersTheBoundOnlyWhereANodeCanBeEmptied) {
  SimNode a = Node("a", 16, {100, 110, 120, 130, 140, 150, 160, 170, 180, 190, 200});
  SimNode b = Node("b", 16, {100, 110, 120, 130, 140, 150, 160, 170, 180, 190, 200});
  std::vector<NodeRuntime> nodes = {Runtime(a, 0), Runtime(b, 0)};
  EXPECT_NEAR(LowerBoundWatts(nodes, {}, true), 0, 1e-9);
  EXPECT_NEAR(LowerBoundWatts(nodes, Pods(8), false), 200 + 8 * 100.0 / 16, 1e-9);
  // One node on, half full: 8 cores of pods take no node past half, so the bound is exactly
  // one node at half (150 W) and the other off.
  EXPECT_NEAR(LowerBoundWatts(nodes, Pods(8), true), 150, 1e-9);
  // With more pods than one node holds, the envelope from "off" spreads a node's idle watts
  // over its cores: 24 cores cost at least 24 * 200 / 16.
  EXPECT_NEAR(LowerBoundWatts(nodes, Pods(24), true), 24 * 200.0 / 16, 1e-9);
  EXPECT_LE(LowerBoundWatts(nodes, Pods(8), true), BestSplit(nodes[0], nodes[1], 8, true) + 1e-6);
}

TEST(LowerBoundTest, ANodeTakesNoMoreThanItsFreePodSlotsCanHold) {
  // The cheap node has room for 100 cores but only 3 more pods: the 3 largest of the pods.
  SimNode cheap = Node("cheap", 100, {100, 110, 120, 130, 140, 150, 160, 170, 180, 190, 200});
  cheap.max_pods = 5;
  SimNode dear = Node("dear", 100, {100, 200, 300, 400, 500, 600, 700, 800, 900, 1000, 1100});
  NodeRuntime c = Runtime(cheap, 0);
  c.pod_count = 2;
  std::vector<NodeRuntime> nodes = {c, Runtime(dear, 0)};
  // Pods of 4, 2, 1, 1 and 1 cores: the cheap node takes at most 4 + 2 + 1 = 7 of the 9.
  EXPECT_NEAR(LowerBoundWatts(nodes, {1, 4, 1, 2, 1}, false), 200 + 7 * 1.0 + 2 * 10.0, 1e-9);
}

TEST(LowerBoundTest, PodSlotsArePricedByPodSizeNotCountedTwice) {
  // Two cheap nodes with one free slot each and a dear one with room: of pods of 4, 1 and 1
  // cores, the cheap nodes can hold only two. Counting each cheap slot as able to take the
  // largest pod would put all 6 cores on them (+6 W); any real placement (and the slot-aware
  // relaxation) puts 4 + 1 there and 1 core on the dear node: +15 W.
  SimNode a = Node("a", 100, {100, 110, 120, 130, 140, 150, 160, 170, 180, 190, 200});
  SimNode b = a;
  b.name = "b";
  a.max_pods = b.max_pods = 1;
  SimNode dear = Node("dear", 100, {100, 200, 300, 400, 500, 600, 700, 800, 900, 1000, 1100});
  std::vector<NodeRuntime> nodes = {Runtime(a, 0), Runtime(b, 0), Runtime(dear, 0)};
  const double bound = LowerBoundWatts(nodes, {1, 4, 1}, false);
  EXPECT_LE(bound, 300 + 15 + 1e-6);
  EXPECT_GE(bound, 300 + 15 - 0.5);
}

TEST(LowerBoundTest, SimulateReportsTheBoundAndEachScorersDistanceToIt) {
  auto snapshot = DemoSnapshot();
  ASSERT_TRUE(snapshot.ok());
  SimulationRequest request;
  request.snapshot = *snapshot;
  request.seeds = 2;
  request.loads = {25, 50};
  auto on = RunSimulation(request);
  ASSERT_TRUE(on.ok()) << on.error().message;
  request.idle_off = true;
  auto off = RunSimulation(request);
  ASSERT_TRUE(off.ok()) << off.error().message;
  for (std::size_t l = 0; l < 2; ++l) {
    ASSERT_TRUE(on->mean_bound[l].has_value());
    EXPECT_LT(*off->mean_bound[l], *on->mean_bound[l]);
    for (const ScorerSummary& s : on->summary) {
      ASSERT_TRUE(s.mean_watts[l] && s.above_bound[l]) << s.scorer;
      EXPECT_GE(*s.mean_watts[l], *on->mean_bound[l]) << s.scorer;
      EXPECT_GE(*s.above_bound[l], 0.0) << s.scorer;
    }
    for (const ScorerSummary& s : off->summary) {
      EXPECT_GE(*s.mean_watts[l], *off->mean_bound[l]) << s.scorer;
      EXPECT_LE(*s.mean_watts[l], *on->summary[&s - off->summary.data()].mean_watts[l]) << s.scorer;
    }
  }
  auto doc = SimulationDocument(*on);
  EXPECT_EQ(doc["lowerBound"].size(), 2u);
  EXPECT_TRUE(doc["summary"][0]["loads"][0].contains("aboveBoundPercent"));
}

}  // namespace
}  // namespace powerctl::simulate
