// Snapshot and workload files: the demo loads, errors name the file and line.
#include "core/common/yaml.h"
#include "core/simulate/power_model.h"
#include "core/simulate/snapshot.h"
#include "core/simulate/workload.h"

#include <gtest/gtest.h>

#include <set>

namespace powerctl::simulate {
namespace {

TEST(SimulateSnapshotTest, TheDemoHasAtLeast20HeterogeneousNodes) {
  auto demo = DemoSnapshot();
  ASSERT_TRUE(demo.ok()) << demo.error().message;
  EXPECT_GE(demo->nodes.size(), 20u);
  std::set<double> idle_ratios, cores;
  for (const SimNode& n : demo->nodes) {
    ASSERT_EQ(n.power_curve.size(), kCurvePoints) << n.name;
    idle_ratios.insert(std::round(10 * n.power_curve.front() / n.power_curve.back()));
    cores.insert(n.cpu_cores);
    EXPECT_TRUE(n.ambient && n.cpu1 && n.cpu2) << n.name;
  }
  EXPECT_GE(idle_ratios.size(), 3u);  // server generations with different proportionality
  EXPECT_GE(cores.size(), 3u);
}

TEST(SimulateSnapshotTest, ErrorsNameTheFileAndTheNodesLine) {
  const char* text =
      "kind: ClusterSnapshot\n"
      "nodes:\n"
      "- name: good\n"
      "  cpu: 4\n"
      "  memory: 8Gi\n"
      "- name: bad\n"
      "  cpu: lots\n"
      "  memory: 8Gi\n";
  auto parsed = ParseSnapshot(text, "c.yaml");
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.error().code, ErrorCode::kInvalidInput);
  EXPECT_NE(parsed.error().message.find("c.yaml:6"), std::string::npos) << parsed.error().message;
  EXPECT_NE(parsed.error().message.find("cpu"), std::string::npos);
}

TEST(SimulateSnapshotTest, RejectsUnknownFieldsAndFallingCurves) {
  auto unknown = ParseSnapshot(
      "kind: ClusterSnapshot\nnodes:\n- {name: a, cpu: 1, memory: 1Gi, cpus: 2}\n", "u.yaml");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message.find("unknown field \"cpus\""), std::string::npos);
  auto falling = ParseSnapshot(
      "kind: ClusterSnapshot\nnodes:\n- {name: a, cpu: 1, memory: 1Gi, powerCurve: "
      "[100, 90, 110, 120, 130, 140, 150, 160, 170, 180, 190]}\n",
      "f.yaml");
  ASSERT_FALSE(falling.ok());
  EXPECT_NE(falling.error().message.find("must not fall"), std::string::npos);
  auto syntax = ParseSnapshot("kind: ClusterSnapshot\nnodes: [\n", "s.yaml");
  ASSERT_FALSE(syntax.ok());
  EXPECT_NE(syntax.error().message.find("s.yaml:"), std::string::npos);
}

TEST(SimulateSnapshotTest, TheDocumentReadsBackTheSame) {
  auto demo = DemoSnapshot();
  ASSERT_TRUE(demo.ok());
  std::string yaml = EmitYaml(SnapshotDocument(*demo));
  auto again = ParseSnapshot(yaml, "again.yaml");
  ASSERT_TRUE(again.ok()) << again.error().message;
  ASSERT_EQ(again->nodes.size(), demo->nodes.size());
  EXPECT_EQ(again->nodes[3].power_curve, demo->nodes[3].power_curve);
  EXPECT_EQ(again->nodes[3].labels, demo->nodes[3].labels);
  EXPECT_EQ(again->nodes[3].pods.size(), demo->nodes[3].pods.size());
  EXPECT_DOUBLE_EQ(again->nodes[3].memory_bytes, demo->nodes[3].memory_bytes);
}

TEST(SimulateSnapshotTest, AFileAboveTheServersYamlLimitsReadsBack) {
  // 500 nodes of 40 pods: more YAML nodes than the servers' hostile-input limit (200,000),
  // which a snapshot of the user's own large cluster easily has.
  Snapshot big;
  auto demo = DemoSnapshot();
  ASSERT_TRUE(demo.ok());
  for (int n = 0; n < 500; ++n) {
    SimNode node = demo->nodes[static_cast<std::size_t>(n) % demo->nodes.size()];
    node.name = "node-" + std::to_string(n);
    node.pods.clear();
    for (int p = 0; p < 40; ++p) {
      auto pod = ParsePodShorthand(
          {{"name", node.name + "-pod-" + std::to_string(p)}, {"cpu", "100m"}, {"memory", "64Mi"}},
          "test");
      ASSERT_TRUE(pod.ok());
      node.pods.push_back(std::move(*pod));
    }
    big.nodes.push_back(std::move(node));
  }
  const std::string yaml = EmitYaml(SnapshotDocument(big));
  auto strict = ParseYamlDocuments(yaml, "big.yaml");
  ASSERT_FALSE(strict.ok());
  EXPECT_NE(strict.error().message.find("max_nodes"), std::string::npos);
  auto again = ParseSnapshot(yaml, "big.yaml");
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(again->nodes.size(), 500u);
  EXPECT_EQ(again->nodes[499].pods.size(), 40u);
}

TEST(SimulateSnapshotTest, InputFileLimitsGrowWithTheFileOnly) {
  const YamlLimits server;
  EXPECT_EQ(InputFileYamlLimits(1000).max_nodes, server.max_nodes);
  EXPECT_EQ(InputFileYamlLimits(1000).max_bytes, server.max_bytes);
  EXPECT_EQ(InputFileYamlLimits(std::size_t{40} << 20).max_nodes, std::size_t{20} << 20);
  EXPECT_EQ(InputFileYamlLimits(std::size_t{40} << 20).max_bytes, std::size_t{40} << 20);
  EXPECT_EQ(InputFileYamlLimits(std::size_t{40} << 20).max_depth, server.max_depth);
  // Aliases still cannot blow a small file up.
  std::string laughs = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  for (char c = 'b'; c <= 'h'; ++c) {
    laughs += std::string(1, c) + ": &" + c + " [";
    for (int i = 0; i < 10; ++i) laughs += std::string(i ? ", *" : "*") + static_cast<char>(c - 1);
    laughs += "]\n";
  }
  auto blown = ParseSnapshot("kind: ClusterSnapshot\n" + laughs, "laughs.yaml");
  ASSERT_FALSE(blown.ok());
  EXPECT_NE(blown.error().message.find("max_nodes"), std::string::npos) << blown.error().message;
}

TEST(SimulateSnapshotTest, InputFilesAreReadUpToTheLimit) {
  auto missing = ReadInputFile("/nonexistent/cluster.yaml", "--cluster");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message, "--cluster /nonexistent/cluster.yaml: cannot open the file");
  // A device that never ends is refused once past the limit, not read forever.
  auto endless = ReadInputFile("/dev/zero", "--workload");
  ASSERT_FALSE(endless.ok());
  EXPECT_EQ(endless.error().code, ErrorCode::kInvalidInput);
  EXPECT_NE(endless.error().message.find("--workload /dev/zero: larger than 256 MiB"),
            std::string::npos)
      << endless.error().message;
}

TEST(SimulateWorkloadTest, TooManyPodsInAllAreRefusedBeforeAnyIsMade) {
  std::string text = "pods:\n";
  for (int i = 0; i < 6; ++i)
    text += "- {name: w" + std::to_string(i) + ", cpu: 1, memory: 1Gi, count: 100000}\n";
  auto w = ParseWorkload(text, "w.yaml");
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.error().message.find("pods[5]: more than 500000 pods in all"), std::string::npos)
      << w.error().message;
}

TEST(SimulateWorkloadTest, GenerationIsSeededAndReachesTheCpuAsked) {
  WorkloadSpec spec;
  spec.seed = 3;
  spec.cpu_cores = 50;
  auto a = GenerateWorkload(spec);
  auto b = GenerateWorkload(spec);
  ASSERT_EQ(a.size(), b.size());
  double cores = 0;
  int sidecars = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].pod.object, b[i].pod.object);
    cores += static_cast<double>(a[i].cpu_request_millis) / 1000;
    sidecars += a[i].pod.object["spec"]["containers"].size() > 1 ? 1 : 0;
  }
  EXPECT_GE(cores, 50);
  EXPECT_LT(cores, 54);  // stops at the first pod past the target (at most 4 cores)
  EXPECT_GT(sidecars, 0);
  spec.seed = 4;
  EXPECT_NE(GenerateWorkload(spec)[0].pod.object, a[0].pod.object);
}

TEST(SimulateWorkloadTest, FileEntriesRepeatWithCountAndSumAllContainers) {
  auto w = ParseWorkload(
      "pods:\n"
      "- {name: web, cpu: 500m, memory: 1Gi, count: 3}\n"
      "- name: two\n"
      "  containers: [{cpu: 1, memory: 1Gi}, {cpu: 250m, memory: 64Mi}]\n",
      "w.yaml");
  ASSERT_TRUE(w.ok()) << w.error().message;
  ASSERT_EQ(w->size(), 4u);
  EXPECT_EQ((*w)[2].pod.name, "web-2");
  EXPECT_EQ((*w)[3].cpu_request_millis, 1250);
  auto bad = ParseWorkload("pods:\n- {name: x, cpu: 1, memory: much}\n", "w.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("w.yaml:2"), std::string::npos) << bad.error().message;
}

TEST(SimulatePowerModelTest, TruthFollowsTheCurveAndBeliefFitsIt) {
  SimNode node;
  node.power_curve = {100, 130, 160, 190, 220, 250, 280, 310, 340, 370, 400};  // linear
  EXPECT_DOUBLE_EQ(TrueWatts(node, 0), 100);
  EXPECT_DOUBLE_EQ(TrueWatts(node, 0.25), 175);  // between the 20% and 30% points
  EXPECT_DOUBLE_EQ(TrueWatts(node, 1.5), 400);   // clamped
  BuiltinParams belief = BelievedParams(node);
  EXPECT_DOUBLE_EQ(belief.idle_watts, 100);
  EXPECT_DOUBLE_EQ(belief.max_watts, 400);
  EXPECT_NEAR(belief.curve, 1.0, 0.011);
  std::mt19937_64 rng(1);
  BuiltinParams off = WithError(belief, 0.1, rng);
  EXPECT_NE(off.idle_watts, belief.idle_watts);
  EXPECT_LE(std::abs(off.idle_watts / 100 - 1), 0.1 + 1e-9);
  EXPECT_LE(std::abs(off.max_watts / 400 - 1), 0.1 + 1e-9);
}

TEST(SimulatePowerModelTest, PeaksFitFollowsAConvexCurve) {
  BuiltinParams convex{100, 400, 2.0, 0.0};
  PeaksModel m = FitPeaksModel(convex, 0);
  auto at = [&](double x) { return m.k0 + m.k1 * std::exp(m.k2 * x); };
  EXPECT_NEAR(at(0), 100, 15);
  EXPECT_NEAR(at(100), 400, 15);
  EXPECT_LT(at(50) - at(40), at(100) - at(90));  // rising faster at high load
}

}  // namespace
}  // namespace powerctl::simulate
