#pragma once
// Writes a PowerctlConfig back as powerctl.yaml: commented for `powerctl init`,
// plain for the extender's ConfigMap.

#include "core/manifests/config.h"

#include <string>

namespace powerctl::manifests {

enum class ConfigStyle { kCommented, kPlain };

std::string WriteConfigYaml(const PowerctlConfig& config, ConfigStyle style);

}  // namespace powerctl::manifests
