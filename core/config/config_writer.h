#pragma once
// Writes a PowerctlConfig back as powerctl.yaml: commented for `powerctl init`,
// plain for the extender's ConfigMap.

#include "core/config/config.h"

#include <string>

namespace powerctl::config {

enum class ConfigStyle { kCommented, kPlain };

std::string WriteConfigYaml(const PowerctlConfig& config, ConfigStyle style);

}  // namespace powerctl::config
