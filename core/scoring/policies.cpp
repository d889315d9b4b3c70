// TASPolicy strategy evaluation: rules, dontschedule filtering, scheduleonmetric scores.

#include "core/scoring/policies.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>

namespace powerctl::scoring {
namespace {

using config::Policy;
using config::PolicyRule;
using config::PolicyStrategy;

std::string Num(double value) {
  return fmt::format("{}", value);
}

std::string RuleText(const PolicyRule& rule, double value) {
  return fmt::format("{}={} {} {}", rule.metric_name, Num(value),
                     rule.op == "LessThan"      ? "<"
                     : rule.op == "GreaterThan" ? ">"
                                                : "==",
                     rule.target);
}

const MetricValue* Lookup(const MetricValues& values, const std::string& metric,
                          const std::string& node) {
  auto m = values.find(metric);
  if (m == values.end()) return nullptr;
  auto n = m->second.find(node);
  return n == m->second.end() ? nullptr : &n->second;
}

std::string MissingText(const std::string& metric, const MetricValue* value) {
  std::string why = value == nullptr || value->reason.empty() ? "no value" : value->reason;
  return metric + " missing (" + why + ")";
}

std::string Join(const std::vector<std::string>& parts, const std::string& separator) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : separator) + p;
  return out;
}

}  // namespace

bool RuleHolds(const PolicyRule& rule, double value) {
  // TAS compares resource.Quantity with CmpInt64(target); doubles compare the same way for
  // integer targets.
  auto target = static_cast<double>(rule.target);
  if (rule.op == "LessThan") return value < target;
  if (rule.op == "GreaterThan") return value > target;
  if (rule.op == "Equals") return value == target;
  return false;
}

PodPolicy FindPodPolicy(const std::string& pod_namespace,
                        const std::map<std::string, std::string>& pod_labels,
                        const std::map<std::string, Policy>& policies,
                        const std::map<std::string, std::string>& invalid) {
  PodPolicy out;
  auto label = pod_labels.find(config::kPolicyLabel);
  // TAS bug: a pod without the label got HTTP 404 (filter) / 400 (prioritize); it simply
  // has no policy, so every node passes.
  if (label == pod_labels.end() || label->second.empty()) return out;
  std::string key = pod_namespace + "/" + label->second;
  if (auto it = policies.find(key); it != policies.end()) {
    out.policy = &it->second;
    return out;
  }
  // Never block scheduling on a missing policy; say why it was not applied.
  if (auto it = invalid.find(key); it != invalid.end()) {
    out.note = "telemetry-policy \"" + label->second + "\" in namespace " + pod_namespace +
               " is invalid (" + it->second + "); not applied";
  } else {
    out.note = "telemetry-policy \"" + label->second + "\" not found in namespace " +
               pod_namespace + "; not applied";
  }
  return out;
}

NodeVerdict EvaluateStrategy(const std::string& policy_name, const std::string& strategy_name,
                             const PolicyStrategy& strategy, const std::string& node,
                             const MetricValues& values) {
  bool all_of = strategy.logical_operator == "allOf";
  std::vector<std::string> held;
  std::vector<std::string> not_held;
  std::vector<std::string> missing;
  for (const PolicyRule& rule : strategy.rules) {
    const MetricValue* value = Lookup(values, rule.metric_name, node);
    if (value == nullptr || !value->value) {
      missing.push_back(MissingText(rule.metric_name, value));
      continue;
    }
    (RuleHolds(rule, *value->value) ? held : not_held).push_back(RuleText(rule, *value->value));
  }
  std::string prefix = "policy " + policy_name + " " + strategy_name + ": ";
  NodeVerdict out;
  bool violating = all_of ? held.size() == strategy.rules.size() : !held.empty();
  bool compliant = all_of ? !not_held.empty() : missing.empty();
  if (violating) {
    out.verdict = Verdict::kViolating;
    out.reason = prefix + Join(held, all_of ? " and " : ", ");
  } else if (compliant) {
    out.verdict = Verdict::kCompliant;
  } else {
    // TAS skipped rules whose metric was missing, so such a node silently complied.
    out.verdict = Verdict::kUnknown;
    out.reason = prefix + "not evaluated: " + Join(missing, ", ");
  }
  return out;
}

PolicyFilterResult FilterNodes(const Policy& policy, const std::vector<std::string>& nodes,
                               const MetricValues& values) {
  PolicyFilterResult out;
  auto it = policy.strategies.find(config::kDontSchedule);
  if (it == policy.strategies.end()) return out;  // TAS PR #57/#78: no strategy, all pass
  for (const std::string& node : nodes) {
    NodeVerdict v = EvaluateStrategy(policy.name, config::kDontSchedule, it->second, node, values);
    // TAS bug: its FailedNodes message was the bare "Node violates".
    if (v.verdict == Verdict::kViolating) out.failed[node] = v.reason;
    // Fail open, as TAS: a node the policy cannot judge passes, with the reason noted.
    if (v.verdict == Verdict::kUnknown) out.notes[node] = v.reason + "; passed";
  }
  return out;
}

PolicyScores ScoreNodes(const Policy& policy, const std::vector<std::string>& nodes,
                        const MetricValues& values, double missing_score) {
  PolicyScores out;
  auto it = policy.strategies.find(config::kScheduleOnMetric);
  if (it == policy.strategies.end() || it->second.rules.empty()) return out;
  out.applies = true;
  const PolicyRule& rule = it->second.rules.front();  // TAS uses Rules[0] only
  std::string prefix = "policy " + policy.name + " scheduleonmetric: ";
  std::map<std::string, double> known;
  for (const std::string& node : nodes) {
    const MetricValue* value = Lookup(values, rule.metric_name, node);
    if (value == nullptr || !value->value || !std::isfinite(*value->value)) {
      // TAS bug: nodes without the metric were left out of the answer.
      out.nodes[node] = {missing_score, prefix + MissingText(rule.metric_name, value) + "; score " +
                                            Num(missing_score)};
    } else {
      known[node] = *value->value;
    }
  }
  if (known.empty()) return out;
  auto [lo_it, hi_it] = std::minmax_element(
      known.begin(), known.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  double lo = lo_it->second;
  double hi = hi_it->second;
  for (const auto& [node, value] : known) {
    PolicyScore score;
    std::string seen = rule.metric_name + "=" + Num(value);
    if (rule.op == "Equals") {
      // TAS bug: Equals left the order to Go's map iteration (random ranks).
      score.score = RuleHolds(rule, value) ? 10 : 0;
      score.reason = prefix + seen + (score.score > 0 ? " equals " : " differs from ") +
                     std::to_string(rule.target);
    } else {
      // TAS bug: ordinal ranks 10, 9, 8, ... ignored the magnitude and went below zero past
      // ten nodes. Here: proportional to the distance from the worst node.
      bool higher_better = rule.op == "GreaterThan";
      double span = hi - lo;
      double fraction = span <= 0 ? 1.0 : (higher_better ? value - lo : hi - value) / span;
      score.score = std::clamp(10.0 * fraction, 0.0, 10.0);
      score.reason = prefix + seen + " (range " + Num(lo) + ".." + Num(hi) + ", " +
                     (higher_better ? "higher" : "lower") + " is better)";
    }
    out.nodes[node] = std::move(score);
  }
  return out;
}

}  // namespace powerctl::scoring
