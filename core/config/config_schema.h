#pragma once
// The table of powerctl.yaml keys. Parsing (file, environment, --set), validation
// messages, `powerctl init` and docs/configuration.md (`powerctl docs config`) all come from
// this table.

#include "core/common/result.h"
#include "core/config/config.h"

#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace powerctl::config {

inline constexpr std::string_view kConfigApiVersion = "powerctl.io/v1alpha1";
inline constexpr std::string_view kConfigKind = "PowerctlConfig";

using FieldRef = std::variant<std::string*, int*, bool*, double*, std::vector<std::string>*>;

// A check on string values, and what it accepts in words for the configuration reference.
struct ValueCheck {
  std::string (*fn)(const std::string&) = nullptr;  // "" when valid, else what is wrong
  std::string_view accepts;                         // "a duration such as 30s, 5m or 1h30m"
};

// One key of powerctl.yaml. The table (config_schema.cpp) names each member it sets.
struct FieldSpec {
  std::string_view path;  // "extender.port"
  std::string_view help;  // one line, written as a comment by `powerctl init`
  FieldRef (*ref)(PowerctlConfig&);
  std::vector<std::string_view> choices;  // non-empty: the value must be one of these
  double min = 0;                         // numeric range (when min < max)
  double max = 0;
  ValueCheck check;     // extra check on string values
  bool prompt = false;  // asked by the interactive `powerctl init`
  // A follow-up question: with `prompt`, asked only when this holds for the answers so far
  // (the Prometheus URL once prometheus is chosen). nullptr: always asked.
  bool (*ask_if)(const PowerctlConfig&) = nullptr;
  // Still read, never written: `powerctl init` and the extender's ConfigMap leave it out.
  bool deprecated = false;
};

const std::vector<FieldSpec>& ConfigFields();
const FieldSpec* FindConfigField(std::string_view path);

// "extender.opsPort" -> "POWERCTL_EXTENDER_OPS_PORT".
std::string EnvVarName(std::string_view path);

// Sets a field from text (environment, --set, a prompt answer or a YAML scalar).
// Lists are comma-separated. Returns kInvalidInput with "<path>: <what is wrong>".
Status SetFieldFromText(PowerctlConfig& config, const FieldSpec& field, std::string_view text);
Status SetFieldFromList(PowerctlConfig& config, const FieldSpec& field,
                        const std::vector<std::string>& items);

// true/false as YAML 1.1 and Kubernetes' own YAML read them: also yes/no, y/n and on/off, in
// any case. nullopt for anything else.
std::optional<bool> ParseBoolWord(std::string_view text);

// The current value as YAML-ready text (used by init and for display).
std::string FieldValueText(PowerctlConfig& config, const FieldSpec& field);

// The closest known key, for "did you mean" hints ("" when nothing is close).
std::string SuggestField(std::string_view unknown_path);

}  // namespace powerctl::config
