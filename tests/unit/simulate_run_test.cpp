// RunSimulation end to end on small snapshots, and the HTML report.
#include "core/simulate/export_snapshot.h"
#include "core/simulate/report_html.h"
#include "core/simulate/scorers.h"
#include "core/simulate/simulate.h"

#include <gtest/gtest.h>

namespace powerctl::simulate {
namespace {

// Two 8-core nodes: one draws 5 W per core, the other 25 W per core (linear curves).
Snapshot TwoNodeSnapshot() {
  auto parsed = ParseSnapshot(
      "kind: ClusterSnapshot\n"
      "nodes:\n"
      "- name: efficient\n"
      "  cpu: 8\n"
      "  memory: 32Gi\n"
      "  powerCurve: [60, 64, 68, 72, 76, 80, 84, 88, 92, 96, 100]\n"
      "- name: hungry\n"
      "  cpu: 8\n"
      "  memory: 32Gi\n"
      "  powerCurve: [100, 120, 140, 160, 180, 200, 220, 240, 260, 280, 300]\n",
      "two.yaml");
  EXPECT_TRUE(parsed.ok()) << parsed.error().message;
  return *parsed;
}

std::vector<WorkloadPod> RunPods(int n, const char* cpu) {
  std::vector<WorkloadPod> out;
  for (int i = 0; i < n; ++i) {
    auto pod = ParsePodShorthand(
        {{"name", "p" + std::to_string(i)}, {"cpu", cpu}, {"memory", "1Gi"}}, "test");
    out.push_back(*MakeWorkloadPod(std::move(*pod)));
  }
  return out;
}

const ScorerRun& ByName(const SeedRun& run, std::string_view name) {
  for (const ScorerRun& s : run.scorers)
    if (s.scorer == name) return s;
  throw std::runtime_error("no scorer");
}

TEST(SimulateRunTest, PowerctlPacksTheEfficientNodeWhileTheDefaultSpreads) {
  SimulationRequest request;
  request.snapshot = TwoNodeSnapshot();
  request.workload = RunPods(8, "1");  // half the cluster's CPU
  request.loads = {50};
  request.seeds = 1;
  request.prediction_error = 0;
  auto result = RunSimulation(request);
  ASSERT_TRUE(result.ok()) << result.error().message;
  const SeedRun& run = result->runs[0];
  EXPECT_EQ(ByName(run, "powerctl").node_pods, (std::vector<int>{8, 0}));
  EXPECT_EQ(ByName(run, "default").node_pods, (std::vector<int>{4, 4}));
  // True watts: 100 + 100 vs (60 + 20) + (100 + 100).
  EXPECT_NEAR(ByName(run, "powerctl").total_watts, 200, 1e-6);
  EXPECT_NEAR(ByName(run, "default").total_watts, 280, 1e-6);
  ASSERT_EQ(result->summary[1].scorer, "default");
  EXPECT_NEAR(*result->summary[1].powerctl_saving[0], 100.0 * 80 / 280, 1e-6);
  // The load point is reached exactly when the 8th pod arrives.
  EXPECT_NEAR(*ByName(run, "powerctl").at_loads[0].watts, 200, 1e-6);
}

TEST(SimulateRunTest, SameSeedSameResultAndFullClustersCountUnscheduledPods) {
  SimulationRequest request;
  request.snapshot = TwoNodeSnapshot();
  request.workload = RunPods(20, "1");  // 16 cores fit, 4 pods do not
  request.loads = {100};
  request.seeds = 2;
  auto a = RunSimulation(request);
  auto b = RunSimulation(request);
  ASSERT_TRUE(a.ok() && b.ok());
  for (std::size_t k = 0; k < a->summary.size(); ++k) {
    EXPECT_EQ(a->summary[k].mean_total_watts, b->summary[k].mean_total_watts);
    EXPECT_EQ(a->runs[0].scorers[k].unscheduled, 4) << a->runs[0].scorers[k].scorer;
    EXPECT_EQ(a->runs[0].scorers[k].placed, 16);
  }
}

TEST(SimulateRunTest, ScorersCanBeChosenButDefaultAlwaysRuns) {
  SimulationRequest request;
  request.snapshot = TwoNodeSnapshot();
  request.workload = RunPods(4, "1");
  request.seeds = 1;
  request.loads = {20};
  request.scorers = {"peaks"};
  auto result = RunSimulation(request);
  ASSERT_TRUE(result.ok());
  ASSERT_EQ(result->summary.size(), 2u);
  EXPECT_EQ(result->summary[0].scorer, "default");
  EXPECT_EQ(result->summary[1].scorer, "peaks");
  request.scorers = {"best"};
  auto bad = RunSimulation(request);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidInput);
}

TEST(SimulateRunTest, BadSettingsAreUsageErrors) {
  SimulationRequest request;
  request.snapshot = TwoNodeSnapshot();
  request.loads = {0};
  EXPECT_EQ(RunSimulation(request).error().code, ErrorCode::kInvalidInput);
  request.loads = {50};
  request.seeds = 0;
  EXPECT_EQ(RunSimulation(request).error().code, ErrorCode::kInvalidInput);
  request.seeds = 1;
  request.snapshot.nodes[0].annotations["powerctl.io/idle-watts"] = "lots";
  auto bad = RunSimulation(request);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("efficient"), std::string::npos) << bad.error().message;
}

TEST(SimulateRunTest, TheDemoRunsAndReportsEveryLoad) {
  SimulationRequest request;
  request.snapshot = *DemoSnapshot();
  request.seeds = 2;
  auto result = RunSimulation(request);
  ASSERT_TRUE(result.ok()) << result.error().message;
  ASSERT_EQ(result->summary.size(), 4u);
  for (const ScorerSummary& s : result->summary) {
    for (std::size_t l = 0; l < 3; ++l) ASSERT_TRUE(s.mean_watts[l].has_value()) << s.scorer;
    EXPECT_LT(*s.mean_watts[0], *s.mean_watts[1]);  // more load, more watts
    EXPECT_LT(*s.mean_watts[1], *s.mean_watts[2]);
  }
  std::string html = RenderHtmlReport(*result, request.snapshot, {{"powerctl", "simulate"}, "1.0"});
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);  // nothing to run, nothing to fetch
  EXPECT_EQ(html.find("href="), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos);
  for (const ScorerSummary& s : result->summary)
    EXPECT_NE(html.find("stroke=\"" + ScorerColour(s.scorer) + "\""), std::string::npos);
  EXPECT_NE(html.find("gen2019-6"), std::string::npos);
}

TEST(SimulateExportTest, NodesAndTheirBoundPodsBecomeASnapshot) {
  nlohmann::json node = {
      {"metadata",
       {{"name", "n1"},
        {"labels", {{"ambient/min", "10"}}},
        {"annotations",
         {{"powerctl.io/idle-watts", "90"},
          {"kubectl.kubernetes.io/last-applied-configuration", "{...}"}}}}},
      {"status", {{"allocatable", {{"cpu", "3900m"}, {"memory", "8Gi"}, {"pods", "50"}}}}}};
  nlohmann::json bound = {
      {"metadata", {{"name", "web"}, {"namespace", "shop"}}},
      {"spec",
       {{"nodeName", "n1"},
        {"containers", {{{"name", "c"}, {"resources", {{"requests", {{"cpu", "250m"}}}}}}}}}},
      {"status", {{"phase", "Running"}}}};
  nlohmann::json done = bound;
  done["status"]["phase"] = "Succeeded";
  nlohmann::json pending = bound;
  pending["spec"].erase("nodeName");
  auto snapshot = SnapshotFromObjects({node}, {bound, done, pending});
  ASSERT_TRUE(snapshot.ok()) << snapshot.error().message;
  ASSERT_EQ(snapshot->nodes.size(), 1u);
  const SimNode& n = snapshot->nodes[0];
  EXPECT_DOUBLE_EQ(n.cpu_cores, 3.9);
  EXPECT_EQ(n.max_pods, 50);
  EXPECT_EQ(n.annotations.count("kubectl.kubernetes.io/last-applied-configuration"), 0u);
  ASSERT_EQ(n.pods.size(), 1u);
  EXPECT_EQ(n.pods[0].name, "shop/web");
  EXPECT_FALSE(SnapshotFromObjects({}, {}).ok());
}

}  // namespace
}  // namespace powerctl::simulate
