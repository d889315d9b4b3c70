// SchedulingCore: the extender's decisions from snapshots (no network, no cluster).
#include "core/predict/builtin_model.h"
#include "core/scoring/scheduling_core.h"
#include "tests/unit/telemetry_fakes.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>

namespace powerctl::scoring {
namespace {

using json = nlohmann::json;

json Node(const std::string& name, const std::string& idle, const std::string& max) {
  return {{"metadata",
           {{"name", name},
            {"annotations", {{"powerctl.io/idle-watts", idle}, {"powerctl.io/max-watts", max}}}}},
          {"status",
           {{"allocatable", {{"cpu", "8"}, {"memory", "32Gi"}}}, {"capacity", {{"cpu", "8"}}}}}};
}

json Pod(const std::string& cpu, json labels = json::object()) {
  return {
      {"metadata", {{"name", "p"}, {"namespace", "team"}, {"uid", "u1"}, {"labels", labels}}},
      {"spec", {{"containers", {{{"name", "c"}, {"resources", {{"requests", {{"cpu", cpu}}}}}}}}}}};
}

// A pod bound but not yet running: not in usage metrics.
cluster::PodInfo PendingPod(double cpu_cores) {
  cluster::PodInfo pod;
  pod.namespace_ = "team";
  pod.name = "big";
  pod.phase = "Pending";
  pod.requests.cpu_cores = cpu_cores;
  return pod;
}

// As the cache does when a pod is bound: a new state for the node, with the pod.
void AddPod(cluster::ClusterSnapshot& snapshot, const std::string& node, cluster::PodInfo pod) {
  cluster::NodeState state = *snapshot.FindNode(node);
  state.requested.cpu_cores += pod.requests.cpu_cores;
  state.pods.push_back(std::make_shared<const cluster::PodInfo>(std::move(pod)));
  snapshot.PutNode(std::move(state));
}

class SchedulingCoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    UseItems(json::array({Node("efficient", "80", "200"), Node("hungry", "150", "500"),
                          Node("middle", "100", "350")}));
    deps_.config = &config_;
    deps_.predictor = &builtin_;
  }
  // Nodes `items` (telemetry knows them) instead of the three above.
  void UseItems(json items) {
    items_ = std::move(items);
    std::vector<telemetry::NodeInfo> infos;
    for (const auto& item : items_) infos.push_back(telemetry::NodeInfoFromJson(item));
    telemetry_ = std::make_unique<telemetry::TelemetryService>(
        cpu_, temperatures_, [infos] { return Result<std::vector<telemetry::NodeInfo>>(infos); },
        telemetry::TelemetryServiceOptions{});
    ASSERT_TRUE(telemetry_->Readings(telemetry::Wait::kIfEmpty).ok());
    deps_.telemetry = telemetry_.get();
  }
  config::PowerctlConfig config_;
  // Every node uses 2 cores, at nominal temperatures.
  testsupport::StaticCpuSource cpu_{[](std::size_t) { return 2.0; }};
  testsupport::NoTemperatureSource temperatures_;
  std::unique_ptr<telemetry::TelemetryService> telemetry_;
  predict::BuiltinPredictor builtin_;
  SchedulingDeps deps_;
  json items_;

  // The cache's view of items_ (8 cores allocatable each), without pods.
  std::shared_ptr<cluster::ClusterSnapshot> SnapshotOfItems() const {
    auto snapshot = std::make_shared<cluster::ClusterSnapshot>();
    for (const auto& item : items_) {
      cluster::NodeState state;
      state.name = item["metadata"]["name"];
      state.facts = predict::NodeFactsFromJson(item);
      state.info = telemetry::NodeInfoFromJson(item);
      state.cpu_allocatable = 8;
      snapshot->PutNode(std::move(state));
    }
    snapshot->IndexNodes();
    return snapshot;
  }
};

TEST_F(SchedulingCoreTest, TheLowestPowerDeltaScoresTenProportionally) {
  config_.scoring.objective = config::kObjectiveMarginal;
  config_.scoring.tie_tolerance = 0;
  SchedulingCore core(deps_);
  Decision d = core.Prioritize(Pod("2"), {"hungry", "efficient", "middle"}, items_);
  ASSERT_EQ(d.nodes.size(), 3u);
  EXPECT_EQ(d.verb, "prioritize");
  EXPECT_EQ(d.pod_name, "p");
  // Deltas with 2 of 8 cores added at nominal temperature: (max - idle) * 0.25.
  EXPECT_EQ(d.nodes[1].node, "efficient");
  EXPECT_EQ(d.nodes[1].score, 10);  // 30 W
  EXPECT_EQ(d.nodes[0].score, 0);   // 87.5 W
  EXPECT_EQ(d.nodes[2].score, 4);   // 62.5 W: (87.5 - 62.5) / (87.5 - 30) * 10 = 4.35, not a rank
}

TEST_F(SchedulingCoreTest, TheCheapestNodeToFillScoresTenAndItsCostIsTheReason) {
  // The default objective. Linear curves: filling costs (max - idle) / 8 cores per core.
  SchedulingCore core(deps_);
  Decision d = core.Prioritize(Pod("2"), {"hungry", "efficient", "middle"}, items_);
  ASSERT_EQ(d.nodes.size(), 3u);
  EXPECT_EQ(d.nodes[1].score, 10);  // 15 W/core
  EXPECT_EQ(d.nodes[0].score, 0);   // 43.75 W/core, beyond twice the cheapest
  EXPECT_EQ(d.nodes[2].score, 0);   // 31.25 W/core: 2.08 times the cheapest
  EXPECT_EQ(d.nodes[1].components[0].reason, "+30.0 W, 15.00 W/core to fill");
  EXPECT_NE(std::find_if(d.notes.begin(), d.notes.end(),
                         [](const std::string& n) {
                           return n.find("cost 15.00 W/core (score 10) to 43.75 W/core") !=
                                  std::string::npos;
                         }),
            d.notes.end());
}

TEST_F(SchedulingCoreTest, TheFillCostCountsOnlyTheLoadThePodSlotsLeftCanReach) {
  // "tail" is dear from 25 % to 50 % (20 W/core) but cheap beyond: 10.8 W/core filled to full,
  // under "efficient"'s 15 W/core, as long as it has pod slots to get there.
  json tail = Node("tail", "100", "205");
  tail["metadata"]["annotations"]["powerctl.io/power-curve"] =
      "100,110,120,160,170,180,185,190,195,200,205";
  UseItems(json::array({Node("efficient", "80", "200"), tail}));
  auto snapshot = SnapshotOfItems();
  deps_.snapshot = [&snapshot] {
    return std::shared_ptr<const cluster::ClusterSnapshot>(snapshot);
  };
  SchedulingCore core(deps_);
  Decision open = core.Prioritize(Pod("2"), {"efficient", "tail"}, json::array());
  EXPECT_EQ(open.nodes[1].score, 10) << open.nodes[1].components[0].reason;
  EXPECT_EQ(open.nodes[1].components[0].reason, "+40.0 W, 10.83 W/core to fill");

  // One free slot: the pod is all "tail" can still take, and its chord is the dear one.
  cluster::NodeState state = *snapshot->FindNode("tail");
  state.pods_allocatable = 1;
  snapshot->PutNode(std::move(state));
  Decision capped = core.Prioritize(Pod("2"), {"efficient", "tail"}, json::array());
  EXPECT_EQ(capped.nodes[0].score, 10);
  EXPECT_EQ(capped.nodes[1].components[0].reason, "+40.0 W, 20.00 W/core to fill");
}

TEST_F(SchedulingCoreTest, UnknownNodesGetTheConfiguredScoreWithTheReason) {
  config_.scoring.unknown_score = 3;
  SchedulingCore core(deps_);
  Decision d = core.Prioritize(Pod("1"), {"efficient", "ghost"}, items_);
  EXPECT_EQ(d.nodes[1].score, 3);
  ASSERT_FALSE(d.nodes[1].components.empty());
  EXPECT_NE(d.nodes[1].components[0].reason.find("no"), std::string::npos)
      << d.nodes[1].components[0].reason;
}

TEST_F(SchedulingCoreTest, AnIncompletePodGroupFailsEveryNode) {
  auto snapshot = std::make_shared<cluster::ClusterSnapshot>();
  json pod = Pod("1", {{"podGroup", "g"}, {"minAvailable", "3"}});
  cluster::PodInfo self = cluster::PodInfoFromJson(pod);
  snapshot->pod_count = 1;
  snapshot->pod_groups["team/g"] = std::make_shared<const std::vector<cluster::PodInfo>>(1, self);
  deps_.snapshot = [snapshot] { return std::shared_ptr<const cluster::ClusterSnapshot>(snapshot); };
  SchedulingCore core(deps_);
  Decision d = core.Filter(pod, {"efficient", "hungry"}, items_);
  ASSERT_EQ(d.nodes.size(), 2u);
  for (const auto& n : d.nodes) {
    EXPECT_EQ(n.passed, false);
    EXPECT_NE(n.reason.find("pod group team/g has 1 of 3 pods"), std::string::npos) << n.reason;
  }
  // Without a group every node passes.
  d = core.Filter(Pod("1"), {"efficient", "hungry"}, items_);
  for (const auto& n : d.nodes) EXPECT_EQ(n.passed, true) << n.reason;
}

TEST_F(SchedulingCoreTest, PodsNotYetInMetricsCountAsUsage) {
  auto snapshot = SnapshotOfItems();
  // 6 cores just bound to "efficient": with 2 measured it is full, so adding 2 overcommits it.
  AddPod(*snapshot, "efficient", PendingPod(6));
  deps_.snapshot = [snapshot] { return std::shared_ptr<const cluster::ClusterSnapshot>(snapshot); };
  SchedulingCore core(deps_);
  Decision d = core.Prioritize(Pod("2"), {"efficient", "middle"}, json::array());
  EXPECT_EQ(d.nodes[0].score, 0) << d.nodes[0].components[0].reason;
  EXPECT_EQ(d.nodes[1].score, 10);
}

TEST_F(SchedulingCoreTest, PreparedInputsAreReusedButPodsAreCountedPerRequest) {
  auto snapshot = SnapshotOfItems();
  deps_.snapshot = [snapshot] { return std::shared_ptr<const cluster::ClusterSnapshot>(snapshot); };
  SchedulingCore core(deps_);
  PrioritizeStats first;
  Decision a = core.Prioritize(Pod("2"), {"efficient", "middle"}, json::array(), &first);
  EXPECT_EQ(first.prepared, 2u);
  EXPECT_EQ(first.predicted, 2u);
  EXPECT_EQ(a.nodes[0].score, 10);

  // Same telemetry: a node is prepared again only when its state is a new object (the cache
  // copies a node whose pods changed), the others are reused ...
  AddPod(*snapshot, "efficient", PendingPod(6));
  PrioritizeStats second;
  Decision b = core.Prioritize(Pod("2"), {"efficient", "middle"}, json::array(), &second);
  EXPECT_EQ(second.prepared, 1u);
  EXPECT_EQ(second.reused, 1u);
  // ... yet the pod bound meanwhile is counted: "efficient" is now overcommitted.
  EXPECT_EQ(second.overcommitted, 1u);
  EXPECT_EQ(b.nodes[0].score, 0) << b.nodes[0].components[0].reason;
}

// The built-in model, counting the rows it is asked about; `repeats` says whether the core may
// remember its answers.
class CountingPredictor : public predict::Predictor {
 public:
  explicit CountingPredictor(bool repeats) : repeats_(repeats) {}
  std::vector<predict::Prediction> Predict(predict::PredictionRows rows,
                                           std::chrono::milliseconds deadline) override {
    rows_ += rows.size();
    return builtin_.Predict(rows, deadline);
  }
  bool RepeatsAnswers(const predict::ModelEndpoint&) const override { return repeats_; }
  std::size_t rows_ = 0;

 private:
  bool repeats_;
  predict::BuiltinPredictor builtin_;
};

TEST_F(SchedulingCoreTest, RememberedEstimatesGiveTheDecisionsOfEstimatesMadeAfresh) {
  // Four nodes, one with a measured curve and limited pod slots (the fill cost's reachable load
  // and the pod-slot factor), prioritized for a sequence of pods: the same pod again, another
  // size, and after binds that change nodes' pods. (New telemetry prepares every node again,
  // which forgets its estimate: PreparedNodeCacheTest.)
  json tail = Node("tail", "100", "205");
  tail["metadata"]["annotations"]["powerctl.io/power-curve"] =
      "100,110,120,160,170,180,185,190,195,200,205";
  UseItems(json::array({Node("efficient", "80", "200"), Node("hungry", "150", "500"),
                        Node("middle", "100", "350"), tail}));
  auto snapshot = SnapshotOfItems();
  {
    cluster::NodeState state = *snapshot->FindNode("tail");
    state.pods_allocatable = 6;
    snapshot->PutNode(std::move(state));
  }
  deps_.snapshot = [&snapshot] {
    return std::shared_ptr<const cluster::ClusterSnapshot>(snapshot);
  };
  const auto at = std::chrono::system_clock::now();
  deps_.wall_now = [at] { return at; };
  CountingPredictor remembering(true), fresh(false);
  SchedulingDeps remembering_deps = deps_, fresh_deps = deps_;
  remembering_deps.predictor = &remembering;
  fresh_deps.predictor = &fresh;
  SchedulingCore with_memory(remembering_deps), without(fresh_deps);
  const std::vector<std::string> nodes = {"hungry", "efficient", "tail", "middle"};

  auto both = [&](const json& pod) {
    Decision a = with_memory.Prioritize(pod, nodes, json::array());
    Decision b = without.Prioritize(pod, nodes, json::array());
    EXPECT_EQ(DecisionToJson(a).dump(), DecisionToJson(b).dump());
    EXPECT_TRUE(a == b);
    return a;
  };
  both(Pod("2"));
  EXPECT_EQ(remembering.rows_, fresh.rows_);
  const std::size_t asked = remembering.rows_;
  ASSERT_GT(asked, 0u);

  // The same pod again: every estimate is remembered, the model is not asked.
  both(Pod("2"));
  EXPECT_EQ(remembering.rows_, asked);
  EXPECT_EQ(fresh.rows_, 2 * asked);

  // Another pod size is another estimate.
  both(Pod("500m"));
  EXPECT_GT(remembering.rows_, asked);

  // Binds change nodes' pods (usage not yet measured, pod slots taken): those nodes are asked
  // about again, and the decisions still match.
  for (int bind = 0; bind < 4; ++bind) {
    AddPod(*snapshot, bind % 2 == 0 ? "tail" : "efficient", PendingPod(1));
    const std::size_t before = remembering.rows_;
    Decision d = both(Pod("2"));
    EXPECT_GT(remembering.rows_, before);
    EXPECT_EQ(d.nodes.size(), nodes.size());
  }
}

}  // namespace
}  // namespace powerctl::scoring
