// RunSimulation's progress callback: when it is called and what it says.
#include "core/simulate/simulate.h"

#include <gtest/gtest.h>

namespace powerctl::simulate {
namespace {

Snapshot TwoEightCoreNodes() {
  auto parsed = ParseSnapshot(
      "kind: ClusterSnapshot\n"
      "nodes:\n"
      "- {name: a, cpu: 8, memory: 32Gi, powerCurve: [60, 64, 68, 72, 76, 80, 84, 88, 92, 96, "
      "100]}\n"
      "- {name: b, cpu: 8, memory: 32Gi, powerCurve: [100, 120, 140, 160, 180, 200, 220, 240, "
      "260, 280, 300]}\n",
      "two.yaml");
  EXPECT_TRUE(parsed.ok()) << parsed.error().message;
  return *parsed;
}

std::vector<WorkloadPod> OneCorePods(int n) {
  std::vector<WorkloadPod> out;
  for (int i = 0; i < n; ++i) {
    auto pod = ParsePodShorthand(
        {{"name", "p" + std::to_string(i)}, {"cpu", "1"}, {"memory", "1Gi"}}, "test");
    out.push_back(*MakeWorkloadPod(std::move(*pod)));
  }
  return out;
}

TEST(SimulateProgressTest, EveryWholePercentAndEveryRunsEndIsReportedInOrder) {
  SimulationRequest request;
  request.snapshot = TwoEightCoreNodes();
  // Each pod adds 1/16 of the cluster's CPU (6.25 %): every pod passes a whole percent.
  request.workload = OneCorePods(8);
  request.loads = {50};
  request.seeds = 3;
  request.scorers = {"powerctl", "default"};
  request.threads = 1;  // runs one after the other, so their calls come in order
  std::vector<SimulationProgress> calls;
  request.progress = [&](const SimulationProgress& p) { calls.push_back(p); };
  auto result = RunSimulation(request);
  ASSERT_TRUE(result.ok()) << result.error().message;

  // Per seed and scorer: 0 % before any pod, one call per pod, one at the end.
  const int per_run = 1 + 8 + 1;
  ASSERT_EQ(calls.size(), static_cast<std::size_t>(3 * 2 * per_run));
  int ends = 0;
  double previous = 0;
  for (std::size_t i = 0; i < calls.size(); ++i) {
    const SimulationProgress& p = calls[i];
    const int run = static_cast<int>(i) / per_run;
    EXPECT_EQ(p.seeds, 3);
    EXPECT_EQ(p.scorers, 2);
    EXPECT_EQ(p.seed_index, run / 2) << i;
    EXPECT_EQ(p.scorer_index, run % 2) << i;
    EXPECT_EQ(p.scorer, p.scorer_index == 0 ? "powerctl" : "default");  // in request order
    EXPECT_GE(p.fraction_done, previous) << i;
    EXPECT_LE(p.fraction_done, 1.0);
    previous = p.fraction_done;
    const int step = static_cast<int>(i) % per_run;
    EXPECT_EQ(p.scorer_done, step == per_run - 1) << i;
    if (p.scorer_done) {
      ++ends;
      EXPECT_DOUBLE_EQ(p.load_percent, 50);
      EXPECT_DOUBLE_EQ(p.fraction_done, (run + 1) / 6.0);
    } else {
      EXPECT_DOUBLE_EQ(p.load_percent, 6.25 * step);
    }
  }
  EXPECT_EQ(ends, 3 * 2);
  EXPECT_DOUBLE_EQ(calls.back().fraction_done, 1.0);
}

TEST(SimulateProgressTest, NoCallbackIsFine) {
  SimulationRequest request;
  request.snapshot = TwoEightCoreNodes();
  request.workload = OneCorePods(4);
  request.loads = {25};
  request.seeds = 1;
  EXPECT_TRUE(RunSimulation(request).ok());
}

}  // namespace
}  // namespace powerctl::simulate
