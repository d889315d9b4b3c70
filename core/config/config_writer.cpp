#include "core/config/config_writer.h"

#include "core/common/yaml.h"
#include "core/config/config_schema.h"

#include <fmt/format.h>

#include <variant>

namespace powerctl::config {
namespace {

std::string ScalarText(const FieldRef& ref) {
  if (auto* s = std::get_if<std::string*>(&ref))
    return EmitYaml(nlohmann::ordered_json(**s)).substr(0);
  if (auto* i = std::get_if<int*>(&ref)) return std::to_string(**i);
  if (auto* d = std::get_if<double*>(&ref)) return fmt::format("{}", **d);
  if (auto* b = std::get_if<bool*>(&ref)) return **b ? "true" : "false";
  if (auto* l = std::get_if<std::vector<std::string>*>(&ref)) {
    std::vector<std::string> items;
    for (const std::string& item : **l) items.push_back(nlohmann::ordered_json(item).dump());
    return fmt::format("[{}]", fmt::join(items, ", "));
  }
  return "";
}

std::string StripNewline(std::string s) {
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

nlohmann::ordered_json PoliciesJson(const std::vector<Policy>& policies) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const Policy& p : policies) {
    nlohmann::ordered_json item;
    item["name"] = p.name;
    if (!p.namespace_.empty()) item["namespace"] = p.namespace_;
    nlohmann::ordered_json strategies = nlohmann::ordered_json::object();
    for (const auto& [name, strategy] : p.strategies) {
      nlohmann::ordered_json s;
      if (!strategy.logical_operator.empty()) s["logicalOperator"] = strategy.logical_operator;
      s["rules"] = nlohmann::ordered_json::array();
      for (const PolicyRule& r : strategy.rules) {
        nlohmann::ordered_json rule;
        rule["metricname"] = r.metric_name;
        rule["operator"] = r.op;
        if (r.has_target) rule["target"] = r.target;
        if (!r.labels.empty()) rule["labels"] = r.labels;
        s["rules"].push_back(rule);
      }
      strategies[name] = s;
    }
    item["strategies"] = strategies;
    list.push_back(item);
  }
  return list;
}

const char* kPolicyExample =
    R"(# policies:                      # TASPolicy-compatible; pods opt in with label telemetry-policy: NAME
# - name: cool-nodes
#   strategies:
#     dontschedule:                # filter out nodes that violate any rule
#       rules:
#       - {metricname: node_cpu_temperature_celsius, operator: GreaterThan, target: 85}
#     scheduleonmetric:            # prefer nodes by this metric (proportional scores)
#       rules:
#       - {metricname: node_cpu_temperature_celsius, operator: LessThan}
)";

}  // namespace

std::string WriteConfigYaml(const PowerctlConfig& config_in, ConfigStyle style) {
  PowerctlConfig config = config_in;  // FieldRef needs a mutable object
  bool comments = style == ConfigStyle::kCommented;
  std::string out;
  if (comments) {
    out +=
        "# powerctl configuration. Precedence: built-in defaults < this file < POWERCTL_* "
        "environment\n";
    out +=
        "# variables (e.g. POWERCTL_EXTENDER_WEIGHT) < command-line flags (--set "
        "extender.weight=10).\n";
    out +=
        "# Every key is optional; `powerctl generate` validates the file and names the line of any "
        "error.\n";
  }
  out += fmt::format("apiVersion: {}\nkind: {}\n", kConfigApiVersion, kConfigKind);
  std::vector<std::string> open;  // the mapping keys we are inside
  for (const FieldSpec& field : ConfigFields()) {
    if (field.deprecated) continue;
    std::vector<std::string> parts;
    std::size_t start = 0;
    std::string path(field.path);
    while (true) {
      std::size_t dot = path.find('.', start);
      parts.push_back(
          path.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
    std::size_t common = 0;
    while (common < open.size() && common + 1 < parts.size() && open[common] == parts[common])
      ++common;
    open.resize(common);
    for (std::size_t k = common; k + 1 < parts.size(); ++k) {
      if (k == 0 && comments) out += "\n";
      out += fmt::format("{}{}:\n", std::string(2 * k, ' '), parts[k]);
      open.push_back(parts[k]);
    }
    std::string indent(2 * (parts.size() - 1), ' ');
    if (comments) {
      if (parts.size() == 1) out += "\n";
      out += fmt::format("{}# {} (env {})\n", indent, field.help, EnvVarName(field.path));
    }
    out += fmt::format("{}{}: {}\n", indent, parts.back(),
                       StripNewline(ScalarText(field.ref(config))));
  }
  if (!config.policies.empty()) {
    nlohmann::ordered_json root;
    root["policies"] = PoliciesJson(config.policies);
    out += (comments ? "\n" : "") + EmitYaml(root);
  } else if (comments) {
    out += "\n";
    out += kPolicyExample;
  }
  return out;
}

}  // namespace powerctl::config
