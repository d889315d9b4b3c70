// ExtenderService: kube-scheduler's JSON in, the scheduling core's decision out, recorded.
#include "core/extender/extender_service.h"

#include "core/predict/builtin_model.h"
#include "tests/unit/telemetry_fakes.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace powerctl::extender {
namespace {

using json = nlohmann::json;

json NodeObject(const std::string& name, const std::string& max_watts) {
  return {{"metadata", {{"name", name}, {"annotations", {{"powerctl.io/max-watts", max_watts}}}}},
          {"status", {{"allocatable", {{"cpu", "4"}}}, {"capacity", {{"cpu", "4"}}}}}};
}

const json kPod = {
    {"metadata", {{"name", "web-1"}, {"namespace", "shop"}, {"uid", "u-1"}}},
    {"spec", {{"containers", {{{"name", "c"}, {"resources", {{"requests", {{"cpu", "1"}}}}}}}}}}};

class ExtenderServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    nodes_ = json::array({NodeObject("a", "400"), NodeObject("b", "200")});
    std::vector<telemetry::NodeInfo> infos;
    for (const auto& n : nodes_) infos.push_back(telemetry::NodeInfoFromJson(n));
    telemetry_ = std::make_unique<telemetry::TelemetryService>(
        cpu_, temperatures_, [infos] { return Result<std::vector<telemetry::NodeInfo>>(infos); },
        telemetry::TelemetryServiceOptions{});
    ASSERT_TRUE(telemetry_->Readings(telemetry::Wait::kIfEmpty).ok());
    deps_.config = &config_;
    deps_.telemetry = telemetry_.get();
    deps_.predictor = &builtin_;
    service_ = std::make_unique<ExtenderService>(deps_, metrics_);
  }
  // Everything the service hands its decision observer from now on (the observer runs after
  // each answer is sent).
  std::vector<std::shared_ptr<const scoring::Decision>>& ObservedDecisions() {
    service_->SetDecisionObserver(
        [this](std::shared_ptr<const scoring::Decision> d) { observed_.push_back(std::move(d)); });
    return observed_;
  }
  json FullNodesArgs() const {
    return {{"Pod", kPod}, {"Nodes", {{"items", nodes_}}}, {"NodeNames", nullptr}};
  }
  server::HttpRequest Post(json body) {
    server::HttpRequest r;
    r.method = "POST";
    r.body = body.dump();
    return r;
  }
  config::PowerctlConfig config_;
  testsupport::StaticCpuSource cpu_{[](std::size_t) { return 1.0; }};
  testsupport::NoTemperatureSource temperatures_;
  std::unique_ptr<telemetry::TelemetryService> telemetry_;
  predict::BuiltinPredictor builtin_;
  scoring::SchedulingDeps deps_;
  server::MetricsRegistry metrics_;
  std::unique_ptr<ExtenderService> service_;
  json nodes_;
  std::vector<std::shared_ptr<const scoring::Decision>> observed_;
};

TEST_F(ExtenderServiceTest, PrioritizeInFullNodesModeAnswersABareArray) {
  server::HttpResponse r = service_->Prioritize(
      Post({{"Pod", kPod}, {"Nodes", {{"items", nodes_}}}, {"NodeNames", nullptr}}));
  ASSERT_EQ(r.status, 200) << r.body;
  json answer = json::parse(r.body);
  ASSERT_TRUE(answer.is_array());
  ASSERT_EQ(answer.size(), 2u);
  EXPECT_EQ(answer[0], (json{{"Host", "a"}, {"Score", 0}}));   // 1 of 4 cores: +70 W
  EXPECT_EQ(answer[1], (json{{"Host", "b"}, {"Score", 10}}));  // +20 W
  EXPECT_NE(metrics_.Render().find(
                "powerctl_extender_requests_total{verb=\"prioritize\",code=\"200\"} 1"),
            std::string::npos)
      << metrics_.Render();
}

TEST_F(ExtenderServiceTest, MetricsCountPredictionsAndDescribeTelemetry) {
  json body = {{"Pod", kPod}, {"Nodes", {{"items", nodes_}}}, {"NodeNames", nullptr}};
  ASSERT_EQ(service_->Prioritize(Post(body)).status, 200);
  service_->CollectMetrics();
  std::string text = metrics_.Render();
  EXPECT_NE(text.find("powerctl_extender_power_estimates_total{result=\"predicted\"} 2"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("powerctl_extender_power_estimates_total{result=\"unknown\"} 0"),
            std::string::npos)
      << text;
  // Nodes sent in the request have no cached object: prepared every time.
  EXPECT_NE(text.find("powerctl_extender_prepared_nodes_total{result=\"miss\"} 2"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("powerctl_telemetry_snapshot_age_seconds{source=\"cpu\"}"), std::string::npos)
      << text;
  EXPECT_NE(text.find("powerctl_telemetry_refresh_failing{source=\"temperature\"} 0"),
            std::string::npos)
      << text;
  // The allocator's view of the heap, for telling live data from memory kept for reuse.
  EXPECT_NE(text.find("powerctl_heap_bytes{state=\"allocated\"} "), std::string::npos) << text;
  EXPECT_EQ(text.find("powerctl_heap_bytes{state=\"allocated\"} 0\n"), std::string::npos) << text;
}

TEST_F(ExtenderServiceTest, FilterWithoutAClusterPassesEveryNodeAndSaysWhy) {
  server::HttpResponse r =
      service_->Filter(Post({{"Pod", kPod}, {"Nodes", nullptr}, {"NodeNames", {"a", "b"}}}));
  ASSERT_EQ(r.status, 200) << r.body;
  json answer = json::parse(r.body);
  EXPECT_EQ(answer["NodeNames"], json({"a", "b"}));
  EXPECT_EQ(answer["FailedNodes"], json::object());
  server::HttpRequest get;
  get.method = "GET";
  get.query = "pod=shop/web-1";
  json decisions = json::parse(service_->Decisions(get).body);
  ASSERT_EQ(decisions["items"].size(), 1u);
  EXPECT_EQ(decisions["items"][0]["verb"], "filter");
}

TEST_F(ExtenderServiceTest, BadRequestsAre400WithAReason) {
  server::HttpRequest r;
  r.body = "{not json";
  server::HttpResponse answer = service_->Prioritize(r);
  EXPECT_EQ(answer.status, 400);
  EXPECT_NE(answer.body.find("ExtenderArgs"), std::string::npos) << answer.body;
  r.body = R"({"Pod": null, "NodeNames": ["a"]})";
  EXPECT_EQ(service_->Filter(r).status, 400);
  EXPECT_EQ(service_->Preempt(r).status, 400);
}

// What the server does with an answer once it is written.
server::HttpResponse Served(server::HttpResponse response) {
  if (response.after_send) response.after_send();
  return response;
}

TEST_F(ExtenderServiceTest, DecisionsAreNewestFirstAndBounded) {
  ExtenderService small(deps_, metrics_, {.keep_decisions = 2});
  for (int i = 0; i < 3; ++i) {
    json pod = kPod;
    pod["metadata"]["name"] = "p" + std::to_string(i);
    Served(small.Prioritize(
        Post({{"Pod", pod}, {"Nodes", {{"items", nodes_}}}, {"NodeNames", nullptr}})));
  }
  server::HttpRequest get;
  json items = json::parse(small.Decisions(get).body)["items"];
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[0]["pod"]["name"], "p2");
  EXPECT_EQ(items[1]["pod"]["name"], "p1");
}

TEST_F(ExtenderServiceTest, RecordedDecisionsAreBoundedByTheirNodeEntries) {
  ExtenderService small(
      deps_, metrics_,
      {.keep_decisions = 100, .keep_node_entries = 5});  // each decision here holds 2 nodes
  for (int i = 0; i < 4; ++i) {
    json pod = kPod;
    pod["metadata"]["name"] = "p" + std::to_string(i);
    Served(small.Prioritize(
        Post({{"Pod", pod}, {"Nodes", {{"items", nodes_}}}, {"NodeNames", nullptr}})));
  }
  server::HttpRequest get;
  json items = json::parse(small.Decisions(get).body)["items"];
  ASSERT_EQ(items.size(), 2u);  // 4 node entries <= 5 < 6
  EXPECT_EQ(items[0]["pod"]["name"], "p3");
}

TEST_F(ExtenderServiceTest, OlderDecisionsKeepTheirTopNodesBeforeTheyAreDropped) {
  ExtenderService small(deps_, metrics_, {.keep_decisions = 100, .keep_node_entries = 150});
  json names = json::array();
  for (int i = 0; i < 100; ++i) names.push_back("n" + std::to_string(i));
  for (int i = 0; i < 3; ++i) {
    json pod = kPod;
    pod["metadata"]["name"] = "p" + std::to_string(i);
    Served(small.Prioritize(Post({{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", names}})));
  }
  server::HttpRequest get;
  json items = json::parse(small.Decisions(get).body)["items"];
  ASSERT_EQ(items.size(), 3u);  // 100 + 20 + 20 entries
  EXPECT_EQ(items[0]["nodes"].size(), 100u);
  EXPECT_EQ(items[1]["nodes"].size(), 20u);
  EXPECT_EQ(items[2]["nodes"].size(), 20u);
}

TEST_F(ExtenderServiceTest, UntrimmedDecisionsStayWithinTwiceTheirBudget) {
  // A caller that never runs after_send (not the server) still cannot grow the record
  // without bound: past twice the budget, recording trims.
  ExtenderService small(deps_, metrics_, {.keep_decisions = 2});
  for (int i = 0; i < 10; ++i) {
    json pod = kPod;
    pod["metadata"]["name"] = "p" + std::to_string(i);
    (void)small.Prioritize(
        Post({{"Pod", pod}, {"Nodes", {{"items", nodes_}}}, {"NodeNames", nullptr}}));
    server::HttpRequest get;
    EXPECT_LE(json::parse(small.Decisions(get).body)["items"].size(), 4u);
  }
}

TEST_F(ExtenderServiceTest, FiltersAreRecordedWithTheirRejectionsOnly) {
  const auto& seen = ObservedDecisions();
  const json body = FullNodesArgs();
  server::HttpResponse filtered = service_->Filter(Post(body));
  // Both nodes passed, as the answer says ...
  EXPECT_TRUE(json::parse(filtered.body).value("FailedNodes", json::object()).empty())
      << filtered.body;
  // ... and the record keeps what explains the decision: no node was rejected, so none is
  // listed and both are counted, from the start and for the observer (the Event writer) too.
  server::HttpRequest get;
  json items = json::parse(service_->Decisions(get).body)["items"];
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(items[0]["verb"], "filter");
  EXPECT_EQ(items[0]["nodes"], json::array()) << items[0];
  EXPECT_EQ(items[0]["omitted"], 2);
  filtered.after_send();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_TRUE(seen[0]->nodes.empty());
  EXPECT_EQ(seen[0]->omitted_nodes, 2u);
}

TEST_F(ExtenderServiceTest, TheObserverGetsALargeDecisionCutAsTheRecordWillKeepIt) {
  const auto& seen = ObservedDecisions();
  json many = json::array();
  for (int i = 0; i < 30; ++i) many.push_back(NodeObject("n" + std::to_string(i), "300"));
  server::HttpResponse prioritized = service_->Prioritize(
      Post({{"Pod", kPod}, {"Nodes", {{"items", many}}}, {"NodeNames", nullptr}}));
  ASSERT_EQ(prioritized.status, 200) << prioritized.body;
  prioritized.after_send();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0]->nodes.size(), 20u);  // the 20 best-scored
  EXPECT_EQ(seen[0]->omitted_nodes, 10u);
  // The record itself stays whole while it is the newest.
  server::HttpRequest get;
  json items = json::parse(service_->Decisions(get).body)["items"];
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(items[0]["nodes"].size(), 30u);
}

TEST_F(ExtenderServiceTest, TheObserverSeesEveryDecisionOnceItsAnswerIsSent) {
  const auto& seen = ObservedDecisions();
  const json body = FullNodesArgs();
  server::HttpResponse filtered = service_->Filter(Post(body));
  server::HttpResponse prioritized = service_->Prioritize(Post(body));
  EXPECT_TRUE(seen.empty());  // not on the way to the answer
  ASSERT_TRUE(filtered.after_send && prioritized.after_send);
  filtered.after_send();
  prioritized.after_send();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0]->verb, scoring::kVerbFilter);
  EXPECT_EQ(seen[1]->verb, scoring::kVerbPrioritize);
  EXPECT_EQ(seen[1]->pod_name, "web-1");
  ASSERT_EQ(seen[1]->nodes.size(), 2u);
  EXPECT_EQ(seen[1]->nodes[1].score, 10);
  // The same decision the ops port shows.
  server::HttpRequest get;
  json items = json::parse(service_->Decisions(get).body)["items"];
  EXPECT_EQ(items[0], scoring::DecisionToJson(*seen[1]));
}

TEST_F(ExtenderServiceTest, RequestsNamingMoreNodesThanTheLimitAre400) {
  // 786,000 empty names in 2.4 MB once took 18 s and 1.9 GiB on the ops port: the number of
  // candidates, not only the body's bytes, bounds a request's work.
  ExtenderService limited(deps_, metrics_, {.max_request_nodes = 3});
  json four = json::array({"a", "b", "", ""});
  json args = {{"Pod", kPod}, {"Nodes", nullptr}, {"NodeNames", four}};
  for (server::HttpResponse r : {limited.Filter(Post(args)), limited.Prioritize(Post(args))}) {
    EXPECT_EQ(r.status, 400);
    EXPECT_NE(r.body.find("4 candidate nodes, more than 3 (extender.maxRequestNodes)"),
              std::string::npos)
        << r.body;
  }
  json victims = json::object();
  for (const char* node : {"a", "b", "c", "d"}) victims[node] = {{"Pods", json::array()}};
  server::HttpResponse preempt =
      limited.Preempt(Post({{"Pod", kPod}, {"NodeNameToMetaVictims", victims}}));
  EXPECT_EQ(preempt.status, 400) << preempt.body;
  server::HttpResponse score = limited.Score(Post({{"pod", kPod}, {"nodes", four}}));
  EXPECT_EQ(score.status, 400) << score.body;
  // At the limit, answered.
  json three = json::array({"a", "b", "c"});
  EXPECT_EQ(
      limited.Prioritize(Post({{"Pod", kPod}, {"Nodes", nullptr}, {"NodeNames", three}})).status,
      200);
  EXPECT_EQ(limited.Score(Post({{"pod", kPod}, {"nodes", three}})).status, 200);
}

TEST_F(ExtenderServiceTest, ReadingDecisionsDoesNotHoldUpScheduling) {
  // GET /v1/decisions?limit=100000 once serialised every kept decision under the lock that
  // recording takes, so prioritize waited (median 1.3 -> 17-41 ms). Here one reader
  // serialises 50,000 verdicts while prioritize calls go on: with the lock held throughout,
  // at most the call already past the lock could finish before the reader did.
  ExtenderService big(deps_, metrics_, {.keep_decisions = 200, .keep_node_entries = 1'000'000});
  json names = json::array();
  for (int i = 0; i < 250; ++i) names.push_back("n" + std::to_string(i));
  const json many = {{"Pod", kPod}, {"Nodes", nullptr}, {"NodeNames", names}};
  for (int i = 0; i < 200; ++i) Served(big.Prioritize(Post(many)));
  const json small = FullNodesArgs();

  std::atomic<bool> reading{false}, done{false};
  std::size_t items = 0;
  std::thread reader([&] {
    server::HttpRequest get;
    get.query = "limit=100000";
    reading = true;
    items = json::parse(big.Decisions(get).body)["items"].size();
    done = true;
  });
  while (!reading) std::this_thread::yield();
  int finished_while_reading = 0;
  while (!done) {
    server::HttpResponse r = big.Prioritize(Post(small));
    if (!done) ++finished_while_reading;
    Served(std::move(r));
  }
  reader.join();
  EXPECT_EQ(items, 200u);
  EXPECT_GE(finished_while_reading, 10);
}

TEST_F(ExtenderServiceTest, PredictionsCountTheCpuOfPodsNotYetMeasuredAsPrioritizeDoes) {
  // Node a measures 1 of its 4 cores; a 3-core pod was just bound to it (not started).
  auto snapshot = std::make_shared<cluster::ClusterSnapshot>();
  for (const json& item : nodes_) snapshot->PutNode(cluster::NodeStateFromJson(item));
  cluster::NodeState a = *snapshot->FindNode("a");
  cluster::PodInfo bound;
  bound.namespace_ = "shop";
  bound.name = "batch-1";
  bound.node_name = "a";
  bound.phase = "Pending";
  bound.requests.cpu_cores = 3;
  a.requested.cpu_cores += 3;
  a.pods.push_back(std::make_shared<const cluster::PodInfo>(bound));
  snapshot->PutNode(std::move(a));
  snapshot->IndexNodes();
  deps_.snapshot = [snapshot] { return std::shared_ptr<const cluster::ClusterSnapshot>(snapshot); };
  ExtenderService service(deps_, metrics_);

  server::HttpRequest get;
  get.method = "GET";
  get.query = "cpu=1&node=a&node=b";
  server::HttpResponse predictions = service.Predictions(get);
  ASSERT_EQ(predictions.status, 200) << predictions.body;
  json document = json::parse(predictions.body);
  const json& cpu_a = document["nodes"][0]["cpu"];
  EXPECT_EQ(cpu_a["value"], 1.0);  // the measurement
  EXPECT_EQ(cpu_a["unmeasuredRequestCores"], 3.0);
  EXPECT_EQ(cpu_a["unmeasuredPods"], 1);
  EXPECT_EQ(cpu_a["usedCores"], 4.0);
  EXPECT_EQ(cpu_a["fractionNow"], 1.0);
  EXPECT_TRUE(document["nodes"][0]["overcommitted"].get<bool>());
  EXPECT_EQ(document["nodes"][1]["cpu"]["usedCores"], 1.0);

  // Prioritize of a 1-core pod reads the same CPU: the same watts, and a is overcommitted.
  server::HttpResponse scored =
      service.Score(Post({{"pod", kPod}, {"nodes", json::array({"a", "b"})}}));
  ASSERT_EQ(scored.status, 200) << scored.body;
  json decision = json::parse(scored.body)["prioritize"];
  ASSERT_TRUE(decision.is_object()) << scored.body;
  for (std::size_t i = 0; i < 2; ++i) {
    const json& predicted = document["nodes"][i];
    const json* node = nullptr;
    for (const json& n : decision["nodes"]) {
      if (n["node"] == predicted["node"]) node = &n;
    }
    ASSERT_NE(node, nullptr) << decision.dump();
    EXPECT_EQ((*node)["wattsNow"], predicted["wattsNow"]) << predicted["node"];
    EXPECT_EQ((*node)["wattsAfter"], predicted["wattsAfter"]) << predicted["node"];
  }
}

}  // namespace
}  // namespace powerctl::extender
