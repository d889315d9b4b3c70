// Waking drained nodes for Pending pods: which node would take each pod once switched on and
// uncordoned, the order nodes are woken in, and the marks read back.
#include "core/consolidate/node_marks.h"
#include "core/consolidate/wake.h"
#include "core/consolidate/wake_run.h"
#include "tests/unit/fake_api_server.h"

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

// One pass against the in-memory API server: a pod Pending for lack of room, a full node on,
// and a drained node that would take it.
class WakeOnceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_.Put({{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "shop"}}}});
    for (json node : {Node("on", "4"), Node("off", "8", kPowerStateDrained, 150)}) {
      node["apiVersion"] = "v1";
      node["kind"] = "Node";
      server_.Put(node);
    }
    for (json pod : {Pod("busy", "4", "2026-11-27T10:00:00Z", "on"),
                     Pod("web-3", "2", "2026-11-27T11:00:00Z")}) {
      pod["apiVersion"] = "v1";
      pod["kind"] = "Pod";
      server_.Put(pod);
    }
    client_ = server_.MakeClient();
  }

  std::vector<json> Events() const {
    std::vector<json> out;
    for (const auto& [path, object] : server_.objects())
      if (object.value("kind", "") == "Event") out.push_back(object);
    return out;
  }

  json OffNode() const { return server_.Object("/api/v1/nodes/off"); }

  kube::fake::FakeApiServer server_;
  std::unique_ptr<kube::Client> client_;
};

TEST_F(WakeOnceTest, RecordsAnEventRunsTheHookAndBringsTheNodeBack) {
  WakeRequest request;
  request.on_wake.command = "test \"$POWERCTL_EVENT $1\" = 'wake off'";
  request.instance = "admin-laptop";
  auto report = WakeOnce(*client_, request, std::chrono::system_clock::now());
  ASSERT_TRUE(report.ok()) << report.error().message;
  ASSERT_EQ(report->nodes.size(), 1u);
  const NodeWakeOutcome& woken = report->nodes[0];
  EXPECT_EQ(woken.wake.node, "off");
  EXPECT_THAT(woken.wake.pods, ElementsAre("shop/web-3"));
  EXPECT_TRUE(woken.hook.ok) << woken.hook.detail;
  EXPECT_TRUE(woken.brought_back) << woken.error;
  EXPECT_FALSE(ReadNodeMark(OffNode()));
  EXPECT_EQ(OffNode()["spec"].value("unschedulable", false), false);

  std::vector<json> events = Events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["reason"], kReasonWakeNeeded);
  EXPECT_EQ(events[0]["involvedObject"]["name"], "web-3");
  EXPECT_EQ(events[0]["involvedObject"]["uid"],
            server_.Object("/api/v1/namespaces/shop/pods/web-3")["metadata"]["uid"]);
  EXPECT_THAT(events[0]["message"].get<std::string>(), ::testing::HasSubstr("node off"));
  EXPECT_EQ(report->events, 1);
  EXPECT_EQ(report->drained_nodes, 1);

  // The node is back: the next pass has nothing to wake.
  report = WakeOnce(*client_, request, std::chrono::system_clock::now());
  ASSERT_TRUE(report.ok());
  EXPECT_TRUE(report->nodes.empty());
  EXPECT_EQ(report->drained_nodes, 0);
}

TEST_F(WakeOnceTest, AFailedHookLeavesTheNodeDrainedAndTheEventIsNotRepeated) {
  WakeRequest request;
  request.on_wake.command = "echo 'BMC unreachable' >&2; exit 4";
  auto report = WakeOnce(*client_, request, std::chrono::system_clock::now());
  ASSERT_TRUE(report.ok());
  ASSERT_EQ(report->nodes.size(), 1u);
  EXPECT_FALSE(report->nodes[0].hook.ok);
  EXPECT_EQ(report->nodes[0].hook.detail, "exit status 4: BMC unreachable");
  EXPECT_FALSE(report->nodes[0].brought_back);
  ASSERT_TRUE(ReadNodeMark(OffNode()));
  EXPECT_EQ(ReadNodeMark(OffNode())->state, kPowerStateDrained);
  // A second pass tries the hook again, but the pod already has its Event.
  report = WakeOnce(*client_, request, std::chrono::system_clock::now());
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->events, 0);
  EXPECT_EQ(Events().size(), 1u);
}

TEST_F(WakeOnceTest, WithoutAHookOrInADryRunNothingIsWoken) {
  WakeRequest request;
  auto report = WakeOnce(*client_, request, std::chrono::system_clock::now());
  ASSERT_TRUE(report.ok());
  ASSERT_EQ(report->nodes.size(), 1u);
  EXPECT_FALSE(report->nodes[0].hook.ran);
  EXPECT_EQ(Events().size(), 1u);
  EXPECT_THAT(Events()[0]["message"].get<std::string>(),
              ::testing::HasSubstr("powerctl consolidate undo off"));
  ASSERT_TRUE(ReadNodeMark(OffNode()));

  const std::size_t writes = server_.MutatingRequests().size();
  request.on_wake.command = "true";
  request.dry_run = true;
  report = WakeOnce(*client_, request, std::chrono::system_clock::now());
  ASSERT_TRUE(report.ok());
  EXPECT_FALSE(report->nodes[0].hook.ran);
  EXPECT_EQ(server_.MutatingRequests().size(), writes);
}

TEST_F(WakeOnceTest, AHookOutOfBoundsIsRefusedBeforeAnythingIsRead) {
  WakeRequest request;
  request.on_wake.command.assign(kMaxHookCommandBytes + 1, 'x');
  EXPECT_EQ(WakeOnce(*client_, request, {}).error().code, ErrorCode::kInvalidInput);
  request.on_wake.command = "true";
  request.on_wake.timeout = std::chrono::hours(2);
  EXPECT_EQ(WakeOnce(*client_, request, {}).error().code, ErrorCode::kInvalidInput);
  EXPECT_TRUE(server_.requests().empty());
}

}  // namespace
}  // namespace powerctl::consolidate
