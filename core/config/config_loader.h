#pragma once
// Builds the effective PowerctlConfig from its layers:
// built-in defaults < config file < POWERCTL_* environment < --set KEY=VALUE flags.

#include "core/common/result.h"
#include "core/config/config.h"

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace powerctl::config {

struct ConfigSources {
  std::optional<std::filesystem::path> file;       // -c/--config; none = defaults only
  std::map<std::string, std::string> environment;  // the process environment (POWERCTL_* used)
  std::vector<std::string> set_flags;              // "extender.weight=10"
};

Result<PowerctlConfig> LoadConfig(const ConfigSources& sources);

// Parses config text; `source_name` prefixes errors ("powerctl.yaml:12: ...").
Status ApplyConfigText(PowerctlConfig& config, std::string_view text,
                       const std::string& source_name);

// Checks that need several keys at once (after all layers are applied).
Status ValidateConfig(const PowerctlConfig& config);

}  // namespace powerctl::config
