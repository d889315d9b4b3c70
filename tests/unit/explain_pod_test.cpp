// ExplainPod against the in-memory API server: what it gathers and how it reads it.
#include "core/explain/explain_pod.h"

#include "core/extender/decision_batch.h"
#include "tests/unit/fake_api_server.h"

#include <gtest/gtest.h>

namespace powerctl::explain {
namespace {

using json = nlohmann::json;
using kube::fake::FakeApiServer;

constexpr const char* kNow = "2026-11-25T08:00:00Z";

class ExplainPodTest : public ::testing::Test {
 protected:
  void SetUp() override {
    client_ = server_.MakeClient();
    server_.Put({{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "shop"}}}});
    server_.Put({{"apiVersion", "v1"},
                 {"kind", "Namespace"},
                 {"metadata", {{"name", config_.namespace_}}}});
    PutNode("n1", {{{"key", "dedicated"}, {"value", "gpu"}, {"effect", "NoSchedule"}}});
    PutNode("n2", json::array());
    deps_.kube = client_.get();
    std::tm tm{};
    strptime(kNow, "%Y-%m-%dT%H:%M:%S", &tm);
    deps_.now = std::chrono::system_clock::from_time_t(timegm(&tm));
  }

  void PutNode(const std::string& name, json taints) {
    json node = {{"apiVersion", "v1"},
                 {"kind", "Node"},
                 {"metadata", {{"name", name}, {"labels", {{"kubernetes.io/hostname", name}}}}},
                 {"spec", json::object()},
                 {"status", {{"allocatable", {{"cpu", "4"}, {"memory", "8Gi"}, {"pods", "110"}}}}}};
    if (!taints.empty()) node["spec"]["taints"] = taints;
    server_.Put(node);
  }

  void PutPod(const std::string& scheduler, const std::string& node_name, json labels = {}) {
    json pod = {
        {"apiVersion", "v1"},
        {"kind", "Pod"},
        {"metadata", {{"name", "web-1"}, {"namespace", "shop"}, {"labels", labels}}},
        {"spec",
         {{"schedulerName", scheduler},
          {"containers", {{{"name", "c"}, {"resources", {{"requests", {{"cpu", "500m"}}}}}}}}}},
        {"status", {{"phase", node_name.empty() ? "Pending" : "Running"}}}};
    if (!node_name.empty()) pod["spec"]["nodeName"] = node_name;
    server_.Put(pod);
    uid_ = server_.Object("/api/v1/namespaces/shop/pods/web-1")["metadata"]["uid"];
  }

  void PutLease(const std::string& renewed) {
    server_.Put(
        {{"apiVersion", "coordination.k8s.io/v1"},
         {"kind", "Lease"},
         {"metadata", {{"name", config_.scheduler.name}, {"namespace", config_.namespace_}}},
         {"spec",
          {{"holderIdentity", "sched-0"}, {"leaseDurationSeconds", 15}, {"renewTime", renewed}}}});
  }

  void PutEvent(const std::string& name, json event) {
    event["apiVersion"] = "v1";
    event["kind"] = "Event";
    event["metadata"]["name"] = name;
    event["metadata"]["namespace"] = "shop";
    event["involvedObject"] = {{"kind", "Pod"}, {"name", "web-1"}, {"uid", uid_}};
    server_.PutAt("/api/v1/namespaces/shop/events/" + name, event);
  }

  void PutDecision(const scoring::Decision& decision, const std::string& name) {
    extender::DecisionEventSource source{"replica-b", name,
                                         std::chrono::system_clock::from_time_t(1700000000)};
    json event = *extender::DecisionEvent(decision, source);
    event["involvedObject"]["uid"] = uid_;
    server_.PutAt("/api/v1/namespaces/shop/events/" + event["metadata"]["name"].get<std::string>(),
                  event);
  }

  scoring::Decision GroupFilter() {
    scoring::Decision d;
    d.verb = scoring::kVerbFilter;
    d.pod_namespace = "shop";
    d.pod_name = "web-1";
    d.pod_uid = uid_;
    d.at_unix_ms = 1700000000000;
    scoring::NodeDecision n2;
    n2.node = "n2";
    n2.passed = false;
    n2.reason = "pod group shop/g has 1 of 2 pods (minAvailable)";
    d.nodes = {n2};
    return d;
  }

  FakeApiServer server_;
  std::unique_ptr<kube::Client> client_;
  config::PowerctlConfig config_;
  ExplainDeps deps_;
  std::string uid_;
};

TEST_F(ExplainPodTest, PendingOnARecordedPodGroupGate) {
  PutPod(config_.scheduler.name, "", {{"podGroup", "g"}, {"minAvailable", "2"}});
  PutLease("2026-11-25T07:59:58.000000Z");
  PutEvent("web-1.sched", {{"type", "Warning"},
                           {"reason", "FailedScheduling"},
                           {"reportingComponent", config_.scheduler.name},
                           {"eventTime", "2026-11-25T07:59:00.000000Z"},
                           {"series", {{"count", 4}}},
                           {"message", "0/2 nodes are available: 1 node(s) had taint."}});
  PutDecision(GroupFilter(), "d1");

  auto report = ExplainPod({"shop", "web-1"}, config_, deps_);
  ASSERT_TRUE(report.ok()) << report.error().message;
  EXPECT_FALSE(report->scheduled());
  EXPECT_EQ(report->source, DecisionSource::kRecorded);
  EXPECT_NE(report->source_text.find("replica replica-b"), std::string::npos);
  EXPECT_EQ(report->filter, GroupFilter());
  ASSERT_EQ(report->checks.size(), 3u);
  EXPECT_EQ(report->checks[0].status, setup::CheckStatus::kPass);  // the lease
  EXPECT_EQ(report->checks[1].status, setup::CheckStatus::kPass);  // it reported on the pod
  EXPECT_EQ(report->checks[2].id, "extender-ready");
  EXPECT_EQ(report->checks[2].status, setup::CheckStatus::kWarn);  // no Service here
  // The scheduler's event, verbatim, with its series count.
  // Oldest first: the decision Event was written (in 2023) before the scheduler's.
  ASSERT_EQ(report->events.size(), 2u);
  EXPECT_EQ(report->events[0].reason, extender::kReasonPowerFiltered);
  EXPECT_EQ(report->events[1].reason, "FailedScheduling");
  EXPECT_EQ(report->events[1].from, config_.scheduler.name);
  EXPECT_EQ(report->events[1].count, 4);
  EXPECT_EQ(report->events[1].message, "0/2 nodes are available: 1 node(s) had taint.");
  // n1 fails kube-scheduler's taint check, n2 the extender's gate.
  ASSERT_EQ(report->causes.size(), 2u);
  std::set<std::string> ids = {report->causes[0].id, report->causes[1].id};
  EXPECT_EQ(ids, (std::set<std::string>{kCausePodGroup, kCauseUntoleratedTaint}));
  json doc = ExplainReportToJson(*report);
  EXPECT_EQ(doc["decision"]["source"], "recorded");
  EXPECT_EQ(doc["causes"].size(), 2u);
}

TEST_F(ExplainPodTest, ScheduledPodShowsTheRecordedScores) {
  PutPod(config_.scheduler.name, "n2");
  PutLease("2026-11-25T07:59:58Z");
  scoring::Decision d;
  d.verb = scoring::kVerbPrioritize;
  d.pod_namespace = "shop";
  d.pod_name = "web-1";
  d.pod_uid = uid_;
  d.at_unix_ms = 1700000000000;
  scoring::NodeDecision n2;
  n2.node = "n2";
  n2.score = 10;
  n2.watts_now = 100;
  n2.watts_after = 112.5;
  n2.components = {{"power", 10, "+12.5 W"}};
  d.nodes = {n2};
  PutDecision(d, "d2");

  auto report = ExplainPod({"shop", "web-1"}, config_, deps_);
  ASSERT_TRUE(report.ok()) << report.error().message;
  EXPECT_TRUE(report->scheduled());
  EXPECT_FALSE(report->problem());
  EXPECT_TRUE(report->causes.empty());
  EXPECT_EQ(report->prioritize, d);
  ASSERT_EQ(report->nodes.size(), 2u);
  EXPECT_EQ(report->nodes[0].node, "n2");  // scored first
  ASSERT_TRUE(report->nodes[0].DeltaWatts());
  EXPECT_DOUBLE_EQ(*report->nodes[0].DeltaWatts(), 12.5);
  json doc = ExplainReportToJson(*report);
  EXPECT_TRUE(doc["nodes"][0]["chosen"].get<bool>());
  EXPECT_FALSE(doc["nodes"][1]["chosen"].get<bool>());
  EXPECT_EQ(doc["decision"]["objective"], "marginal");
  EXPECT_EQ(doc["decision"]["whyChosen"], "n2 won: the only node the extender scored");
}

TEST_F(ExplainPodTest, ScheduledPodSaysWhyItsNodeWonOnFillCost) {
  PutNode("n3", json::array());
  PutPod(config_.scheduler.name, "n3");
  PutLease("2026-11-25T07:59:58Z");
  scoring::Decision d;
  d.verb = scoring::kVerbPrioritize;
  d.pod_namespace = "shop";
  d.pod_name = "web-1";
  d.pod_uid = uid_;
  d.at_unix_ms = 1700000000000;
  scoring::NodeDecision n2;
  n2.node = "n2";
  n2.score = 4;
  n2.watts_now = 100;
  n2.watts_after = 130;
  n2.components = {{"power", 4.2, "+30.0 W, 12.10 W/core to fill"}};
  scoring::NodeDecision n3 = n2;
  n3.node = "n3";
  n3.score = 10;
  n3.watts_after = 160;
  n3.components = {{"power", 10, "+60.0 W, 9.80 W/core to fill"}};
  d.nodes = {n2, n3};
  PutDecision(d, "d3");

  auto report = ExplainPod({"shop", "web-1"}, config_, deps_);
  ASSERT_TRUE(report.ok()) << report.error().message;
  EXPECT_EQ(report->objective, "fill");
  EXPECT_EQ(report->why_chosen,
            "n3 won: cheapest to fill, 9.80 W/core vs 12.10 W/core on n2 (next best)");
  json doc = ExplainReportToJson(*report);
  EXPECT_EQ(doc["decision"]["whyChosen"], report->why_chosen);
  ASSERT_EQ(doc["nodes"][0]["node"], "n3");
  EXPECT_EQ(doc["nodes"][0]["deltaWatts"], 60.0);
  EXPECT_EQ(doc["nodes"][0]["fillWattsPerCore"], 9.8);
  EXPECT_EQ(doc["nodes"][1]["fillWattsPerCore"], 12.1);
}

TEST_F(ExplainPodTest, APodOnANodeItsDeschedulePolicyMarksIsAProblem) {
  PutPod(config_.scheduler.name, "n2", {{"telemetry-policy", "hot"}});
  server_.Put({{"apiVersion", "v1"},
               {"kind", "Node"},
               {"metadata", {{"name", "n2"}, {"labels", {{"hot", "violating"}}}}}});
  auto report = ExplainPod({"shop", "web-1"}, config_, deps_);
  ASSERT_TRUE(report.ok()) << report.error().message;
  EXPECT_TRUE(report->scheduled());
  EXPECT_TRUE(report->problem());
  ASSERT_EQ(report->causes.size(), 1u);
  EXPECT_EQ(report->causes[0].id, kCauseDeschedule);
}

TEST_F(ExplainPodTest, ASchedulerThatDoesNotExistSaysSo) {
  PutPod("nobody", "");
  auto report = ExplainPod({"shop", "web-1"}, config_, deps_);
  ASSERT_TRUE(report.ok()) << report.error().message;
  ASSERT_FALSE(report->causes.empty());
  EXPECT_EQ(report->causes[0].id, kCauseSchedulerNotRunning);
  EXPECT_NE(report->causes[0].fix.find("start a scheduler named nobody"), std::string::npos);
  EXPECT_EQ(report->checks[0].status, setup::CheckStatus::kFail);
  EXPECT_EQ(report->source, DecisionSource::kNone);
  EXPECT_TRUE(report->events.empty());
}

TEST_F(ExplainPodTest, AStaleLeaseIsNotARunningScheduler) {
  PutPod(config_.scheduler.name, "");
  PutLease("2026-11-25T07:00:00Z");
  auto report = ExplainPod({"shop", "web-1"}, config_, deps_);
  ASSERT_TRUE(report.ok()) << report.error().message;
  EXPECT_EQ(report->checks[0].status, setup::CheckStatus::kFail);
  EXPECT_NE(report->checks[0].message.find("sched-0 stopped renewing"), std::string::npos);
  EXPECT_EQ(report->causes[0].id, kCauseSchedulerNotRunning);
  EXPECT_NE(report->causes[0].fix.find("powerctl apply scheduler"), std::string::npos);
}

TEST_F(ExplainPodTest, AnUnreachableExtenderThatIsNotIgnorableIsTheCause) {
  PutPod(config_.scheduler.name, "");
  PutLease("2026-11-25T07:59:58Z");
  const std::string refused =
      "Post \"https://powerctl-extender.powerctl.svc:8443/scheduler/filter\": dial tcp "
      "10.96.0.12:8443: connect: connection refused";
  json pod = server_.Object("/api/v1/namespaces/shop/pods/web-1");
  pod["status"]["conditions"] = {{{"type", "PodScheduled"},
                                  {"status", "False"},
                                  {"reason", "Unschedulable"},
                                  {"message", refused}}};
  server_.Put(pod);
  PutEvent("web-1.sched", {{"type", "Warning"},
                           {"reason", "FailedScheduling"},
                           {"reportingComponent", config_.scheduler.name},
                           {"eventTime", "2026-11-25T07:59:00.000000Z"},
                           {"message", refused}});
  auto report = ExplainPod({"shop", "web-1"}, config_, deps_);
  ASSERT_TRUE(report.ok()) << report.error().message;
  ASSERT_FALSE(report->causes.empty());
  EXPECT_EQ(report->causes[0].id, kCauseExtenderError);
  EXPECT_EQ(report->causes[0].detail, refused);
  EXPECT_NE(report->causes[0].fix.find("powerctl doctor"), std::string::npos);
}

TEST_F(ExplainPodTest, APodPlacedWithoutTheExtenderSaysSo) {
  PutNode("n3", json::array());  // n2 and n3 fit: the extender would have been asked to score
  PutPod(config_.scheduler.name, "n2");
  PutLease("2026-11-25T07:59:58Z");
  PutEvent("web-1.sched", {{"type", "Normal"},
                           {"reason", "Scheduled"},
                           {"reportingComponent", config_.scheduler.name},
                           {"eventTime", "2026-11-25T07:59:00.000000Z"},
                           {"message", "Successfully assigned shop/web-1 to n2"}});
  auto report = ExplainPod({"shop", "web-1"}, config_, deps_);
  ASSERT_TRUE(report.ok()) << report.error().message;
  EXPECT_EQ(report->source, DecisionSource::kNone);
  ASSERT_TRUE(report->extender_consulted);
  EXPECT_FALSE(*report->extender_consulted);
  EXPECT_NE(report->consulted_note.find("the extender was not consulted"), std::string::npos)
      << report->consulted_note;
  json doc = ExplainReportToJson(*report);
  EXPECT_EQ(doc["decision"]["extenderConsulted"], false);

  // With one node fitting, no decision Event is what a consulted extender leaves too.
  ASSERT_TRUE(client_->Delete("/api/v1/nodes/n3").ok());
  report = ExplainPod({"shop", "web-1"}, config_, deps_);
  ASSERT_TRUE(report.ok()) << report.error().message;
  EXPECT_FALSE(report->extender_consulted);
  EXPECT_NE(report->consulted_note.find("only one node fit"), std::string::npos)
      << report->consulted_note;
}

// The extender batches decisions: the pod's may be in an Event on another pod, found by
// the pod's label, beside older decisions of the same pod in single Events.
TEST_F(ExplainPodTest, ADecisionInABatchOnAnotherPodIsFound) {
  PutPod(config_.scheduler.name, "n2");
  PutLease("2026-11-25T07:59:58Z");
  auto decision = [&](const std::string& pod, const std::string& uid, std::int64_t at) {
    scoring::Decision d;
    d.verb = scoring::kVerbPrioritize;
    d.pod_namespace = "shop";
    d.pod_name = pod;
    d.pod_uid = uid;
    d.at_unix_ms = at;
    scoring::NodeDecision n2;
    n2.node = "n2";
    n2.score = pod == "web-1" ? 10 : 1;
    n2.components = {{"power", 10, "+12.5 W"}};
    d.nodes = {n2};
    return d;
  };
  scoring::Decision older = decision("web-1", uid_, 1600000000000);
  older.nodes[0].score = 2;
  PutDecision(older, "d0");  // a single Event, as earlier extenders wrote
  extender::DecisionBatch batch("shop");
  for (const scoring::Decision& d :
       {decision("web-0", "uid-web-0", 1700000000000), decision("web-1", uid_, 1700000000000)}) {
    batch.Add(*extender::BatchEntry(d, batch.empty()));
  }
  json event = batch.ToEvent({"replica-c", "b1", std::chrono::system_clock::from_time_t(0)});
  EXPECT_EQ(event["involvedObject"]["name"], "web-0");
  server_.PutAt("/api/v1/namespaces/shop/events/" + event["metadata"]["name"].get<std::string>(),
                event);

  auto report = ExplainPod({"shop", "web-1"}, config_, deps_);
  ASSERT_TRUE(report.ok()) << report.error().message;
  EXPECT_EQ(report->source, DecisionSource::kRecorded);
  EXPECT_EQ(report->prioritize, decision("web-1", uid_, 1700000000000));  // the latest
  EXPECT_NE(report->source_text.find("replica replica-c"), std::string::npos);
  EXPECT_NE(report->source_text.find(extender::PodLabel(uid_)), std::string::npos)
      << report->source_text;
  // The list went by the pod's label, not through every Event of the namespace.
  bool by_label = false;
  for (const auto& r : server_.requests()) {
    by_label = by_label || r.Query("labelSelector") == extender::PodLabel(uid_);
  }
  EXPECT_TRUE(by_label);
}

TEST_F(ExplainPodTest, ARecordedExtenderDecisionMeansItWasConsulted) {
  PutNode("n3", json::array());
  PutPod(config_.scheduler.name, "n2");
  PutEvent("web-1.sched", {{"type", "Normal"},
                           {"reason", "Scheduled"},
                           {"reportingComponent", config_.scheduler.name},
                           {"eventTime", "2026-11-25T07:59:00.000000Z"},
                           {"message", "Successfully assigned shop/web-1 to n2"}});
  scoring::Decision d;
  d.verb = scoring::kVerbPrioritize;
  d.pod_namespace = "shop";
  d.pod_name = "web-1";
  d.pod_uid = uid_;
  d.at_unix_ms = 1700000000000;
  scoring::NodeDecision n2;
  n2.node = "n2";
  n2.score = 10;
  d.nodes = {n2};
  PutDecision(d, "d4");
  auto report = ExplainPod({"shop", "web-1"}, config_, deps_);
  ASSERT_TRUE(report.ok()) << report.error().message;
  EXPECT_EQ(report->extender_consulted, std::optional<bool>(true));
  EXPECT_TRUE(report->consulted_note.empty());
}

TEST_F(ExplainPodTest, ARecordedPodGroupGateIsComparedWithTheGroupNow) {
  PutPod(config_.scheduler.name, "", {{"podGroup", "g"}, {"minAvailable", "2"}});
  const std::string web_1_uid = uid_;
  PutLease("2026-11-25T07:59:58Z");
  PutDecision(GroupFilter(), "d1");  // "has 1 of 2 pods", recorded in 2023
  // The second pod of the group was created since.
  server_.Put({{"apiVersion", "v1"},
               {"kind", "Pod"},
               {"metadata",
                {{"name", "web-2"},
                 {"namespace", "shop"},
                 {"labels", {{"podGroup", "g"}, {"minAvailable", "2"}}}}},
               {"spec", {{"schedulerName", config_.scheduler.name}, {"containers", json::array()}}},
               {"status", {{"phase", "Pending"}}}});
  auto report = ExplainPod({"shop", "web-1"}, config_, deps_);
  ASSERT_TRUE(report.ok()) << report.error().message;
  const Cause* group = nullptr;
  for (const Cause& c : report->causes) {
    if (c.id == kCausePodGroup) group = &c;
  }
  ASSERT_NE(group, nullptr);
  EXPECT_NE(group->detail.find("pod group shop/g has 2 of 2 pods now"), std::string::npos)
      << group->detail;
  EXPECT_NE(group->detail.find("h ago: pod group shop/g has 1 of 2 pods"), std::string::npos)
      << group->detail;
  EXPECT_NE(group->fix.find("complete now"), std::string::npos) << group->fix;
  EXPECT_EQ(web_1_uid, report->pod.uid);
}

TEST_F(ExplainPodTest, AMissingPodIsNotFound) {
  auto report = ExplainPod({"shop", "ghost"}, config_, deps_);
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.error().code, ErrorCode::kNotFound);
  EXPECT_EQ(report.error().message, "pod shop/ghost not found");
}

}  // namespace
}  // namespace powerctl::explain
