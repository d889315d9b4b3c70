#include "core/explain/causes.h"

#include <gtest/gtest.h>

namespace powerctl::explain {
namespace {

scoring::FitFailure Fit(const char* check, const char* reason, const std::string& detail) {
  return {check, reason, detail, "fix " + detail};
}

NodeScore Row(const std::string& node, std::vector<scoring::FitFailure> fit = {}) {
  NodeScore n;
  n.node = node;
  n.fit = std::move(fit);
  return n;
}

NodeScore Gated(const std::string& node, const std::string& reason) {
  NodeScore n = Row(node);
  scoring::NodeDecision gate;
  gate.node = node;
  gate.passed = false;
  gate.reason = reason;
  n.gate = gate;
  return n;
}

CauseInputs Inputs(const std::vector<NodeScore>& nodes) {
  CauseInputs in;
  in.pod_namespace = "shop";
  in.pod_name = "web-1";
  in.scheduler_name = "power";
  in.nodes = &nodes;
  in.pod_group = "g1";
  in.telemetry_policy = "cool";
  return in;
}

std::vector<std::string> Ids(const std::vector<Cause>& causes) {
  std::vector<std::string> ids;
  for (const Cause& c : causes) ids.push_back(c.id);
  return ids;
}

TEST(RankCauses, SchedulerNotRunningComesFirst) {
  std::vector<NodeScore> nodes = {
      Row("a", {Fit(scoring::kCheckTaints, scoring::kReasonUntoleratedTaint, "taint t")})};
  CauseInputs in = Inputs(nodes);
  in.scheduler_running = false;
  in.scheduler_fix = "start it";
  auto causes = RankCauses(in);
  ASSERT_EQ(Ids(causes),
            (std::vector<std::string>{kCauseSchedulerNotRunning, kCauseUntoleratedTaint}));
  EXPECT_EQ(causes[0].fix, "start it");
  EXPECT_TRUE(causes[0].nodes.empty());
}

TEST(RankCauses, ADrainedNodeThatWouldFitComesBeforeThePerNodeFailures) {
  std::vector<NodeScore> nodes = {
      Row("busy", {Fit(scoring::kCheckResources, scoring::kReasonInsufficientCpu, "cpu")}),
      Row("off-1", {Fit(scoring::kCheckUnschedulable, scoring::kReasonUnschedulable, "cordon")}),
      Row("off-2", {Fit(scoring::kCheckUnschedulable, scoring::kReasonUnschedulable, "cordon")})};
  CauseInputs in = Inputs(nodes);
  in.drained_nodes_that_fit = {"off-2", "off-1"};
  auto causes = RankCauses(in);
  ASSERT_EQ(Ids(causes), (std::vector<std::string>{kCauseDrainedNodeWouldFit, kCauseUnschedulable,
                                                   kCauseInsufficientResources}));
  EXPECT_EQ(causes[0].nodes, (std::vector<std::string>{"off-2", "off-1"}));
  EXPECT_NE(causes[0].fix.find("powerctl consolidate undo off-2"), std::string::npos);
  // Not a cause when some node could take the pod anyway.
  nodes.push_back(Row("free"));
  EXPECT_EQ(Ids(RankCauses(Inputs(nodes))).size(), 1u);
  in = Inputs(nodes);
  in.drained_nodes_that_fit = {"off-1"};
  EXPECT_EQ(Ids(RankCauses(in)), (std::vector<std::string>{kCauseUnknown}));
}

TEST(RankCauses, AggregatesNodesByStableReason) {
  std::vector<NodeScore> nodes = {
      Row("a", {Fit(scoring::kCheckTaints, scoring::kReasonUntoleratedTaint, "taint x=1")}),
      Row("b", {Fit(scoring::kCheckTaints, scoring::kReasonUntoleratedTaint, "taint y=2")}),
      Row("c", {Fit(scoring::kCheckResources, scoring::kReasonInsufficientCpu, "cpu")})};
  auto causes = RankCauses(Inputs(nodes));
  ASSERT_EQ(causes.size(), 2u);
  EXPECT_EQ(causes[0].id, kCauseUntoleratedTaint);
  EXPECT_EQ(causes[0].reason, scoring::kReasonUntoleratedTaint);  // no per-node values
  EXPECT_EQ(causes[0].nodes, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(causes[0].detail, "taint x=1");  // the first node's specifics
  EXPECT_EQ(causes[1].id, kCauseInsufficientResources);
}

TEST(RankCauses, ThePodsOwnSelectorRanksLastAndHidesExcludedNodes) {
  // Three nodes excluded by the selector (one of them also tainted), one wanted but tainted.
  auto affinity = Fit(scoring::kCheckNodeAffinity, scoring::kReasonNodeAffinity, "selector");
  auto taint = Fit(scoring::kCheckTaints, scoring::kReasonUntoleratedTaint, "taint t");
  std::vector<NodeScore> nodes = {Row("a", {affinity}), Row("b", {affinity, taint}),
                                  Row("c", {affinity}), Row("wanted", {taint})};
  auto causes = RankCauses(Inputs(nodes));
  ASSERT_EQ(Ids(causes), (std::vector<std::string>{kCauseUntoleratedTaint, kCauseNodeAffinity}));
  EXPECT_EQ(causes[0].nodes, (std::vector<std::string>{"wanted"}));
  EXPECT_EQ(causes[1].nodes.size(), 3u);
}

TEST(RankCauses, ASelectorNoNodeMatchesIsTheCause) {
  auto affinity = Fit(scoring::kCheckNodeAffinity, scoring::kReasonNodeAffinity, "selector");
  auto taint = Fit(scoring::kCheckTaints, scoring::kReasonUntoleratedTaint, "taint t");
  std::vector<NodeScore> nodes = {Row("a", {affinity}), Row("b", {affinity, taint})};
  auto causes = RankCauses(Inputs(nodes));
  ASSERT_FALSE(causes.empty());
  EXPECT_EQ(causes[0].id, kCauseNodeAffinity);
  EXPECT_EQ(causes[0].nodes.size(), 2u);
}

TEST(RankCauses, ExtenderGatesAreClassified) {
  std::vector<NodeScore> nodes = {Gated("a", "pod group shop/g1 has 1 of 3 pods (minAvailable)"),
                                  Gated("b", "pod group shop/g1 has 1 of 3 pods (minAvailable)")};
  auto causes = RankCauses(Inputs(nodes));
  ASSERT_EQ(causes.size(), 1u);
  EXPECT_EQ(causes[0].id, kCausePodGroup);
  EXPECT_EQ(causes[0].detail, "pod group shop/g1 has 1 of 3 pods (minAvailable)");
  EXPECT_NE(causes[0].fix.find("podGroup=g1 in namespace shop"), std::string::npos);

  std::vector<NodeScore> hot = {
      Gated("a", "policy cool dontschedule: temp=90 > 80"),
      Row("b", {Fit(scoring::kCheckNodeAffinity, scoring::kReasonNodeAffinity, "selector")})};
  causes = RankCauses(Inputs(hot));
  ASSERT_EQ(causes.size(), 2u);
  EXPECT_EQ(causes[0].id, kCauseDontSchedule);
  EXPECT_NE(causes[0].fix.find("telemetry-policy=cool"), std::string::npos);
  EXPECT_EQ(ClassifyGateReason("something else"), kCauseExtenderRejected);
}

TEST(RankCauses, WhenANodeCouldTakeThePodNodeFailuresAreNotTheCause) {
  std::vector<NodeScore> nodes = {
      Row("a", {Fit(scoring::kCheckTaints, scoring::kReasonUntoleratedTaint, "taint t")}),
      Row("free")};
  CauseInputs in = Inputs(nodes);
  in.scheduler_running = false;
  EXPECT_EQ(Ids(RankCauses(in)), (std::vector<std::string>{kCauseSchedulerNotRunning}));
  in.scheduler_running = true;
  EXPECT_EQ(Ids(RankCauses(in)), (std::vector<std::string>{kCauseUnknown}));
}

TEST(RankCauses, NothingFoundFallsBackToTheSchedulersWords) {
  std::vector<NodeScore> nodes = {Row("a")};
  CauseInputs in = Inputs(nodes);
  in.scheduler_message = "0/1 nodes are available: 1 Insufficient example.com/gpu.";
  auto causes = RankCauses(in);
  ASSERT_EQ(causes.size(), 1u);
  EXPECT_EQ(causes[0].id, kCauseUnknown);
  EXPECT_EQ(causes[0].detail, in.scheduler_message);
  std::vector<NodeScore> none;
  EXPECT_EQ(RankCauses(Inputs(none))[0].id, kCauseNoNodes);
}

TEST(RankCauses, AFailedExtenderFilterIsACause) {
  std::vector<NodeScore> nodes = {Row("a")};
  CauseInputs in = Inputs(nodes);
  in.extender_error = "no cluster cache";
  auto causes = RankCauses(in);
  ASSERT_FALSE(causes.empty());
  EXPECT_EQ(causes[0].id, kCauseExtenderError);
}

// kube-scheduler 1.20.2 with `ignorable: false` puts the extender call's Go error in the
// FailedScheduling Event and the PodScheduled condition verbatim (generic_scheduler.go
// findNodesThatPassExtenders returns it; scheduler.go recordSchedulingFailure writes
// err.Error()).
constexpr const char* kRefused =
    "Post \"https://powerctl-extender.powerctl.svc:8443/scheduler/filter\": dial tcp "
    "10.96.0.12:8443: connect: connection refused";

TEST(RankCauses, TheSchedulerFailingToCallTheExtenderIsAnExtenderError) {
  std::vector<NodeScore> nodes = {Row("a"), Row("b")};
  CauseInputs in = Inputs(nodes);
  in.scheduler_message = kRefused;
  auto causes = RankCauses(in);
  ASSERT_EQ(Ids(causes), (std::vector<std::string>{kCauseExtenderError}));
  EXPECT_EQ(causes[0].detail, kRefused);
  EXPECT_NE(causes[0].fix.find("powerctl doctor"), std::string::npos) << causes[0].fix;
  EXPECT_NE(causes[0].fix.find("extender.urlPrefix"), std::string::npos) << causes[0].fix;

  in.scheduler_message =
      "Post \"https://powerctl-extender.powerctl.svc:8443/scheduler/filter\": x509: "
      "certificate signed by unknown authority";
  causes = RankCauses(in);
  ASSERT_EQ(causes[0].id, kCauseExtenderError);
  EXPECT_NE(causes[0].fix.find("TLS"), std::string::npos) << causes[0].fix;

  // The scheduler still running comes first.
  in.scheduler_running = false;
  EXPECT_EQ(Ids(RankCauses(in)),
            (std::vector<std::string>{kCauseSchedulerNotRunning, kCauseExtenderError}));
}

TEST(IsExtenderCallFailure, ReadsKubeSchedulersWordsOnly) {
  EXPECT_TRUE(IsExtenderCallFailure(kRefused));
  EXPECT_TRUE(IsExtenderCallFailure(
      "Post \"https://x.svc:8443/scheduler/filter\": context deadline exceeded (Client.Timeout "
      "exceeded while awaiting headers)"));
  EXPECT_TRUE(IsExtenderCallFailure(
      "failed filter with extender at URL https://x.svc:8443/scheduler/filter, code 413"));
  EXPECT_TRUE(IsExtenderCallFailure(
      "extender \"https://x.svc:8443/scheduler\" claims a filtered node \"n9\" which is not "
      "found in the input node list"));
  EXPECT_FALSE(IsExtenderCallFailure(
      "0/3 nodes are available: 1 node(s) had taint {dedicated: gpu}, that the pod didn't "
      "tolerate, 2 Insufficient cpu."));
  EXPECT_FALSE(IsExtenderCallFailure(""));
}

TEST(RankCauses, APodGroupGateQuotesTheCountOfNowAndTheRecordedOneWithItsAge) {
  const std::string recorded = "pod group shop/g1 has 1 of 3 pods (minAvailable)";
  std::vector<NodeScore> nodes = {Gated("a", recorded), Gated("b", recorded)};
  CauseInputs in = Inputs(nodes);
  in.decision_age = "2h";
  in.pod_group_now = CauseInputs::PodGroupNow{2, 3};
  auto causes = RankCauses(in);
  ASSERT_EQ(Ids(causes), (std::vector<std::string>{kCausePodGroup}));
  EXPECT_EQ(causes[0].detail,
            "pod group shop/g1 has 2 of 3 pods now (recorded 2h ago: pod group shop/g1 has 1 of "
            "3 pods (minAvailable))");
  EXPECT_NE(causes[0].fix.find("create the group's remaining pods"), std::string::npos);

  // Complete since: the recorded rejection is history, and the fix says what happens next.
  in.pod_group_now = CauseInputs::PodGroupNow{3, 3};
  causes = RankCauses(in);
  ASSERT_EQ(Ids(causes), (std::vector<std::string>{kCausePodGroup}));
  EXPECT_NE(causes[0].detail.find("has 3 of 3 pods now"), std::string::npos) << causes[0].detail;
  EXPECT_NE(causes[0].reason.find("was incomplete"), std::string::npos) << causes[0].reason;
  EXPECT_NE(causes[0].fix.find("complete now"), std::string::npos) << causes[0].fix;
}

TEST(MisplacedCauses, ADeschedulePolicyViolationOrAnUntoleratedNoExecuteTaint) {
  nlohmann::json pod = {{"metadata", {{"labels", {{"telemetry-policy", "hot"}}}}},
                        {"spec", {{"tolerations", {{{"key", "ok"}, {"operator", "Exists"}}}}}}};
  nlohmann::json node = {{"metadata", {{"name", "n1"}, {"labels", {{"hot", "violating"}}}}},
                         {"spec",
                          {{"taints",
                            {{{"key", "ok"}, {"effect", "NoExecute"}},
                             {{"key", "soft"}, {"effect", "NoSchedule"}},
                             {{"key", "gone"}, {"effect", "NoExecute"}}}}}}};
  auto causes = MisplacedCauses(pod, node);
  ASSERT_EQ(Ids(causes), (std::vector<std::string>{kCauseDeschedule, kCauseNoExecuteTaint}));
  EXPECT_EQ(causes[0].detail, "node n1 is labelled hot=violating");
  EXPECT_EQ(causes[1].detail, "taint gone:NoExecute");
  EXPECT_NE(causes[1].fix.find("kubectl taint nodes n1 gone:NoExecute-"), std::string::npos);
  // Another policy's label, or none, is no reason to move.
  node["metadata"]["labels"] = {{"cold", "violating"}};
  node["spec"]["taints"] = nlohmann::json::array();
  EXPECT_TRUE(MisplacedCauses(pod, node).empty());
}

}  // namespace
}  // namespace powerctl::explain
