#pragma once
// The manifest components `generate`, `apply` and `delete` work on, in dependency order.

#include "core/common/result.h"
#include "core/config/config.h"

#include <string>
#include <string_view>
#include <vector>

namespace powerctl::manifests {

// kLb (the lb-agent DaemonSet, its RBAC and ConfigMap) and kConsolidate (the ServiceAccount and
// ClusterRole `consolidate` runs with) are opt-in: only when named, never in `all`.
enum class Component {
  kNamespace,
  kRbac,
  kSecrets,
  kPolicies,
  kModel,
  kExtender,
  kScheduler,
  kLb,
  kConsolidate
};

// Every component, in dependency order.
const std::vector<Component>& AllComponents();
// Applied and generated only when named: never part of `all`.
bool IsOptIn(Component c);

std::string_view ComponentName(Component c);
std::vector<std::string_view> ComponentNames();  // without "all"

// Expands names ("all" included) into components in dependency order, without
// duplicates. `all` includes `model` only when the predictor needs TensorFlow Serving, and
// never the opt-in ones: balancing traffic and switching nodes off are decisions of their own.
Result<std::vector<Component>> ResolveComponents(const std::vector<std::string>& names,
                                                 const config::PowerctlConfig& config);

}  // namespace powerctl::manifests
