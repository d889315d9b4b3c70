#include "core/config/tas_policy.h"

#include "core/common/edit_distance.h"
#include "core/common/names.h"

#include <nlohmann/json.hpp>

#include <array>
#include <string>

namespace powerctl::config {
namespace {

using json = nlohmann::json;

constexpr std::array<const char*, 4> kStrategies = {kDontSchedule, kScheduleOnMetric, kDeschedule,
                                                    kLabeling};
constexpr std::array<const char*, 3> kOperators = {"Equals", "LessThan", "GreaterThan"};

template <std::size_t N>
std::string OneOf(const std::array<const char*, N>& choices, const std::string& got) {
  std::string list;
  std::string hint;
  for (const char* c : choices) {
    list += list.empty() ? c : std::string(", ") + c;
    if (hint.empty() && EditDistance(got, c) <= 2) hint = c;
  }
  std::string message = "must be one of " + list + " (got \"" + got + "\")";
  if (!hint.empty()) message += "; did you mean \"" + hint + "\"?";
  return message;
}

Error Invalid(const std::string& where, const std::string& field, const std::string& what) {
  return MakeError(ErrorCode::kInvalidInput, where + ": " + field + ": " + what);
}

Status ValidateRule(const PolicyRule& rule, const std::string& where, const std::string& field,
                    bool labeling) {
  if (!IsMetricName(rule.metric_name)) {
    return Invalid(where, field + ".metricname",
                   rule.metric_name.empty()
                       ? "required"
                       : "must match ^[a-zA-Z0-9_-]+$ (got \"" + rule.metric_name + "\")");
  }
  bool known_op = false;
  for (const char* op : kOperators) known_op = known_op || rule.op == op;
  if (!known_op) return Invalid(where, field + ".operator", OneOf(kOperators, rule.op));
  if (!labeling) return OkStatus();
  if (rule.labels.empty()) return Invalid(where, field + ".labels", "a labeling rule needs labels");
  for (std::size_t i = 0; i < rule.labels.size(); ++i) {
    const std::string& label = rule.labels[i];
    std::string at = field + ".labels[" + std::to_string(i) + "]";
    std::size_t eq = label.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Invalid(where, at, "must be key=value (got \"" + label + "\")");
    }
    if (std::string bad = ValidateLabelValue(label.substr(0, eq)); !bad.empty()) {
      return Invalid(where, at, "key \"" + label.substr(0, eq) + "\": " + bad);
    }
    if (std::string bad = ValidateLabelValue(label.substr(eq + 1)); !bad.empty()) {
      return Invalid(where, at, "value \"" + label.substr(eq + 1) + "\": " + bad);
    }
  }
  return OkStatus();
}

Result<PolicyRule> RuleFromJson(const json& item, const std::string& where,
                                const std::string& field) {
  if (!item.is_object()) return Invalid(where, field, "must be an object");
  PolicyRule rule;
  for (const auto& [key, value] : item.items()) {
    if (key == "metricname" || key == "operator") {
      if (!value.is_string()) return Invalid(where, field + "." + key, "must be a string");
      (key == "metricname" ? rule.metric_name : rule.op) = value.get<std::string>();
    } else if (key == "target") {
      // The CRD says integer/int64: fractional thresholds are not expressible in TAS.
      if (!value.is_number_integer()) {
        return Invalid(where, field + ".target", "must be an integer (got " + value.dump() + ")");
      }
      rule.target = value.get<std::int64_t>();
      rule.has_target = true;
    } else if (key == "labels") {
      if (!value.is_array()) return Invalid(where, field + ".labels", "must be a list of strings");
      for (const json& label : value) {
        if (!label.is_string()) {
          return Invalid(where, field + ".labels", "must be a list of strings");
        }
        rule.labels.push_back(label.get<std::string>());
      }
    } else {
      return Invalid(where, field + "." + key,
                     "unknown field (rules have metricname, operator, "
                     "target, labels)");
    }
  }
  if (rule.metric_name.empty()) return Invalid(where, field + ".metricname", "required");
  if (rule.op.empty()) return Invalid(where, field + ".operator", "required");
  return rule;
}

}  // namespace

Status ValidatePolicy(const Policy& policy, const std::string& where) {
  if (std::string bad = ValidateDnsSubdomain(policy.name); !bad.empty()) {
    return Invalid(where, "metadata.name", bad);
  }
  if (policy.strategies.empty()) return Invalid(where, "spec.strategies", "no strategies");
  for (const auto& [name, strategy] : policy.strategies) {
    std::string field = "spec.strategies." + name;
    bool known = false;
    for (const char* s : kStrategies) known = known || name == s;
    // TAS accepted any key and failed later in castStrategy.
    if (!known) return Invalid(where, "spec.strategies", OneOf(kStrategies, name));
    const std::string& op = strategy.logical_operator;
    if (!op.empty() && op != "allOf" && op != "anyOf") {
      return Invalid(where, field + ".logicalOperator",
                     "must be allOf or anyOf (got \"" + op + "\")");
    }
    // TAS bug: with allOf and no rules, "violations == len(rules)" held for every node.
    if (strategy.rules.empty()) return Invalid(where, field + ".rules", "at least one rule");
    std::map<std::string, std::string> label_ops;  // labeling: label key -> operator
    for (std::size_t i = 0; i < strategy.rules.size(); ++i) {
      const PolicyRule& rule = strategy.rules[i];
      std::string at = field + ".rules[" + std::to_string(i) + "]";
      POWERCTL_CHECK_OK(ValidateRule(rule, where, at, name == kLabeling));
      if (name != kLabeling) continue;
      for (const std::string& label : rule.labels) {
        std::string key = label.substr(0, label.find('='));
        auto [it, inserted] = label_ops.emplace(key, rule.op);
        // TAS logged "Unsupported config: With equivalent labels, the operator in related
        // rules must also be equivalent" on every evaluation; here the object is refused.
        if (!inserted && it->second != rule.op) {
          return Invalid(where, at + ".labels",
                         "label key \"" + key + "\" is set by rules with different operators (" +
                             it->second + ", " + rule.op + ")");
        }
      }
    }
  }
  return OkStatus();
}

Result<Policy> PolicyFromJson(const json& object) {
  if (!object.is_object()) {
    return MakeError(ErrorCode::kInvalidInput, "TASPolicy: not a JSON object");
  }
  Policy policy;
  const json& metadata = object.value("metadata", json::object());
  if (metadata.is_object()) {
    policy.name =
        metadata.value("name", json()).is_string() ? metadata["name"].get<std::string>() : "";
    if (metadata.contains("namespace") && metadata["namespace"].is_string()) {
      policy.namespace_ = metadata["namespace"].get<std::string>();
    }
  }
  std::string where = "TASPolicy " + (policy.namespace_.empty() ? "" : policy.namespace_ + "/") +
                      (policy.name.empty() ? "(unnamed)" : policy.name);
  std::string api =
      object.value("apiVersion", json()).is_string() ? object["apiVersion"].get<std::string>() : "";
  if (!api.empty() && api != "telemetry.intel.com/v1alpha1") {
    return Invalid(where, "apiVersion",
                   "must be telemetry.intel.com/v1alpha1 (got \"" + api + "\")");
  }
  const json* spec = object.contains("spec") ? &object["spec"] : nullptr;
  if (spec == nullptr || !spec->is_object()) return Invalid(where, "spec", "required");
  if (!spec->contains("strategies")) return Invalid(where, "spec.strategies", "required");
  const json& strategies = (*spec)["strategies"];
  if (!strategies.is_object()) return Invalid(where, "spec.strategies", "must be an object");
  for (const auto& [name, body] : strategies.items()) {
    std::string field = "spec.strategies." + name;
    if (!body.is_object()) return Invalid(where, field, "must be an object");
    PolicyStrategy strategy;
    if (body.contains("logicalOperator")) {
      if (!body["logicalOperator"].is_string()) {
        return Invalid(where, field + ".logicalOperator", "must be a string");
      }
      strategy.logical_operator = body["logicalOperator"].get<std::string>();
    }
    if (!body.contains("rules")) return Invalid(where, field + ".rules", "required");
    if (!body["rules"].is_array()) return Invalid(where, field + ".rules", "must be a list");
    for (std::size_t i = 0; i < body["rules"].size(); ++i) {
      POWERCTL_TRY(
          rule, RuleFromJson(body["rules"][i], where, field + ".rules[" + std::to_string(i) + "]"));
      strategy.rules.push_back(std::move(rule));
    }
    policy.strategies[name] = std::move(strategy);
  }
  POWERCTL_CHECK_OK(ValidatePolicy(policy, where));
  return policy;
}

std::set<std::string> PolicyMetrics(const Policy& policy) {
  std::set<std::string> metrics;
  for (const auto& [name, strategy] : policy.strategies) {
    for (const PolicyRule& rule : strategy.rules) metrics.insert(rule.metric_name);
  }
  return metrics;
}

}  // namespace powerctl::config
