#include "core/manifests/components.h"

#include "core/common/edit_distance.h"

#include <fmt/format.h>

#include <algorithm>

namespace powerctl::manifests {
namespace {

constexpr Component kOrder[] = {Component::kNamespace, Component::kRbac,  Component::kSecrets,
                                Component::kPolicies,  Component::kModel, Component::kExtender,
                                Component::kScheduler, Component::kLb};

}  // namespace

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
  }
  return "unknown";
}

std::vector<std::string_view> ComponentNames() {
  std::vector<std::string_view> names;
  for (Component c : kOrder) names.push_back(ComponentName(c));
  return names;
}

Result<std::vector<Component>> ResolveComponents(const std::vector<std::string>& names,
                                                 const config::PowerctlConfig& config) {
  std::vector<Component> wanted;
  std::vector<std::string> effective = names.empty() ? std::vector<std::string>{"all"} : names;
  for (const std::string& name : effective) {
    if (name == "all") {
      for (Component c : kOrder) {
        if (c == Component::kModel && !config::PredictorNeedsModelServer(config)) continue;
        // The lb-agent programs every node's nftables: the admin asks for it by name.
        if (c == Component::kLb) continue;
        // Without TLS there is no key material to hold.
        if (c == Component::kSecrets && config.extender.tls_mode == "insecure") continue;
        wanted.push_back(c);
      }
      continue;
    }
    auto it = std::find_if(std::begin(kOrder), std::end(kOrder),
                           [&](Component c) { return ComponentName(c) == name; });
    if (it == std::end(kOrder)) {
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
  for (Component c : kOrder) {
    if (std::find(wanted.begin(), wanted.end(), c) != wanted.end()) ordered.push_back(c);
  }
  return ordered;
}

}  // namespace powerctl::manifests
