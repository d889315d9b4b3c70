// Node labels that TASPolicy strategies maintain: deschedule (`<policy>=violating`) and
// labeling (`telemetry.aware.scheduling.<policy>/<key>=<value>`), as desired changes against
// the labels nodes carry now. The caller patches them.

#include "core/scoring/policies.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <tuple>

namespace powerctl::scoring {
namespace {

using config::Policy;
using config::PolicyRule;

std::optional<std::string> LabelOf(const std::map<std::string, std::string>& labels,
                                   const std::string& key) {
  auto it = labels.find(key);
  if (it == labels.end()) return std::nullopt;
  return it->second;
}

void SortChanges(std::vector<LabelChange>& changes) {
  std::sort(changes.begin(), changes.end(), [](const LabelChange& a, const LabelChange& b) {
    return std::tie(a.node, a.key) < std::tie(b.node, b.key);
  });
}

bool AnyMetricMissing(const config::PolicyStrategy& strategy, const std::string& node,
                      const MetricValues& values) {
  for (const PolicyRule& rule : strategy.rules) {
    auto m = values.find(rule.metric_name);
    if (m == values.end()) return true;
    auto n = m->second.find(node);
    if (n == m->second.end() || !n->second.value) return true;
  }
  return false;
}

}  // namespace

NodeLabels BorrowLabels(const std::map<std::string, Labels>& owned) {
  NodeLabels out;
  for (const auto& [node, labels] : owned) out.emplace(node, &labels);
  return out;
}

std::vector<LabelChange> DescheduleLabelChanges(const std::vector<Policy>& policies,
                                                const NodeLabels& nodes,
                                                const MetricValues& values) {
  // TAS bug (docs/reference/tas.md, "Differences that fix TAS defects"): the label key is the bare
  // policy name, so same-named policies of two namespaces fought over it, one adding what the other
  // removed. Here they are combined: violating when any says so, recovered when all agree the node
  // complies.
  std::map<std::string, std::vector<const Policy*>> by_name;
  for (const Policy& p : policies) {
    if (p.strategies.count(config::kDeschedule) > 0) by_name[p.name].push_back(&p);
  }
  std::vector<LabelChange> changes;
  for (const auto& [node, labels] : nodes) {
    for (const auto& [name, group] : by_name) {
      bool violating = false;
      bool unknown = false;
      std::string reason;
      for (const Policy* p : group) {
        NodeVerdict v = EvaluateStrategy(p->name, config::kDeschedule,
                                         p->strategies.at(config::kDeschedule), node, values);
        if (v.verdict == Verdict::kViolating && !violating) {
          violating = true;
          reason = v.reason;
        }
        unknown = unknown || v.verdict == Verdict::kUnknown;
      }
      std::optional<std::string> current = LabelOf(*labels, name);
      if (violating && current != config::kViolatingValue) {
        changes.push_back({node, name, std::string(config::kViolatingValue), reason});
      } else if (!violating && !unknown && current == config::kViolatingValue) {
        changes.push_back(
            {node, name, std::nullopt, "policy " + name + " deschedule: the node complies again"});
      }
      // Unknown (a metric is missing): the label stays as it is. TAS removed it, as if the
      // node had recovered.
    }
  }
  SortChanges(changes);
  return changes;
}

std::vector<LabelChange> DescheduleCleanup(const std::string& policy_name,
                                           const NodeLabels& nodes) {
  std::vector<LabelChange> changes;
  for (const auto& [node, labels] : nodes) {
    if (LabelOf(*labels, policy_name) == config::kViolatingValue) {
      changes.push_back({node, policy_name, std::nullopt,
                         "no deschedule policy named " + policy_name + " is left"});
    }
  }
  SortChanges(changes);
  return changes;
}

std::map<std::string, std::map<std::string, std::string>> LabelsForNodes(
    const Policy& policy, const std::vector<std::string>& nodes, const MetricValues& values) {
  std::map<std::string, std::map<std::string, std::string>> out;
  auto it = policy.strategies.find(config::kLabeling);
  if (it == policy.strategies.end()) return out;
  const config::PolicyStrategy& strategy = it->second;
  bool all_of = strategy.logical_operator == "allOf";
  std::string prefix = config::kLabelingPrefix + policy.name + "/";
  for (const std::string& node : nodes) {
    std::vector<std::pair<const PolicyRule*, double>> holding;
    for (const PolicyRule& rule : strategy.rules) {
      auto m = values.find(rule.metric_name);
      if (m == values.end()) continue;
      auto n = m->second.find(node);
      if (n == m->second.end() || !n->second.value) continue;
      if (RuleHolds(rule, *n->second.value)) holding.emplace_back(&rule, *n->second.value);
    }
    if (holding.empty() || (all_of && holding.size() != strategy.rules.size())) continue;
    // key -> (value, metric value, operator) of the rule that wins the key so far.
    std::map<std::string, std::tuple<std::string, double, std::string>> winners;
    for (const auto& [rule, metric] : holding) {
      for (const std::string& label : rule->labels) {
        std::size_t eq = label.find('=');
        std::string key = label.substr(0, eq);
        std::string value = eq == std::string::npos ? "" : label.substr(eq + 1);
        auto [w, inserted] = winners.emplace(key, std::make_tuple(value, metric, rule->op));
        if (inserted) continue;
        // Same key from several rules (one operator, ValidatePolicy ensures): as TAS,
        // GreaterThan keeps the highest metric, LessThan the lowest, Equals the first.
        double best = std::get<1>(w->second);
        bool better = (rule->op == "GreaterThan" && metric > best) ||
                      (rule->op == "LessThan" && metric < best);
        if (better) w->second = std::make_tuple(value, metric, rule->op);
      }
    }
    for (const auto& [key, winner] : winners) out[node][prefix + key] = std::get<0>(winner);
  }
  return out;
}

std::vector<LabelChange> LabelingChanges(const Policy& policy, const NodeLabels& nodes,
                                         const MetricValues& values) {
  std::vector<LabelChange> changes;
  auto it = policy.strategies.find(config::kLabeling);
  if (it == policy.strategies.end()) return changes;
  std::vector<std::string> names;
  for (const auto& [node, labels] : nodes) names.push_back(node);
  auto desired = LabelsForNodes(policy, names, values);
  std::string prefix = config::kLabelingPrefix + policy.name + "/";
  std::string reason = "policy " + policy.name + " labeling";
  for (const auto& [node, labels] : nodes) {
    const auto& want = desired[node];
    for (const auto& [key, value] : want) {
      if (LabelOf(*labels, key) != value) changes.push_back({node, key, value, reason});
    }
    // With a metric missing the node's state is not known: keep what it has.
    if (AnyMetricMissing(it->second, node, values)) continue;
    for (const auto& [key, value] : *labels) {
      if (key.rfind(prefix, 0) == 0 && want.count(key) == 0) {
        changes.push_back({node, key, std::nullopt, reason + ": no rule produces it now"});
      }
    }
  }
  SortChanges(changes);
  return changes;
}

}  // namespace powerctl::scoring
