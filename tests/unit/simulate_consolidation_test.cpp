// consolidate's planner over snapshots with powerctl's scorer (core/simulate/consolidation),
// and simulate --consolidate.
#include "core/simulate/consolidation.h"
#include "core/simulate/snapshot.h"
#include "core/simulate/workload.h"

#include <gtest/gtest.h>

namespace powerctl::simulate {
namespace {

// Three 8-core nodes: "cheap" adds 2.5 W a core, "middle" 10 W, "costly" 25 W. middle and
// costly each run one 2-core ReplicaSet pod; cheap only a DaemonSet pod.
Snapshot ThreeNodes() {
  auto parsed = ParseSnapshot(R"(kind: ClusterSnapshot
nodes:
- name: cheap
  cpu: 8
  memory: 32Gi
  powerCurve: [60, 62, 64, 66, 68, 70, 72, 74, 76, 78, 80]
  existingPods:
  - {name: agent, cpu: 100m, owner: DaemonSet}
- name: middle
  cpu: 8
  memory: 32Gi
  powerCurve: [80, 88, 96, 104, 112, 120, 128, 136, 144, 152, 160]
  existingPods:
  - {name: api, namespace: shop, cpu: 2, owner: ReplicaSet}
- name: costly
  cpu: 8
  memory: 32Gi
  powerCurve: [100, 120, 140, 160, 180, 200, 220, 240, 260, 280, 300]
  existingPods:
  - {name: web, namespace: shop, cpu: 2, owner: ReplicaSet}
)",
                              "three.yaml");
  EXPECT_TRUE(parsed.ok()) << parsed.error().message;
  return *parsed;
}

const consolidate::NodePlan& Find(const consolidate::Plan& plan, const std::string& node) {
  for (const auto& n : plan.nodes)
    if (n.node == node) return n;
  throw std::runtime_error("no node " + node);
}

TEST(SimulateConsolidation, PodsGoWhereTheExtendersScoringSendsThem) {
  Snapshot snapshot = ThreeNodes();
  auto plan = PlanSnapshot(snapshot, {}, config::PowerctlConfig{});
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  // costly saves most (its idle and its pod's watts); its pod goes to cheap, the cheapest
  // per core, not to middle.
  ASSERT_GE(plan->drained, 1);
  EXPECT_EQ(plan->nodes[0].node, "costly");
  ASSERT_EQ(plan->nodes[0].moves.size(), 1u);
  EXPECT_EQ(plan->nodes[0].moves[0].pod, "shop/web");
  EXPECT_EQ(plan->nodes[0].moves[0].to, "cheap");
  // costly at 25 % draws 150 W; cheap goes from 100m to 2.1 cores: +5 W.
  EXPECT_NEAR(*plan->nodes[0].watts_saved, 150 - 5, 0.5);
  EXPECT_TRUE(Find(*plan, "middle").drain);
  EXPECT_EQ(Find(*plan, "cheap").reason, "receives pods from costly");
  EXPECT_NEAR(plan->watts_after, 60 + 10.5, 0.5);  // cheap with 4.1 cores
}

TEST(SimulateConsolidation, HeadroomKeepsASecondNodeOn) {
  // With 70 % headroom cheap takes 2.4 cores: costly's pod (2.1 with the agent), then
  // middle's fits nowhere.
  Snapshot snapshot = ThreeNodes();
  consolidate::PlanRequest request;
  request.headroom = 0.7;
  config::PowerctlConfig config;
  auto plan = PlanSnapshot(snapshot, request, config);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_TRUE(Find(*plan, "costly").drain);
  EXPECT_FALSE(Find(*plan, "middle").drain);
  EXPECT_NE(Find(*plan, "middle").reason.find("fits on no node"), std::string::npos);
  EXPECT_NEAR(plan->watts_after, 65.25 + 100, 0.5);
}

TEST(SimulateConsolidation, SnapshotsCarryWhatTheRulesRead) {
  auto parsed = ParseSnapshot(R"(kind: ClusterSnapshot
nodes:
- name: a
  cpu: 4
  memory: 8Gi
  existingPods:
  - name: p
    namespace: shop
    cpu: 1
    owner: StatefulSet
    labels: {app: db}
    annotations: {cluster-autoscaler.kubernetes.io/safe-to-evict: "false"}
    volumes: [{name: data, emptyDir: {}}]
podDisruptionBudgets:
- metadata: {name: db, namespace: shop}
  spec: {selector: {matchLabels: {app: db}}}
)",
                              "rules.yaml");
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  const nlohmann::json& pod = parsed->nodes[0].pods[0].object;
  EXPECT_EQ(pod["metadata"]["namespace"], "shop");
  EXPECT_EQ(pod["metadata"]["ownerReferences"][0]["kind"], "StatefulSet");
  EXPECT_EQ(pod["metadata"]["labels"]["app"], "db");
  EXPECT_EQ(pod["spec"]["volumes"][0]["name"], "data");
  ASSERT_EQ(parsed->disruption_budgets.size(), 1u);
  // And they survive a round trip.
  auto again = ParseSnapshot(SnapshotDocument(*parsed).dump(), "again.json");
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(again->nodes[0].pods[0].object, pod);
  EXPECT_EQ(again->disruption_budgets.size(), 1u);
}

}  // namespace
}  // namespace powerctl::simulate
