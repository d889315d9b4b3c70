#include "core/config/config_loader.h"

#include "core/common/names.h"
#include "core/common/yaml.h"
#include "core/config/config_schema.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <fstream>
#include <set>
#include <sstream>

namespace powerctl::config {
namespace {

constexpr std::size_t kMaxConfigBytes = 1 << 20;
constexpr int kMaxConfigDepth = 16;

class ConfigParser {
 public:
  ConfigParser(PowerctlConfig& config, const std::string& source)
      : config_(config), source_(source) {}

  Status ParseRoot(const YAML::Node& root) {
    if (root.IsNull()) return OkStatus();
    if (!root.IsMap()) return Fail(root, "the top level must be a mapping of keys");
    for (const auto& kv : root) {
      std::string key = kv.first.as<std::string>();
      if (key == "apiVersion") {
        if (!kv.second.IsScalar() || kv.second.Scalar() != kConfigApiVersion) {
          return Fail(kv.second, fmt::format("apiVersion: must be {}", kConfigApiVersion));
        }
      } else if (key == "kind") {
        if (!kv.second.IsScalar() || kv.second.Scalar() != kConfigKind) {
          return Fail(kv.second, fmt::format("kind: must be {}", kConfigKind));
        }
      } else if (key == "policies") {
        POWERCTL_CHECK_OK(ParsePolicies(kv.second));
      } else {
        POWERCTL_CHECK_OK(ParseNode(key, kv.first, kv.second, 1));
      }
    }
    return OkStatus();
  }

 private:
  Error Fail(const YAML::Node& at, const std::string& message) {
    return MakeError(ErrorCode::kInvalidInput,
                     fmt::format("{}:{}: {}", source_, at.Mark().line + 1, message));
  }

  Status ParseNode(const std::string& path, const YAML::Node& key_node, const YAML::Node& value,
                   int depth) {
    if (depth > kMaxConfigDepth) return Fail(key_node, "nesting too deep");
    const FieldSpec* field = FindConfigField(path);
    if (field == nullptr) {
      if (value.IsMap() && IsPrefixOfField(path)) {
        for (const auto& kv : value) {
          if (!kv.first.IsScalar()) return Fail(kv.first, "keys must be plain strings");
          POWERCTL_CHECK_OK(
              ParseNode(path + "." + kv.first.Scalar(), kv.first, kv.second, depth + 1));
        }
        return OkStatus();
      }
      std::string hint = SuggestField(path);
      return Fail(key_node,
                  fmt::format("unknown key \"{}\"{}", path,
                              hint.empty() ? "" : fmt::format(" (did you mean \"{}\"?)", hint)));
    }
    Status status = OkStatus();
    if (value.IsScalar()) {
      status = SetFieldFromText(config_, *field, value.Scalar());
    } else if (value.IsSequence()) {
      std::vector<std::string> items;
      for (const auto& item : value) {
        if (!item.IsScalar())
          return Fail(item, fmt::format("{}: list items must be strings", path));
        items.push_back(item.Scalar());
      }
      status = SetFieldFromList(config_, *field, items);
    } else if (value.IsNull()) {
      status = MakeError(ErrorCode::kInvalidInput, fmt::format("{}: a value is required", path));
    } else {
      status = MakeError(ErrorCode::kInvalidInput,
                         fmt::format("{}: expected a value, not a mapping", path));
    }
    if (!status.ok()) return Fail(value.IsNull() ? key_node : value, status.error().message);
    return OkStatus();
  }

  static bool IsPrefixOfField(const std::string& path) {
    std::string prefix = path + ".";
    for (const FieldSpec& f : ConfigFields()) {
      if (f.path.substr(0, prefix.size()) == prefix) return true;
    }
    return false;
  }

  Status ParsePolicies(const YAML::Node& list) {
    if (list.IsNull()) return OkStatus();
    if (!list.IsSequence()) return Fail(list, "policies: expected a list of policies");
    std::set<std::string> names;
    for (const auto& item : list) {
      Policy policy;
      POWERCTL_CHECK_OK(ParsePolicy(item, policy));
      if (!names.insert(policy.name).second) {
        return Fail(item, fmt::format("policies: duplicate policy name \"{}\"", policy.name));
      }
      config_.policies.push_back(std::move(policy));
    }
    return OkStatus();
  }

  Status ParsePolicy(const YAML::Node& node, Policy& policy) {
    if (!node.IsMap())
      return Fail(node, "policies: each policy must be a mapping with name and strategies");
    for (const auto& kv : node) {
      std::string key = kv.first.as<std::string>();
      if (key == "name") {
        policy.name = kv.second.IsScalar() ? kv.second.Scalar() : "";
        if (std::string why = ValidateDnsSubdomain(policy.name); !why.empty()) {
          return Fail(kv.second, "policies.name: " + why);
        }
      } else if (key == "namespace") {
        policy.namespace_ = kv.second.IsScalar() ? kv.second.Scalar() : "";
        if (std::string why = ValidateDnsLabel(policy.namespace_); !why.empty()) {
          return Fail(kv.second, "policies.namespace: " + why);
        }
      } else if (key == "strategies") {
        POWERCTL_CHECK_OK(ParseStrategies(kv.second, policy));
      } else {
        return Fail(
            kv.first,
            fmt::format("unknown key \"policies.{}\" (expected name, namespace, strategies)", key));
      }
    }
    if (policy.name.empty()) return Fail(node, "policies: a policy needs a name");
    if (policy.strategies.empty())
      return Fail(node, fmt::format("policies.{}: needs at least one strategy", policy.name));
    return OkStatus();
  }

  Status ParseStrategies(const YAML::Node& node, Policy& policy) {
    static const std::set<std::string> kStrategies = {"dontschedule", "scheduleonmetric",
                                                      "deschedule", "labeling"};
    if (!node.IsMap())
      return Fail(node, "policies.strategies: expected a mapping of strategy names");
    for (const auto& kv : node) {
      std::string name = kv.first.as<std::string>();
      if (kStrategies.count(name) == 0) {
        return Fail(
            kv.first,
            fmt::format("policies.strategies: unknown strategy \"{}\" (expected dontschedule, "
                        "scheduleonmetric, deschedule or labeling)",
                        name));
      }
      PolicyStrategy strategy;
      if (!kv.second.IsMap())
        return Fail(kv.second, fmt::format("policies.strategies.{}: expected a mapping", name));
      for (const auto& field : kv.second) {
        std::string key = field.first.as<std::string>();
        if (key == "logicalOperator") {
          strategy.logical_operator = field.second.IsScalar() ? field.second.Scalar() : "";
          if (strategy.logical_operator != "allOf" && strategy.logical_operator != "anyOf") {
            return Fail(field.second, "logicalOperator: must be allOf or anyOf");
          }
        } else if (key == "rules") {
          if (!field.second.IsSequence()) return Fail(field.second, "rules: expected a list");
          for (const auto& rule_node : field.second) {
            PolicyRule rule;
            POWERCTL_CHECK_OK(ParseRule(rule_node, name, rule));
            strategy.rules.push_back(std::move(rule));
          }
        } else {
          return Fail(
              field.first,
              fmt::format("unknown key \"{}\" in strategy {} (expected logicalOperator, rules)",
                          key, name));
        }
      }
      if (strategy.rules.empty())
        return Fail(kv.second, fmt::format("policies.strategies.{}: needs rules", name));
      policy.strategies[name] = std::move(strategy);
    }
    return OkStatus();
  }

  Status ParseRule(const YAML::Node& node, const std::string& strategy, PolicyRule& rule) {
    if (!node.IsMap()) return Fail(node, "rules: each rule must be a mapping");
    for (const auto& kv : node) {
      std::string key = kv.first.as<std::string>();
      std::string value = kv.second.IsScalar() ? kv.second.Scalar() : "";
      if (key == "metricname") {
        if (!IsMetricName(value)) {
          return Fail(kv.second, "metricname: must match ^[a-zA-Z0-9_-]+$");
        }
        rule.metric_name = value;
      } else if (key == "operator") {
        if (value != "Equals" && value != "LessThan" && value != "GreaterThan") {
          return Fail(kv.second, "operator: must be Equals, LessThan or GreaterThan");
        }
        rule.op = value;
      } else if (key == "target") {
        try {
          std::size_t used = 0;
          rule.target = std::stoll(value, &used);
          if (used != value.size()) throw std::invalid_argument("trailing");
        } catch (const std::exception&) {
          return Fail(kv.second, "target: must be an integer (TASPolicy targets are int64)");
        }
        rule.has_target = true;
      } else if (key == "labels") {
        if (!kv.second.IsSequence()) return Fail(kv.second, "labels: expected a list of key=value");
        for (const auto& label : kv.second) {
          std::string text = label.IsScalar() ? label.Scalar() : "";
          if (text.find('=') == std::string::npos)
            return Fail(label, "labels: each entry must be key=value");
          rule.labels.push_back(text);
        }
      } else {
        return Fail(
            kv.first,
            fmt::format(
                "unknown key \"{}\" in rule (expected metricname, operator, target, labels)", key));
      }
    }
    if (rule.metric_name.empty() || rule.op.empty())
      return Fail(node, "rules: metricname and operator are required");
    if (strategy != "scheduleonmetric" && !rule.has_target) {
      return Fail(node, fmt::format("rules: {} rules need a target", strategy));
    }
    if (strategy == "labeling" && rule.labels.empty())
      return Fail(node, "rules: labeling rules need labels");
    return OkStatus();
  }

  PowerctlConfig& config_;
  const std::string& source_;
};

// scheduler.powerFirst came before scheduler.resourceScoring: true meant what none means now;
// false was the default (and `powerctl init` wrote it), so it asks for nothing and the
// resourceScoring default applies. Old files and ConfigMaps keep loading.
Status ResolveDeprecatedKeys(PowerctlConfig& config) {
  std::string& power_first = config.scheduler.power_first;
  if (power_first.empty()) return OkStatus();
  const bool on = power_first == "true" || power_first == "True" || power_first == "TRUE";
  std::string& scoring = config.scheduler.resource_scoring;
  if (on) {
    if (scoring != kResourceScoringNone && scoring != SchedulerSettings{}.resource_scoring) {
      return MakeError(
          ErrorCode::kInvalidInput,
          fmt::format("scheduler.powerFirst: true and scheduler.resourceScoring: {} disagree; "
                      "powerFirst is deprecated: remove it and keep resourceScoring",
                      scoring));
    }
    scoring = kResourceScoringNone;
    config.warnings.push_back(
        "scheduler.powerFirst is deprecated: write scheduler.resourceScoring: none instead "
        "(what powerFirst: true meant, and what is used now)");
  } else {
    config.warnings.push_back(fmt::format(
        "scheduler.powerFirst is deprecated and false is ignored: scheduler.resourceScoring "
        "decides ({}); remove powerFirst",
        scoring));
  }
  power_first.clear();
  return OkStatus();
}

}  // namespace

Status ApplyConfigText(PowerctlConfig& config, std::string_view text,
                       const std::string& source_name) {
  if (text.size() > kMaxConfigBytes) {
    return MakeError(ErrorCode::kInvalidInput, fmt::format("{}: larger than 1 MiB", source_name));
  }
  // The bounded reader first: it rejects what yaml-cpp 0.7 mishandles (a leading ',' loops
  // forever, invalid UTF-8, alias bombs, deep nesting, duplicate keys) with file and line.
  POWERCTL_TRY(checked, ParseYamlDocuments(text, source_name));
  if (checked.size() > 1) {
    return MakeError(ErrorCode::kInvalidInput,
                     fmt::format("{}: expected one YAML document", source_name));
  }
  if (checked.empty()) return OkStatus();
  std::vector<YAML::Node> docs;
  try {
    docs.push_back(YAML::Load(std::string(text)));
  } catch (const YAML::Exception& e) {
    return MakeError(ErrorCode::kInvalidInput,
                     fmt::format("{}:{}: {}", source_name, e.mark.line + 1, e.msg));
  }
  ConfigParser parser(config, source_name);
  try {
    return parser.ParseRoot(docs[0]);
  } catch (const YAML::Exception& e) {
    return MakeError(ErrorCode::kInvalidInput,
                     fmt::format("{}:{}: {}", source_name, e.mark.line + 1, e.msg));
  }
}

Result<PowerctlConfig> LoadConfig(const ConfigSources& sources) {
  PowerctlConfig config;
  if (sources.file) {
    std::ifstream in(*sources.file, std::ios::binary);
    if (!in) {
      return MakeError(ErrorCode::kInvalidInput,
                       fmt::format("cannot read config file {}", sources.file->string()));
    }
    std::ostringstream text;
    text << in.rdbuf();
    POWERCTL_CHECK_OK(ApplyConfigText(config, text.str(), sources.file->string()));
  }
  for (const FieldSpec& field : ConfigFields()) {
    auto it = sources.environment.find(EnvVarName(field.path));
    if (it == sources.environment.end()) continue;
    Status s = SetFieldFromText(config, field, it->second);
    if (!s.ok()) return WithContext(s.error(), "environment " + it->first);
  }
  for (const std::string& assignment : sources.set_flags) {
    std::size_t eq = assignment.find('=');
    std::string key = assignment.substr(0, eq);
    const FieldSpec* field = eq == std::string::npos ? nullptr : FindConfigField(key);
    if (field == nullptr) {
      std::string hint = SuggestField(key);
      return MakeError(
          ErrorCode::kInvalidInput,
          fmt::format("--set {}: {}{}", assignment,
                      eq == std::string::npos ? "expected KEY=VALUE" : "unknown key",
                      hint.empty() ? "" : fmt::format(" (did you mean \"{}\"?)", hint)));
    }
    Status s = SetFieldFromText(config, *field, assignment.substr(eq + 1));
    if (!s.ok()) return WithContext(s.error(), "--set " + assignment);
  }
  POWERCTL_CHECK_OK(ResolveDeprecatedKeys(config));
  POWERCTL_CHECK_OK(ValidateConfig(config));
  return config;
}

Status ValidateConfig(const PowerctlConfig& config) {
  auto fail = [](const std::string& m) { return MakeError(ErrorCode::kInvalidInput, m); };
  if (config.extender.port == config.extender.ops_port) {
    return fail("extender.port and extender.opsPort must differ");
  }
  if (config.predictor.model.grpc_port == config.predictor.model.rest_port) {
    return fail("predictor.model.grpcPort and predictor.model.restPort must differ");
  }
  if (config.telemetry.power_source == "promql" && config.telemetry.power_query.empty()) {
    return fail("telemetry.powerQuery must be set when telemetry.powerSource is promql");
  }
  if (config.telemetry.model_error_fail < config.telemetry.model_error_warn) {
    return fail("telemetry.modelErrorFail must be at least telemetry.modelErrorWarn");
  }
  if (!config.predictor.model.image.empty() &&
      !config.predictor.model.persistent_volume_claim.empty()) {
    return fail(
        "predictor.model.image and predictor.model.persistentVolumeClaim are exclusive; set one");
  }
  return OkStatus();
}

}  // namespace powerctl::config
