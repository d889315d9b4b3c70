// Telemetry policies (TASPolicy): parsing with field-naming errors, rule and strategy
// evaluation, filter/score/label decisions, TAS bug fixes, and the Prometheus metric source.
#include "core/scoring/policies.h"
#include "core/scoring/policy_metrics.h"
#include "tests/unit/telemetry_test_support.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace powerctl::scoring {
namespace {

using json = nlohmann::json;
using config::Policy;
using ::testing::HasSubstr;

json TasPolicy(json strategies, const std::string& name = "p", const std::string& ns = "demo") {
  return {{"apiVersion", "telemetry.intel.com/v1alpha1"},
          {"kind", "TASPolicy"},
          {"metadata", {{"name", name}, {"namespace", ns}}},
          {"spec", {{"strategies", std::move(strategies)}}}};
}

Policy Parse(json strategies, const std::string& name = "p") {
  Result<Policy> policy = config::PolicyFromJson(TasPolicy(std::move(strategies), name));
  EXPECT_TRUE(policy.ok()) << policy.error().message;
  return policy.ok() ? policy.value() : Policy{};
}

std::string ParseError(json object) {
  Result<Policy> policy = config::PolicyFromJson(object);
  EXPECT_FALSE(policy.ok());
  return policy.ok() ? "" : policy.error().message;
}

MetricValues Values(const std::string& metric, std::map<std::string, std::optional<double>> v) {
  MetricValues out;
  for (const auto& [node, value] : v) {
    out[metric][node] = MetricValue{value, value ? "" : "no series for " + node};
  }
  return out;
}

// The README example of TAS, all four strategies.
const json kReadmeExample = {
    {"deschedule",
     {{"rules", {{{"metricname", "node_metric"}, {"operator", "Equals"}, {"target", -1}}}}}},
    {"dontschedule",
     {{"rules", {{{"metricname", "node_metric"}, {"operator", "LessThan"}, {"target", 10}}}}}},
    {"scheduleonmetric",
     {{"rules", {{{"metricname", "node_metric"}, {"operator", "GreaterThan"}}}}}},
    {"labeling",
     {{"rules",
       {{{"metricname", "node_metric"},
         {"operator", "GreaterThan"},
         {"target", 100},
         {"labels", {"label1=foo", "label2=bar"}}}}}}}};

TEST(PolicyParse, ReadsTheTasReadmeExample) {
  Policy p = Parse(kReadmeExample, "scheduling-policy");
  EXPECT_EQ(p.name, "scheduling-policy");
  EXPECT_EQ(p.namespace_, "demo");
  ASSERT_EQ(p.strategies.size(), 4u);
  const auto& rule = p.strategies.at("dontschedule").rules.at(0);
  EXPECT_EQ(rule.metric_name, "node_metric");
  EXPECT_EQ(rule.op, "LessThan");
  EXPECT_TRUE(rule.has_target);
  EXPECT_EQ(rule.target, 10);
  EXPECT_FALSE(p.strategies.at("scheduleonmetric").rules.at(0).has_target);
  EXPECT_EQ(p.strategies.at("deschedule").rules.at(0).target, -1);
  EXPECT_EQ(p.strategies.at("labeling").rules.at(0).labels,
            (std::vector<std::string>{"label1=foo", "label2=bar"}));
  EXPECT_EQ(config::PolicyMetrics(p), (std::set<std::string>{"node_metric"}));
}

TEST(PolicyParse, ErrorsNameTheObjectAndTheField) {
  auto rule = [](json r) { return TasPolicy({{"dontschedule", {{"rules", {r}}}}}); };
  EXPECT_EQ(ParseError(rule({{"metricname", "m"}, {"operator", "Lt"}, {"target", 1}})),
            "TASPolicy demo/p: spec.strategies.dontschedule.rules[0].operator: must be one of "
            "Equals, LessThan, GreaterThan (got \"Lt\")");
  EXPECT_THAT(ParseError(rule({{"metricname", "a/b"}, {"operator", "LessThan"}})),
              HasSubstr("rules[0].metricname: must match ^[a-zA-Z0-9_-]+$ (got \"a/b\")"));
  EXPECT_THAT(ParseError(rule({{"operator", "LessThan"}})),
              HasSubstr("rules[0].metricname: required"));
  EXPECT_THAT(ParseError(rule({{"metricname", "m"}, {"operator", "LessThan"}, {"target", 1.5}})),
              HasSubstr("rules[0].target: must be an integer (got 1.5)"));
  EXPECT_THAT(ParseError(rule({{"metricname", "m"}, {"operator", "LessThan"}, {"tagret", 1}})),
              HasSubstr("rules[0].tagret: unknown field"));
  EXPECT_THAT(
      ParseError(TasPolicy({{"dontschedul", {{"rules", json::array()}}}})),
      HasSubstr("spec.strategies: must be one of dontschedule, scheduleonmetric, "
                "deschedule, labeling (got \"dontschedul\"); did you mean \"dontschedule\"?"));
  EXPECT_THAT(ParseError(TasPolicy({{"dontschedule", {{"rules", json::array()}}}})),
              HasSubstr("spec.strategies.dontschedule.rules: at least one rule"));
  EXPECT_THAT(ParseError(TasPolicy({{"dontschedule", json::object()}})),
              HasSubstr("spec.strategies.dontschedule.rules: required"));
  EXPECT_THAT(
      ParseError(TasPolicy({{"dontschedule",
                             {{"logicalOperator", "oneOf"},
                              {"rules", {{{"metricname", "m"}, {"operator", "Equals"}}}}}}})),
      HasSubstr("dontschedule.logicalOperator: must be allOf or anyOf (got \"oneOf\")"));
  json no_spec = TasPolicy({});
  no_spec.erase("spec");
  EXPECT_EQ(ParseError(no_spec), "TASPolicy demo/p: spec: required");
  json wrong_api = TasPolicy(kReadmeExample);
  wrong_api["apiVersion"] = "telemetry.intel.com/v1";
  EXPECT_THAT(ParseError(wrong_api), HasSubstr("apiVersion: must be telemetry.intel.com/v1alpha1"));
  EXPECT_THAT(ParseError(json::array()), HasSubstr("not a JSON object"));
}

TEST(PolicyParse, LabelingLabelsAreCheckedAndMayNotMixOperatorsOnOneKey) {
  auto labeling = [](json rules) { return TasPolicy({{"labeling", {{"rules", rules}}}}); };
  EXPECT_THAT(ParseError(labeling({{{"metricname", "m"}, {"operator", "GreaterThan"}}})),
              HasSubstr("labeling.rules[0].labels: a labeling rule needs labels"));
  EXPECT_THAT(ParseError(labeling(
                  {{{"metricname", "m"}, {"operator", "GreaterThan"}, {"labels", {"novalue"}}}})),
              HasSubstr("labeling.rules[0].labels[0]: must be key=value (got \"novalue\")"));
  EXPECT_THAT(
      ParseError(labeling(
          {{{"metricname", "m"}, {"operator", "GreaterThan"}, {"labels", {"k=bad value"}}}})),
      HasSubstr("labels[0]: value \"bad value\""));
  // TAS only logged "Unsupported config" for this at every evaluation.
  EXPECT_THAT(
      ParseError(labeling({{{"metricname", "a"}, {"operator", "GreaterThan"}, {"labels", {"k=x"}}},
                           {{"metricname", "b"}, {"operator", "LessThan"}, {"labels", {"k=y"}}}})),
      HasSubstr("labeling.rules[1].labels: label key \"k\" is set by rules with different "
                "operators (GreaterThan, LessThan)"));
}

TEST(PolicyRules, CompareLikeTas) {
  config::PolicyRule lt{"m", "LessThan", 10, true, {}};
  config::PolicyRule gt{"m", "GreaterThan", 10, true, {}};
  config::PolicyRule eq{"m", "Equals", 10, true, {}};
  EXPECT_TRUE(RuleHolds(lt, 9.5));
  EXPECT_FALSE(RuleHolds(lt, 10));
  EXPECT_TRUE(RuleHolds(gt, 10.01));
  EXPECT_FALSE(RuleHolds(gt, 10));
  EXPECT_TRUE(RuleHolds(eq, 10));
  EXPECT_FALSE(RuleHolds(eq, 10.5));
}

TEST(PodPolicyLookup, NoLabelPassesAndUnknownPolicyPassesWithANote) {
  std::map<std::string, Policy> policies{{"demo/p", Parse(kReadmeExample)}};
  EXPECT_EQ(FindPodPolicy("demo", {}, policies).policy, nullptr);
  EXPECT_EQ(FindPodPolicy("demo", {}, policies).note, "");
  PodPolicy found = FindPodPolicy("demo", {{"telemetry-policy", "p"}}, policies);
  ASSERT_NE(found.policy, nullptr);
  EXPECT_EQ(found.policy->name, "p");
  // The policy is looked up in the pod's own namespace.
  PodPolicy other_ns = FindPodPolicy("prod", {{"telemetry-policy", "p"}}, policies);
  EXPECT_EQ(other_ns.policy, nullptr);
  EXPECT_EQ(other_ns.note, "telemetry-policy \"p\" not found in namespace prod; not applied");
  PodPolicy invalid = FindPodPolicy("demo", {{"telemetry-policy", "bad"}}, policies,
                                    {{"demo/bad", "spec: required"}});
  EXPECT_EQ(invalid.note,
            "telemetry-policy \"bad\" in namespace demo is invalid (spec: required); not applied");
}

TEST(PolicyFilter, DontScheduleFailsViolatorsNamingPolicyRuleAndValue) {
  Policy p = Parse(
      {{"dontschedule",
        {{"rules", {{{"metricname", "power"}, {"operator", "GreaterThan"}, {"target", 60}}}}}}},
      "power-cap");
  auto result = FilterNodes(p, {"a", "b", "c"}, Values("power", {{"a", 72}, {"b", 40}, {"c", {}}}));
  // TAS bug: the reason was the bare "Node violates".
  EXPECT_EQ(
      result.failed,
      (std::map<std::string, std::string>{{"a", "policy power-cap dontschedule: power=72 > 60"}}));
  // Missing metric: passes (fail-open as TAS), but the reason is kept.
  EXPECT_EQ(
      result.notes.at("c"),
      "policy power-cap dontschedule: not evaluated: power missing (no series for c); passed");
  // No dontschedule strategy: everything passes (TAS PR #57/#78).
  EXPECT_TRUE(FilterNodes(Policy{"q", "demo", {}}, {"a"}, {}).failed.empty());
}

TEST(PolicyFilter, AllOfNeedsEveryRuleAnyOfOne) {
  json rules = {{{"metricname", "t"}, {"operator", "GreaterThan"}, {"target", 80}},
                {{"metricname", "p"}, {"operator", "GreaterThan"}, {"target", 60}}};
  MetricValues v = Values("t", {{"hot", 90}, {"warm", 90}, {"cool", 50}, {"half", 90}});
  v["p"] = Values("p", {{"hot", 70}, {"warm", 50}, {"cool", 70}, {"half", {}}})["p"];
  Policy all = Parse({{"dontschedule", {{"logicalOperator", "allOf"}, {"rules", rules}}}});
  Policy any = Parse({{"dontschedule", {{"logicalOperator", "anyOf"}, {"rules", rules}}}});
  std::vector<std::string> nodes{"hot", "warm", "cool", "half"};
  auto all_result = FilterNodes(all, nodes, v);
  EXPECT_EQ(all_result.failed.size(), 1u);
  EXPECT_EQ(all_result.failed.at("hot"), "policy p dontschedule: t=90 > 80 and p=70 > 60");
  EXPECT_EQ(all_result.notes.count("half"), 1u);  // t holds, p unknown: undecided
  auto any_result = FilterNodes(any, nodes, v);
  EXPECT_EQ(any_result.failed.size(), 4u);  // "half" violates by t alone
  EXPECT_EQ(any_result.failed.at("cool"), "policy p dontschedule: p=70 > 60");
}

TEST(PolicyScore, ProportionalNotOrdinalAndNeverNegative) {
  Policy lower = Parse(
      {{"scheduleonmetric", {{"rules", {{{"metricname", "power"}, {"operator", "LessThan"}}}}}}});
  std::map<std::string, std::optional<double>> watts{{"n0", 40}, {"n1", 72}, {"n2", 56}};
  for (int i = 3; i < 14; ++i) watts["n" + std::to_string(i)] = 72;  // more than ten nodes
  watts["gone"] = std::nullopt;
  std::vector<std::string> nodes;
  for (const auto& [n, w] : watts) nodes.push_back(n);
  PolicyScores s = ScoreNodes(lower, nodes, Values("power", watts), /*missing_score=*/3);
  ASSERT_TRUE(s.applies);
  EXPECT_DOUBLE_EQ(s.nodes.at("n0").score, 10);
  EXPECT_DOUBLE_EQ(s.nodes.at("n1").score, 0);
  EXPECT_DOUBLE_EQ(s.nodes.at("n2").score, 5);
  for (const auto& [n, score] : s.nodes) EXPECT_GE(score.score, 0) << n;
  EXPECT_EQ(s.nodes.at("n0").reason,
            "policy p scheduleonmetric: power=40 (range 40..72, lower is better)");
  EXPECT_DOUBLE_EQ(s.nodes.at("gone").score, 3);
  EXPECT_THAT(s.nodes.at("gone").reason, HasSubstr("power missing (no series for gone); score 3"));

  Policy higher = Parse({{"scheduleonmetric",
                          {{"rules", {{{"metricname", "power"}, {"operator", "GreaterThan"}}}}}}});
  PolicyScores h = ScoreNodes(higher, {"n0", "n1", "n2"}, Values("power", watts));
  EXPECT_DOUBLE_EQ(h.nodes.at("n0").score, 0);
  EXPECT_DOUBLE_EQ(h.nodes.at("n1").score, 10);
  // All equal: no preference, all best.
  PolicyScores same = ScoreNodes(higher, {"a", "b"}, Values("power", {{"a", 5}, {"b", 5}}));
  EXPECT_DOUBLE_EQ(same.nodes.at("a").score, 10);
  EXPECT_DOUBLE_EQ(same.nodes.at("b").score, 10);
  EXPECT_FALSE(ScoreNodes(Policy{"x", "demo", {}}, {"a"}, {}).applies);
}

TEST(PolicyScore, EqualsScoresByEqualityWithTheTarget) {
  // TAS bug: Equals left the ranking to Go's random map order.
  Policy p =
      Parse({{"scheduleonmetric",
              {{"rules", {{{"metricname", "zone"}, {"operator", "Equals"}, {"target", 2}}}}}}});
  PolicyScores s = ScoreNodes(p, {"a", "b"}, Values("zone", {{"a", 2}, {"b", 3}}));
  EXPECT_DOUBLE_EQ(s.nodes.at("a").score, 10);
  EXPECT_DOUBLE_EQ(s.nodes.at("b").score, 0);
  EXPECT_EQ(s.nodes.at("b").reason, "policy p scheduleonmetric: zone=3 differs from 2");
}

TEST(PolicyDeschedule, LabelsViolatorsRemovesRecoveredAndLeavesUnknownAlone) {
  Policy p = Parse(
      {{"deschedule",
        {{"rules", {{{"metricname", "temp"}, {"operator", "GreaterThan"}, {"target", 80}}}}}}},
      "too-hot");
  const std::map<std::string, Labels> owned{{"hot", {}},
                                            {"recovered", {{"too-hot", "violating"}}},
                                            {"still", {{"too-hot", "violating"}}},
                                            {"blind", {{"too-hot", "violating"}}},
                                            {"cool", {{"other", "x"}}}};
  NodeLabels nodes = BorrowLabels(owned);
  auto changes = DescheduleLabelChanges(
      {p}, nodes,
      Values("temp", {{"hot", 95}, {"recovered", 60}, {"still", 90}, {"blind", {}}, {"cool", 20}}));
  ASSERT_EQ(changes.size(), 2u);
  EXPECT_EQ(changes[0].node, "hot");
  EXPECT_EQ(changes[0].key, "too-hot");
  EXPECT_EQ(changes[0].value, "violating");
  EXPECT_EQ(changes[0].reason, "policy too-hot deschedule: temp=95 > 80");
  EXPECT_EQ(changes[1].node, "recovered");
  EXPECT_EQ(changes[1].value, std::nullopt);
  // "blind" has no value: TAS would have removed its label as if it had recovered.

  auto cleanup = DescheduleCleanup("too-hot", nodes);
  ASSERT_EQ(cleanup.size(), 3u);
  EXPECT_EQ(cleanup[0].node, "blind");
  EXPECT_EQ(cleanup[0].value, std::nullopt);
}

TEST(PolicyDeschedule, SameNamedPoliciesInTwoNamespacesDoNotFight) {
  Policy a = Parse(
      {{"deschedule",
        {{"rules", {{{"metricname", "temp"}, {"operator", "GreaterThan"}, {"target", 80}}}}}}},
      "hot");
  Policy b = Parse(
      {{"deschedule",
        {{"rules", {{{"metricname", "power"}, {"operator", "GreaterThan"}, {"target", 60}}}}}}},
      "hot");
  b.namespace_ = "other";
  MetricValues v = Values("temp", {{"n", 50}});
  v["power"] = Values("power", {{"n", 70}})["power"];
  // a says compliant, b says violating: the node is violating (TAS flapped between the two).
  const Labels none, labelled{{"hot", "violating"}};
  auto changes = DescheduleLabelChanges({a, b}, {{"n", &none}}, v);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].value, "violating");
  EXPECT_TRUE(DescheduleLabelChanges({a, b}, {{"n", &labelled}}, v).empty());
}

TEST(PolicyLabeling, LabelsPerNodeWithTheWinningRulePerKey) {
  Policy p = Parse({{"labeling",
                     {{"rules",
                       {{{"metricname", "gpu0"},
                         {"operator", "GreaterThan"},
                         {"target", 80},
                         {"labels", {"prefer=gpu0", "busy=yes"}}},
                        {{"metricname", "gpu1"},
                         {"operator", "GreaterThan"},
                         {"target", 80},
                         {"labels", {"prefer=gpu1"}}}}}}}},
                   "gas");
  MetricValues v = Values("gpu0", {{"a", 90}, {"b", 85}, {"c", 10}, {"d", {}}});
  v["gpu1"] = Values("gpu1", {{"a", 95}, {"b", 10}, {"c", 10}, {"d", 10}})["gpu1"];
  auto labels = LabelsForNodes(p, {"a", "b", "c", "d"}, v);
  const std::string pre = "telemetry.aware.scheduling.gas/";
  // GreaterThan: the rule with the highest metric wins the shared key, as in TAS.
  EXPECT_EQ(labels.at("a"),
            (std::map<std::string, std::string>{{pre + "prefer", "gpu1"}, {pre + "busy", "yes"}}));
  EXPECT_EQ(labels.at("b").at(pre + "prefer"), "gpu0");
  EXPECT_EQ(labels.count("c"), 0u);

  const std::map<std::string, Labels> owned{
      {"a", {{pre + "prefer", "gpu0"}, {pre + "busy", "yes"}}},
      {"b", {}},
      {"c", {{pre + "prefer", "gpu0"}, {"unrelated", "x"}}},
      {"d", {{pre + "stale", "1"}}}};
  NodeLabels current = BorrowLabels(owned);
  auto changes = LabelingChanges(p, current, v);
  ASSERT_EQ(changes.size(), 4u);
  EXPECT_EQ(changes[0].node, "a");  // replace
  EXPECT_EQ(changes[0].value, "gpu1");
  EXPECT_EQ(changes[1].node, "b");  // add two labels
  EXPECT_EQ(changes[2].node, "b");
  EXPECT_EQ(changes[3].node, "c");  // remove; "d" has a metric missing and is left alone
  EXPECT_EQ(changes[3].key, pre + "prefer");
  EXPECT_EQ(changes[3].value, std::nullopt);
}

// ---- the Prometheus metric source ---------------------------------------------------------

telemetry::PrometheusOptions PromOptions() {
  telemetry::PrometheusOptions options;
  options.url = "http://prom:9090";
  return options;
}

std::string Vector(const std::string& series_json) {
  return R"({"status":"success","data":{"resultType":"vector","result":[)" + series_json + "]}}";
}

TEST(PrometheusMetricSource, MapsSeriesToNodesWithReasonsAndCaches) {
  int queries = 0;
  telemetry_test::FakeHttp http([&](const HttpClientRequest& r) -> Result<HttpClientResponse> {
    ++queries;
    EXPECT_THAT(r.body, HasSubstr("node_power-avg"));  // prefix applied, '-' allowed
    return telemetry_test::Reply(
        200, Vector(R"({"metric":{"instance":"10.0.0.1:9100"},"value":[1700000000,"41.5"]},)"
                    R"({"metric":{"node":"b"},"value":[1700000000,"NaN"]},)"
                    R"({"metric":{"node":"c","cpu":"0"},"value":[1700000000,"1"]},)"
                    R"({"metric":{"node":"c","cpu":"1"},"value":[1700000000,"2"]})"));
  });
  telemetry::PrometheusClient prometheus(http, PromOptions());
  telemetry_test::ManualClock clock;
  PrometheusMetricOptions options;
  options.metric_prefix = "node_";
  options.cache.clock = clock.AsClock();
  PrometheusMetricSource source(prometheus, options);
  EXPECT_EQ(source.QueryFor("power-avg"), "{__name__=\"node_power-avg\"}");
  std::vector<telemetry::NodeInfo> nodes{
      {"a", {"10.0.0.1"}, {}, {}}, {"b", {}, {}, {}}, {"c", {}, {}, {}}, {"d", {}, {}, {}}};
  auto values = source.Values("power-avg", nodes);
  ASSERT_TRUE(values.ok()) << values.error().message;
  EXPECT_EQ(values->at("a").value, 41.5);
  EXPECT_EQ(values->at("b").reason, "node_power-avg is not a finite number on node b");
  EXPECT_THAT(values->at("c").reason, HasSubstr("2 series of node_power-avg map to node c"));
  EXPECT_EQ(values->at("d").reason, "Prometheus has no series of node_power-avg for node d");
  ASSERT_TRUE(source.Values("power-avg", nodes).ok());
  EXPECT_EQ(queries, 1);  // served from the cache
}

TEST(PrometheusMetricSource, AFailedSourceBecomesAReasonOnEveryNode) {
  telemetry_test::FakeHttp http([](const HttpClientRequest&) -> Result<HttpClientResponse> {
    return MakeError(ErrorCode::kNetwork, "connection refused to http://prom:9090");
  });
  telemetry::PrometheusClient prometheus(http, PromOptions());
  PrometheusMetricSource source(prometheus, {});
  MetricValues v = CollectMetricValues(source, {"temp"}, {{"a", {}, {}, {}}, {"b", {}, {}, {}}});
  ASSERT_EQ(v.at("temp").size(), 2u);
  EXPECT_FALSE(v.at("temp").at("a").value);
  EXPECT_THAT(v.at("temp").at("b").reason, HasSubstr("metric temp"));
  EXPECT_THAT(v.at("temp").at("b").reason, HasSubstr("connection refused"));
  // And a policy over it passes every node, saying why.
  Policy p = Parse(
      {{"dontschedule",
        {{"rules", {{{"metricname", "temp"}, {"operator", "GreaterThan"}, {"target", 1}}}}}}});
  auto result = FilterNodes(p, {"a", "b"}, v);
  EXPECT_TRUE(result.failed.empty());
  EXPECT_THAT(result.notes.at("a"), HasSubstr("connection refused"));
}

}  // namespace
}  // namespace powerctl::scoring
