#include "core/explain/score.h"
#include "tests/unit/fake_api_server.h"

#include <gtest/gtest.h>

namespace powerctl::explain {
namespace {

using json = nlohmann::json;

TEST(PodToScore, MakesAOneContainerPodFromQuantities) {
  ScoreRequest request;
  request.cpu = "500m";
  request.memory = "256Mi";
  auto pod = PodToScore(request);
  ASSERT_TRUE(pod.ok()) << pod.error().message;
  EXPECT_EQ((*pod)["kind"], "Pod");
  EXPECT_EQ((*pod)["spec"]["containers"][0]["resources"]["requests"],
            (json{{"cpu", "500m"}, {"memory", "256Mi"}}));
  EXPECT_EQ((*pod)["metadata"]["namespace"], "default");
}

TEST(PodToScore, RejectsBadInputNamingIt) {
  ScoreRequest none;
  EXPECT_EQ(PodToScore(none).error().message, "give --pod FILE or --cpu QUANTITY");
  ScoreRequest bad_cpu;
  bad_cpu.cpu = "lots";
  EXPECT_EQ(PodToScore(bad_cpu).error().code, ErrorCode::kInvalidInput);
  ScoreRequest bad_memory;
  bad_memory.cpu = "1";
  bad_memory.memory = "much";
  EXPECT_NE(PodToScore(bad_memory).error().message.find("--memory \"much\""), std::string::npos);
  ScoreRequest not_a_pod;
  not_a_pod.pod = json{{"kind", "Deployment"}};
  EXPECT_NE(PodToScore(not_a_pod).error().message.find("not a Pod"), std::string::npos);
  ScoreRequest both;
  both.pod = json{{"kind", "Pod"}, {"spec", {{"containers", json::array()}}}};
  both.cpu = "1";
  EXPECT_EQ(PodToScore(both).error().message, "give --pod or --cpu/--memory, not both");
}

TEST(PodToScore, AManifestKeepsItsLabelsAndGetsANamespace) {
  ScoreRequest request;
  request.pod = json{{"apiVersion", "v1"},
                     {"kind", "Pod"},
                     {"metadata", {{"labels", {{"telemetry-policy", "cool"}}}}},
                     {"spec", {{"containers", {{{"name", "c"}}}}}}};
  auto pod = PodToScore(request);
  ASSERT_TRUE(pod.ok()) << pod.error().message;
  EXPECT_EQ((*pod)["metadata"]["namespace"], "default");
  EXPECT_EQ((*pod)["metadata"]["labels"]["telemetry-policy"], "cool");
}

scoring::NodeDecision ScoredNode(const std::string& node, std::int64_t score, double now,
                                 double after) {
  scoring::NodeDecision n;
  n.node = node;
  n.score = score;
  n.watts_now = now;
  n.watts_after = after;
  return n;
}

TEST(RankNodes, ScoredFirstThenGatedThenNotFitting) {
  scoring::Decision filter;
  filter.verb = scoring::kVerbFilter;
  scoring::NodeDecision gated;
  gated.node = "gated";
  gated.passed = false;
  gated.reason = "policy p dontschedule: m=9 > 5";
  filter.nodes = {gated};
  scoring::Decision prioritize;
  prioritize.verb = scoring::kVerbPrioritize;
  prioritize.nodes = {ScoredNode("low", 3, 100, 150), ScoredNode("tie-far", 8, 100, 130),
                      ScoredNode("tie-near", 8, 100, 110), ScoredNode("best", 10, 100, 101)};
  std::map<std::string, std::vector<scoring::FitFailure>> fit;
  fit["tainted"] = {{scoring::kCheckTaints, scoring::kReasonUntoleratedTaint, "taint t", "fix"}};
  auto rows = RankNodes({"tainted", "gated", "low", "tie-far", "tie-near", "best"}, fit, filter,
                        prioritize);
  std::vector<std::string> order;
  for (const NodeScore& r : rows) order.push_back(r.node);
  EXPECT_EQ(order,
            (std::vector<std::string>{"best", "tie-near", "tie-far", "low", "gated", "tainted"}));
  EXPECT_DOUBLE_EQ(*rows[0].DeltaWatts(), 1.0);
  json best = NodeScoreToJson(rows[0]);
  EXPECT_EQ(best["score"], 10);
  EXPECT_EQ(best["deltaWatts"], 1.0);
  EXPECT_TRUE(best["fits"].get<bool>());
  json tainted = NodeScoreToJson(rows.back());
  EXPECT_FALSE(tainted["fits"].get<bool>());
  EXPECT_TRUE(tainted["score"].is_null());
  EXPECT_EQ(tainted["fit"][0]["check"], "taints");
  json gated_row = NodeScoreToJson(rows[4]);
  EXPECT_EQ(gated_row["gate"]["pass"], false);
}

TEST(ScorePod, NamedNodesMustExist) {
  kube::fake::FakeApiServer server;
  auto client = server.MakeClient();
  ScoreRequest request;
  request.cpu = "1";
  request.nodes = {"ghost"};
  LocalScoringDeps deps;
  deps.kube = client.get();
  auto report = ScorePod(request, config::PowerctlConfig{}, deps);
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.error().code, ErrorCode::kNotFound);
  EXPECT_EQ(report.error().message, "node \"ghost\" not found");
}

TEST(ScorePod, NoFittingNodeMeansTheExtenderIsNotAsked) {
  kube::fake::FakeApiServer server;
  server.Put({{"apiVersion", "v1"},
              {"kind", "Node"},
              {"metadata", {{"name", "small"}}},
              {"status", {{"allocatable", {{"cpu", "1"}, {"memory", "1Gi"}, {"pods", "10"}}}}}});
  auto client = server.MakeClient();
  ScoreRequest request;
  request.cpu = "2";
  LocalScoringDeps deps;
  deps.kube = client.get();
  auto report = ScorePod(request, config::PowerctlConfig{}, deps);
  ASSERT_TRUE(report.ok()) << report.error().message;
  ASSERT_EQ(report->nodes.size(), 1u);
  ASSERT_EQ(report->nodes[0].fit.size(), 1u);
  EXPECT_EQ(report->nodes[0].fit[0].reason, scoring::kReasonInsufficientCpu);
  EXPECT_FALSE(report->nodes[0].gate);
  EXPECT_TRUE(server.RequestsTo("POST", "/api/v1/namespaces/powerctl/services").empty());
}

}  // namespace
}  // namespace powerctl::explain
