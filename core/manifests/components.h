#pragma once
// The manifest components `generate`, `apply` and `delete` work on, in dependency order.

#include "core/common/result.h"
#include "core/config/config.h"

#include <string>
#include <string_view>
#include <vector>

namespace powerctl::manifests {

// kLb (the lb-agent DaemonSet, its RBAC and ConfigMap) is opt-in: only when named, never in `all`.
enum class Component { kNamespace, kRbac, kSecrets, kPolicies, kModel, kExtender, kScheduler, kLb };

std::string_view ComponentName(Component c);
std::vector<std::string_view> ComponentNames();  // without "all"

// Expands names ("all" included) into components in dependency order, without
// duplicates. `all` includes `model` only when the predictor needs TensorFlow Serving, and
// never `lb`: balancing traffic is a separate decision from scheduling.
Result<std::vector<Component>> ResolveComponents(const std::vector<std::string>& names,
                                                 const config::PowerctlConfig& config);

}  // namespace powerctl::manifests
