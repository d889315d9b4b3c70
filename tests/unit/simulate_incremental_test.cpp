// The simulation's incremental scoring against scoring every candidate afresh: on random
// clusters (mixed sizes and curves, scarce pod slots, pods with and without CPU requests) the
// powerctl scorer's totals are the same as SchedulingCore::Prioritize's for every candidate of
// every pod, so every pod lands on the same node; and parallel runs give what serial runs give.
#include "core/simulate/scorers.h"
#include "core/simulate/simulate.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

namespace powerctl::simulate {
namespace {

Snapshot RandomCluster(std::uint64_t seed, int nodes) {
  std::mt19937_64 rng(seed);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<std::uint64_t>(n)); };
  const int cpus[] = {4, 8, 16, 32, 64};
  std::string text = "kind: ClusterSnapshot\nnodes:\n";
  for (int i = 0; i < nodes; ++i) {
    const int cpu = cpus[pick(5)];
    // Curves of differing shapes: some steep from idle, some nearly flat, a few with a jump.
    std::vector<int> curve;
    int w = 40 + pick(120);
    for (int p = 0; p <= 10; ++p) {
      curve.push_back(w);
      w += 2 + pick(30) + (p == 8 && pick(3) == 0 ? 60 : 0);
    }
    text += fmt::format(
        "- name: n{:03d}\n  cpu: {}\n  memory: {}Gi\n  pods: {}\n"
        "  labels: {{ambient/min: \"10\", ambient/max: \"40\", cpu1/min: \"20\", cpu1/max: "
        "\"90\", cpu2/min: \"20\", cpu2/max: \"90\"}}\n"
        "  temperatures: {{ambient: {}, cpu1: {}, cpu2: {}}}\n  powerCurve: [{}]\n",
        i, cpu, cpu * (2 + pick(4)), 4 + pick(20), 18 + pick(10), 40 + pick(25), 40 + pick(25),
        fmt::join(curve, ", "));
    if (pick(2) == 0) {
      text += fmt::format("  existingPods:\n  - {{name: ds-{:03d}, cpu: {}m, memory: 128Mi}}\n", i,
                          100 * (1 + pick(5)));
    }
  }
  auto parsed = ParseSnapshot(text, "random.yaml");
  EXPECT_TRUE(parsed.ok()) << parsed.error().message;
  return *parsed;
}

std::vector<WorkloadPod> RandomPods(std::uint64_t seed, int count) {
  std::mt19937_64 rng(seed + 1000);
  const char* sizes[] = {"100m", "250m", "500m", "1", "2", "4"};
  std::vector<WorkloadPod> out;
  for (int i = 0; i < count; ++i) {
    nlohmann::json entry = {{"name", fmt::format("p{}", i)}, {"memory", "512Mi"}};
    if (rng() % 10 != 0) entry["cpu"] = sizes[rng() % 6];  // a tenth request no CPU
    auto pod = ParsePodShorthand(entry, "test");
    out.push_back(*MakeWorkloadPod(std::move(*pod)));
  }
  return out;
}

// Places `pods` with both scorers side by side, comparing every candidate's total.
void ExpectSameTotals(std::uint64_t seed, const config::PowerctlConfig& config) {
  const Snapshot snapshot = RandomCluster(seed, 40);
  std::mt19937_64 error_rng(seed);
  auto initial = InitialNodes(snapshot, 0.1, error_rng);
  ASSERT_TRUE(initial.ok()) << initial.error().message;
  std::vector<NodeRuntime> nodes = *initial;
  ScorerOptions every;
  every.score_every_candidate = true;
  auto incremental = MakeScorer(kScorerPowerctl, nodes, config);
  auto full = MakeScorer(kScorerPowerctl, nodes, config, every);
  ASSERT_TRUE(incremental.ok() && full.ok());
  int placed = 0;
  for (const WorkloadPod& pod : RandomPods(seed, 400)) {
    std::vector<std::size_t> feasible;
    for (std::size_t i = 0; i < nodes.size(); ++i)
      if (nodes[i].Fits(pod)) feasible.push_back(i);
    if (feasible.empty()) continue;
    const std::vector<std::int64_t> expected = (*full)->Score(pod, feasible, nodes);
    const std::vector<std::int64_t> got = (*incremental)->Score(pod, feasible, nodes);
    ASSERT_EQ(got, expected) << "seed " << seed << ", pod " << pod.pod.name;
    const std::size_t best = static_cast<std::size_t>(
        std::max_element(expected.begin(), expected.end()) - expected.begin());
    nodes[feasible[best]].Place(pod);
    (*full)->Placed(pod, feasible[best], nodes);
    (*incremental)->Placed(pod, feasible[best], nodes);
    ++placed;
  }
  EXPECT_GT(placed, 100);  // the cluster filled far enough for slots and CPU to run short
}

TEST(SimulateIncrementalTest, PowerctlTotalsEqualPrioritizeOnRandomClusters) {
  config::PowerctlConfig config;
  for (std::uint64_t seed = 1; seed <= 6; ++seed) ExpectSameTotals(seed, config);
}

TEST(SimulateIncrementalTest, PowerctlTotalsEqualPrioritizeWithOtherSettings) {
  config::PowerctlConfig marginal;
  marginal.scoring.objective = config::kObjectiveMarginal;
  marginal.scheduler.resource_scoring = config::kResourceScoringSpread;
  ExpectSameTotals(11, marginal);
  config::PowerctlConfig tight;
  tight.scoring.tie_tolerance = 0;
  tight.scheduler.resource_scoring = config::kResourceScoringPack;
  ExpectSameTotals(12, tight);
}

TEST(SimulateIncrementalTest, ParallelRunsEqualSerialRuns) {
  SimulationRequest request;
  request.snapshot = RandomCluster(21, 30);
  request.pods = 300;
  request.seeds = 2;
  request.loads = {10, 30};
  request.threads = 1;
  auto serial = RunSimulation(request);
  request.threads = 4;
  auto parallel = RunSimulation(request);
  ASSERT_TRUE(serial.ok() && parallel.ok());
  EXPECT_EQ(SimulationDocument(*serial).dump(), SimulationDocument(*parallel).dump());
  for (std::size_t s = 0; s < serial->runs.size(); ++s) {
    for (std::size_t k = 0; k < serial->runs[s].scorers.size(); ++k) {
      EXPECT_EQ(serial->runs[s].scorers[k].placement, parallel->runs[s].scorers[k].placement);
    }
  }
}

}  // namespace
}  // namespace powerctl::simulate
