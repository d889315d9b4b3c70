// Fuzzes TASPolicy objects as the extender's policy watch (core/cluster/node_cache.cpp) and
// `score`/`explain` read them: the input is the object's JSON, parsed with the Kubernetes
// bounds (ParseJsonBounded, kKubeJsonLimits), then PolicyFromJson. An accepted policy is
// evaluated on four nodes whose metric values cover a value, a missing value, NaN and
// infinities, by every strategy function the extender and the cluster writer call.
//
// Checks beyond "no crash, no exception": errors are kInvalidInput; an accepted policy passes
// ValidatePolicy, has a name and a metric per rule; written back as a TASPolicy it parses to
// the same policy; filter reasons are only for known nodes; scores are finite and in 0..10;
// label changes only touch known nodes and keys under the policy's prefixes.
//
// Run: tests/fuzz/run.sh taspolicy_fuzzer

#include "core/common/json_bounds.h"
#include "core/scoring/policies.h"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace {

namespace config = powerctl::config;
namespace scoring = powerctl::scoring;
using config::Policy;
using powerctl::ErrorCode;
using Json = nlohmann::json;

[[noreturn]] void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "taspolicy_fuzzer: %s\n  %s\n", what, detail.c_str());
  __builtin_trap();
}

const std::vector<std::string> kNodes = {"n0", "n1", "n2", "n3"};

// Node n0 reads `seed`, n1 misses the metric, n2 reads NaN, n3 +/-infinity by metric.
scoring::MetricValues ValuesFor(const Policy& policy, double seed) {
  scoring::MetricValues values;
  int i = 0;
  for (const std::string& metric : config::PolicyMetrics(policy)) {
    auto& nodes = values[metric];
    nodes["n0"].value = seed + i;
    nodes["n1"].reason = "no series for node n1";
    nodes["n2"].value = std::numeric_limits<double>::quiet_NaN();
    nodes["n3"].value = (i % 2 == 0 ? 1 : -1) * std::numeric_limits<double>::infinity();
    ++i;
  }
  return values;
}

Json ToJson(const Policy& policy) {
  Json strategies = Json::object();
  for (const auto& [name, strategy] : policy.strategies) {
    Json rules = Json::array();
    for (const auto& rule : strategy.rules) {
      Json r = {{"metricname", rule.metric_name}, {"operator", rule.op}};
      if (rule.has_target) r["target"] = rule.target;
      if (!rule.labels.empty()) r["labels"] = rule.labels;
      rules.push_back(std::move(r));
    }
    Json body = {{"rules", std::move(rules)}};
    if (!strategy.logical_operator.empty()) body["logicalOperator"] = strategy.logical_operator;
    strategies[name] = std::move(body);
  }
  Json metadata = {{"name", policy.name}};
  if (!policy.namespace_.empty()) metadata["namespace"] = policy.namespace_;
  return {{"apiVersion", "telemetry.intel.com/v1alpha1"},
          {"kind", "TASPolicy"},
          {"metadata", std::move(metadata)},
          {"spec", {{"strategies", std::move(strategies)}}}};
}

bool KnownNode(const std::string& node) {
  for (const std::string& n : kNodes) {
    if (n == node) return true;
  }
  return false;
}

void CheckLabelChanges(const std::vector<scoring::LabelChange>& changes, const Policy& policy) {
  const std::string prefix = std::string(config::kLabelingPrefix) + policy.name + "/";
  for (const scoring::LabelChange& change : changes) {
    if (!KnownNode(change.node)) Fail("a label change for an unknown node", change.node);
    if (change.key != policy.name && change.key.rfind(prefix, 0) != 0) {
      Fail("a label change outside the policy's keys", change.key);
    }
  }
}

void Evaluate(const Policy& policy, double seed) {
  const scoring::MetricValues values = ValuesFor(policy, seed);
  const scoring::PolicyFilterResult filter = scoring::FilterNodes(policy, kNodes, values);
  for (const auto& [node, reason] : filter.failed) {
    if (!KnownNode(node)) Fail("a filter result for an unknown node", node);
    if (reason.empty()) Fail("a node failed without a reason", node);
  }
  for (const double missing : {0.0, 5.0}) {
    const scoring::PolicyScores scores = scoring::ScoreNodes(policy, kNodes, values, missing);
    for (const auto& [node, score] : scores.nodes) {
      if (!KnownNode(node)) Fail("a score for an unknown node", node);
      if (!std::isfinite(score.score) || score.score < 0 || score.score > 10) {
        Fail("a score outside 0..10", node + ": " + std::to_string(score.score));
      }
    }
  }
  for (const auto& [name, strategy] : policy.strategies) {
    for (const std::string& node : kNodes) {
      (void)scoring::EvaluateStrategy(policy.name, name, strategy, node, values);
    }
  }
  std::map<std::string, scoring::Labels> owned;
  for (const std::string& node : kNodes) {
    owned[node][policy.name] = config::kViolatingValue;
    owned[node][std::string(config::kLabelingPrefix) + policy.name + "/stale"] = "x";
    owned[node]["kubernetes.io/hostname"] = node;
  }
  const scoring::NodeLabels labels = scoring::BorrowLabels(owned);
  CheckLabelChanges(scoring::DescheduleLabelChanges({policy}, labels, values), policy);
  CheckLabelChanges(scoring::DescheduleCleanup(policy.name, labels), policy);
  CheckLabelChanges(scoring::LabelingChanges(policy, labels, values), policy);
  for (const auto& [node, node_labels] : scoring::LabelsForNodes(policy, kNodes, values)) {
    if (!KnownNode(node)) Fail("labels for an unknown node", node);
    (void)node_labels;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const Json object = powerctl::ParseJsonBounded(text, powerctl::kKubeJsonLimits);
  if (object.is_discarded()) return 0;
  auto policy = config::PolicyFromJson(object);
  if (!policy.ok()) {
    if (policy.error().code != ErrorCode::kInvalidInput) {
      Fail("a TASPolicy error is not kInvalidInput", policy.error().message);
    }
    return 0;
  }
  if (policy->name.empty()) Fail("a policy without a name was accepted", "");
  const auto valid = config::ValidatePolicy(*policy, "fuzz");
  if (!valid.ok()) Fail("an accepted policy fails ValidatePolicy", valid.error().message);
  for (const auto& [name, strategy] : policy->strategies) {
    for (const auto& rule : strategy.rules) {
      if (rule.metric_name.empty()) Fail("a rule without a metric was accepted", name);
    }
  }

  const Json written = ToJson(*policy);
  auto again = config::PolicyFromJson(written);
  if (!again.ok()) Fail("a written-back policy is rejected", again.error().message);
  if (ToJson(*again) != written) Fail("a policy changed in the round trip", written.dump());

  // The seed value comes from the input so comparisons with the targets vary.
  Evaluate(*policy, static_cast<double>(static_cast<std::int8_t>(data[size / 2])));
  return 0;
}
