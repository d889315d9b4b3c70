// Waking drained nodes for Pending pods: which node would take each pod once switched on and
// uncordoned, the order nodes are woken in, and the marks read back.
#include "core/consolidate/node_marks.h"
#include "core/consolidate/wake.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace powerctl::consolidate {
namespace {

using json = nlohmann::json;
using ::testing::ElementsAre;

json Node(const std::string& name, const std::string& cpu, const char* state = nullptr,
          std::optional<double> saved = std::nullopt) {
  json node = {
      {"metadata", {{"name", name}, {"labels", {{"kubernetes.io/hostname", name}}}}},
      {"spec", json::object()},
      {"status",
       {{"allocatable", {{"cpu", cpu}, {"memory", "64Gi"}, {"pods", "110"}}},
        {"addresses",
         {{{"type", "Hostname"}, {"address", name}},
          {{"type", "InternalIP"}, {"address", "10.0.0." + std::to_string(name.size())}}}}}}};
  if (state != nullptr) {
    node["metadata"]["labels"][kPowerStateLabel] = state;
    node["spec"]["unschedulable"] = true;
    node["spec"]["taints"] = {
        {{"key", "node.kubernetes.io/unschedulable"}, {"effect", "NoSchedule"}},
        {{"key", "node.kubernetes.io/unreachable"}, {"effect", "NoExecute"}}};
    json annotation = {{"state", state}, {"since", "2026-11-27T20:00:00Z"}};
    if (saved) annotation["expectedWattsSaved"] = *saved;
    node["metadata"]["annotations"][kConsolidationAnnotation] = annotation.dump();
  }
  return node;
}

json Pod(const std::string& name, const std::string& cpu, const std::string& created,
         const std::string& node = "") {
  json pod = {
      {"metadata", {{"name", name}, {"namespace", "shop"}, {"creationTimestamp", created}}},
      {"spec", {{"containers", {{{"name", "c"}, {"resources", {{"requests", {{"cpu", cpu}}}}}}}}}}};
  if (node.empty()) {
    pod["status"] = {
        {"phase", "Pending"},
        {"conditions",
         {{{"type", "PodScheduled"}, {"status", "False"}, {"reason", "Unschedulable"}}}}};
  } else {
    pod["spec"]["nodeName"] = node;
    pod["status"] = {{"phase", "Running"}};
  }
  return pod;
}

TEST(ConsolidateWake, ReadsTheMarksAndToleratesABrokenAnnotation) {
  auto marks = ReadNodeMarks(Node("a", "8", kPowerStateDrained, 310.5));
  ASSERT_TRUE(marks);
  EXPECT_EQ(marks->state, "drained");
  EXPECT_EQ(marks->since, "2026-11-27T20:00:00Z");
  EXPECT_EQ(marks->expected_watts_saved, 310.5);
  EXPECT_FALSE(ReadNodeMarks(Node("b", "8")));
  json broken = Node("c", "8", kPowerStateDraining);
  broken["metadata"]["annotations"][kConsolidationAnnotation] = "{not json";
  marks = ReadNodeMarks(broken);
  ASSERT_TRUE(marks);
  EXPECT_EQ(marks->state, "draining");
  EXPECT_FALSE(marks->expected_watts_saved);
}

TEST(ConsolidateWake, AWokenNodeLosesTheCordonAndTheTaintsOfAnOffNodeOnly) {
  json node = Node("a", "8", kPowerStateDrained, 100);
  node["spec"]["taints"].push_back(
      {{"key", "dedicated"}, {"value", "gpu"}, {"effect", "NoSchedule"}});
  json woken = AsWoken(node);
  EXPECT_FALSE(woken["spec"].contains("unschedulable"));
  EXPECT_EQ(woken["spec"]["taints"],
            json::array({{{"key", "dedicated"}, {"value", "gpu"}, {"effect", "NoSchedule"}}}));
}

TEST(ConsolidateWake, OnlyPodsTheSchedulerFoundNoRoomForAreWaitingForANode) {
  EXPECT_TRUE(IsUnschedulablePending(Pod("p", "1", "t")));
  EXPECT_FALSE(IsUnschedulablePending(Pod("p", "1", "t", "a")));
  json gated = Pod("p", "1", "t");
  gated["status"]["conditions"][0]["reason"] = "SchedulingGated";
  EXPECT_FALSE(IsUnschedulablePending(gated));
  json fresh = Pod("p", "1", "t");
  fresh["status"].erase("conditions");  // not tried yet
  EXPECT_FALSE(IsUnschedulablePending(fresh));
}

TEST(ConsolidateWake, TheCheapestDrainedNodeThatFitsComesFirst) {
  std::vector<json> nodes = {Node("costly", "32", kPowerStateDrained, 400),
                             Node("cheap", "8", kPowerStateDrained, 90),
                             Node("small", "2", kPowerStateDrained, 40), Node("on", "64"),
                             Node("draining", "64", kPowerStateDraining, 10)};
  const json pod = Pod("p", "4", "t");
  EXPECT_THAT(DrainedNodesThatFit(pod, nodes, {}), ElementsAre("cheap", "costly"));
  // What still runs on a drained node (a DaemonSet pod) counts.
  std::map<std::string, scoring::NodeLoad> loads = {{"cheap", {6000, 0, 1}}};
  EXPECT_THAT(DrainedNodesThatFit(pod, nodes, loads), ElementsAre("costly"));
}

TEST(ConsolidateWake, PodsShareAWokenNodeBeforeAnotherIsWoken) {
  std::vector<json> nodes = {Node("big", "16", kPowerStateDrained, 300),
                             Node("mid", "8", kPowerStateDrained, 120), Node("full", "4")};
  std::vector<json> pods = {
      Pod("c", "3", "2026-11-27T10:00:02Z"), Pod("a", "3", "2026-11-27T10:00:00Z"),
      Pod("b", "3", "2026-11-27T10:00:01Z"), Pod("huge", "40", "2026-11-27T09:00:00Z"),
      Pod("on-full", "4", "2026-11-27T08:00:00Z", "full")};
  auto plan = PlanWake(pods, nodes, 2, kMaxWakeNodes);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  ASSERT_EQ(plan->wakes.size(), 2u);
  // Oldest first: a and b fill mid (8 cores), c needs big.
  EXPECT_EQ(plan->wakes[0].node, "mid");
  EXPECT_THAT(plan->wakes[0].pods, ElementsAre("shop/a", "shop/b"));
  EXPECT_THAT(plan->wakes[0].addresses, ElementsAre("10.0.0.3", "mid"));
  EXPECT_EQ(plan->wakes[1].node, "big");
  EXPECT_THAT(plan->wakes[1].pods, ElementsAre("shop/c"));
  EXPECT_THAT(plan->no_room, ElementsAre("shop/huge"));
}

TEST(ConsolidateWake, AtMostMaxNodesAreWokenAndTheRestStayPending) {
  std::vector<json> nodes = {Node("x", "4", kPowerStateDrained, 100),
                             Node("y", "4", kPowerStateDrained, 200)};
  std::vector<json> pods = {Pod("a", "3", "1"), Pod("b", "3", "2")};
  auto plan = PlanWake(pods, nodes, 1, kMaxWakeNodes);
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->wakes.size(), 1u);
  EXPECT_EQ(plan->wakes[0].node, "x");
  EXPECT_THAT(plan->no_room, ElementsAre("shop/b"));
  plan = PlanWake(pods, nodes, 2, 1);  // only the oldest pod is considered
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->wakes.size(), 1u);
  EXPECT_TRUE(plan->no_room.empty());
  EXPECT_FALSE(PlanWake(pods, nodes, 0, 10).ok());
  EXPECT_FALSE(PlanWake(pods, nodes, kMaxWakeNodes + 1, 10).ok());
}

}  // namespace
}  // namespace powerctl::consolidate
