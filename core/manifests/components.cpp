#include "core/manifests/components.h"

#include "core/common/edit_distance.h"

#include <fmt/format.h>

#include <algorithm>

namespace powerctl::manifests {
const std::vector<Component>& AllComponents() {
  static const std::vector<Component> all = {
      Component::kNamespace, Component::kRbac,  Component::kSecrets,
      Component::kPolicies,  Component::kModel, Component::kExtender,
      Component::kScheduler, Component::kLb,    Component::kConsolidate};
  return all;
}

bool IsOptIn(Component c) {
  return c == Component::kLb || c == Component::kConsolidate;
}

std::string_view ComponentName(Component c) {
  switch (c) {
    case Component::kNamespace:
      return "namespace";
    case Component::kRbac:
      return "rbac";
    case Component::kSecrets:
      return "secrets";
    case Component::kPolicies:
      return "policies";
    case Component::kModel:
      return "model";
    case Component::kExtender:
      return "extender";
    case Component::kScheduler:
      return "scheduler";
    case Component::kLb:
      return "lb";
    case Component::kConsolidate:
      return "consolidate";
  }
  return "unknown";
}

std::vector<std::string_view> ComponentNames() {
  std::vector<std::string_view> names;
  for (Component c : AllComponents()) names.push_back(ComponentName(c));
  return names;
}

Result<std::vector<Component>> ResolveComponents(const std::vector<std::string>& names,
                                                 const config::PowerctlConfig& config) {
  std::vector<Component> wanted;
  std::vector<std::string> effective = names.empty() ? std::vector<std::string>{"all"} : names;
  for (const std::string& name : effective) {
    if (name == "all") {
      for (Component c : AllComponents()) {
        if (c == Component::kModel && !config::PredictorNeedsModelServer(config)) continue;
        // The lb-agent programs every node's nftables, consolidate's account may evict any
        // pod: the admin asks for them by name.
        if (IsOptIn(c)) continue;
        // Without TLS there is no key material to hold.
        if (c == Component::kSecrets && config.extender.tls_mode == "insecure") continue;
        wanted.push_back(c);
      }
      continue;
    }
    const std::vector<Component>& all = AllComponents();
    auto it =
        std::find_if(all.begin(), all.end(), [&](Component c) { return ComponentName(c) == name; });
    if (it == all.end()) {
      std::vector<std::string_view> known = ComponentNames();
      known.insert(known.begin(), "all");
      const std::string closest = ClosestMatch(name, known, 3);
      const std::string hint = closest.empty() ? "" : fmt::format("did you mean \"{}\"? ", closest);
      return MakeError(ErrorCode::kInvalidInput,
                       fmt::format("unknown component \"{}\" ({}expected {})", name, hint,
                                   fmt::join(known, ", ")));
    }
    wanted.push_back(*it);
  }
  std::vector<Component> ordered;
  for (Component c : AllComponents()) {
    if (std::find(wanted.begin(), wanted.end(), c) != wanted.end()) ordered.push_back(c);
  }
  return ordered;
}

}  // namespace powerctl::manifests
