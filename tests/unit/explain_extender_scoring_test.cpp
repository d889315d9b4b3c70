// The extender's POST /v1/score and its client (DecideByExtender): the server's answer, played
// back through a scripted transport, is read back into the same decisions.
#include "core/explain/extender_scoring.h"
#include "core/extender/extender_service.h"
#include "core/predict/builtin_model.h"
#include "tests/unit/fake_transport.h"
#include "tests/unit/telemetry_fakes.h"

#include <gtest/gtest.h>

namespace powerctl::explain {
namespace {

using json = nlohmann::json;

json NodeObject(const std::string& name, const std::string& max_watts) {
  return {{"metadata", {{"name", name}, {"annotations", {{"powerctl.io/max-watts", max_watts}}}}},
          {"status", {{"allocatable", {{"cpu", "4"}}}, {"capacity", {{"cpu", "4"}}}}}};
}

json PodObject(json labels = json::object()) {
  return {
      {"metadata", {{"name", "web-1"}, {"namespace", "shop"}, {"labels", labels}}},
      {"spec", {{"containers", {{{"name", "c"}, {"resources", {{"requests", {{"cpu", "1"}}}}}}}}}}};
}

class ExtenderScoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto snapshot = std::make_shared<cluster::ClusterSnapshot>();
    std::vector<telemetry::NodeInfo> infos;
    for (const json& n : {NodeObject("a", "400"), NodeObject("b", "200")}) {
      snapshot->PutNode(cluster::NodeStateFromJson(n));
      infos.push_back(telemetry::NodeInfoFromJson(n));
    }
    snapshot_ = snapshot;
    telemetry_ = std::make_unique<telemetry::TelemetryService>(
        cpu_, temperatures_, [infos] { return Result<std::vector<telemetry::NodeInfo>>(infos); },
        telemetry::TelemetryServiceOptions{});
    ASSERT_TRUE(telemetry_->Readings(telemetry::Wait::kIfEmpty).ok());
    deps_.config = &config_;
    deps_.telemetry = telemetry_.get();
    deps_.predictor = &builtin_;
    deps_.snapshot = [this] { return snapshot_; };
    service_ = std::make_unique<extender::ExtenderService>(deps_, metrics_);
  }
  server::HttpResponse Score(const json& body) {
    server::HttpRequest r;
    r.method = "POST";
    r.path = extender::kScorePath;
    r.body = body.dump();
    return service_->Score(r);
  }

  config::PowerctlConfig config_;
  testsupport::StaticCpuSource cpu_{[](std::size_t) { return 1.0; }};
  testsupport::NoTemperatureSource temperatures_;
  std::unique_ptr<telemetry::TelemetryService> telemetry_;
  predict::BuiltinPredictor builtin_;
  std::shared_ptr<const cluster::ClusterSnapshot> snapshot_;
  scoring::SchedulingDeps deps_;
  server::MetricsRegistry metrics_;
  std::unique_ptr<extender::ExtenderService> service_;
};

TEST_F(ExtenderScoreTest, AnswersFilterThenPrioritizeAndRecordsNothing) {
  server::HttpResponse r = Score({{"pod", PodObject()}, {"nodes", {"a", "b"}}});
  ASSERT_EQ(r.status, 200) << r.body;
  json answer = json::parse(r.body);
  EXPECT_EQ(answer["kind"], "ScoreResult");
  EXPECT_EQ(answer["filter"]["verb"], "filter");
  ASSERT_EQ(answer["prioritize"]["nodes"].size(), 2u);
  // b has the lower maximum power: the smaller delta, the higher score.
  EXPECT_EQ(answer["prioritize"]["nodes"][1]["node"], "b");
  EXPECT_EQ(answer["prioritize"]["nodes"][1]["score"], 10);
  EXPECT_TRUE(answer["prioritize"]["nodes"][1].contains("wattsAfter"));
  server::HttpRequest list;
  list.method = "GET";
  EXPECT_EQ(json::parse(service_->Decisions(list).body)["items"].size(), 0u);
}

TEST_F(ExtenderScoreTest, AnIncompleteGroupIsGatedAndNotPrioritized) {
  // The pod is the group's only member so far (it counts itself).
  json pod = PodObject({{"podGroup", "g"}, {"minAvailable", "2"}});
  json answer = json::parse(Score({{"pod", pod}, {"nodes", {"a", "b"}}}).body);
  EXPECT_EQ(answer["filter"]["nodes"][0]["pass"], false);
  EXPECT_NE(answer["filter"]["nodes"][0]["reason"].get<std::string>().find("pod group shop/g"),
            std::string::npos);
  EXPECT_TRUE(answer["prioritize"].is_null());
}

TEST_F(ExtenderScoreTest, BadBodiesAre400) {
  EXPECT_EQ(Score(json::array()).status, 400);
  EXPECT_EQ(Score({{"pod", 1}, {"nodes", {"a"}}}).status, 400);
  EXPECT_EQ(Score({{"pod", PodObject()}, {"nodes", {1}}}).status, 400);
  EXPECT_EQ(Score({{"pod", PodObject()}}).status, 400);
}

TEST_F(ExtenderScoreTest, TheClientReadsTheServersAnswerThroughTheServiceProxy) {
  json pod = PodObject();
  server::HttpResponse served = Score({{"pod", pod}, {"nodes", {"a", "b"}}});
  auto transport = std::make_unique<kube::fake::FakeTransport>();
  kube::fake::FakeTransport* fake = transport.get();
  fake->responses.push_back(kube::HttpResponse{200, served.body, {}});
  kube::Client client(std::move(transport), kube::ClientOptions{});

  auto decided = DecideByExtender(client, config_, pod, {"a", "b"});
  ASSERT_TRUE(decided.ok()) << decided.error().message;
  EXPECT_TRUE(decided->from_extender);
  json answer = json::parse(served.body);
  EXPECT_EQ(scoring::DecisionToJson(decided->filter), answer["filter"]);
  EXPECT_EQ(scoring::DecisionToJson(decided->prioritize), answer["prioritize"]);
  ASSERT_EQ(fake->requests.size(), 1u);
  EXPECT_EQ(fake->requests[0].method, "POST");
  EXPECT_EQ(fake->requests[0].path,
            "/api/v1/namespaces/powerctl/services/http:powerctl-extender:ops/proxy/v1/score");
  json sent = json::parse(fake->requests[0].body);
  EXPECT_EQ(sent["pod"], pod);
  EXPECT_EQ(sent["nodes"], json({"a", "b"}));
}

TEST_F(ExtenderScoreTest, AnAnswerThatIsNotAScoreResultIsInvalid) {
  auto transport = std::make_unique<kube::fake::FakeTransport>();
  transport->responses.push_back(kube::HttpResponse{200, R"({"kind":"Status"})", {}});
  kube::Client client(std::move(transport), kube::ClientOptions{});
  auto decided = DecideByExtender(client, config_, PodObject(), {"a"});
  ASSERT_FALSE(decided.ok());
  EXPECT_EQ(decided.error().code, ErrorCode::kInvalidInput);
}

TEST_F(ExtenderScoreTest, OnlyTheExtenderMeansNoFallback) {
  auto transport = std::make_unique<kube::fake::FakeTransport>();
  transport->responses.push_back(
      kube::fake::ApiReply(404, kube::fake::StatusBody(404, "NotFound", "services not found")));
  kube::Client client(std::move(transport), kube::ClientOptions{});
  LocalScoringDeps deps;
  deps.kube = &client;
  auto decided =
      Decide(report::PredictSource::kExtender, PodObject(), {"a"}, ClusterObjects{}, config_, deps);
  ASSERT_FALSE(decided.ok());
  EXPECT_NE(decided.error().message.find("extender powerctl/powerctl-extender"), std::string::npos)
      << decided.error().message;
}

}  // namespace
}  // namespace powerctl::explain
