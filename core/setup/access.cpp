#include "core/setup/access.h"

#include <fmt/format.h>

#include <map>
#include <set>
#include <tuple>

namespace powerctl::setup {
namespace {

// `verb resource[.group] [in namespace NS]`: how a missing permission is reported.
std::string Describe(const AccessCheck& c) {
  return fmt::format("{} {}{}{}", c.verb, c.resource, c.group.empty() ? "" : "." + c.group,
                     c.namespace_.empty() ? "" : " in namespace " + c.namespace_);
}

}  // namespace

Result<std::vector<std::string>> MissingPermissions(kube::Client& client,
                                                    const std::vector<AccessCheck>& checks) {
  // Checks are asked once per object: RBAC rules may be limited by resourceNames, so being
  // allowed to delete one Deployment says nothing about another. What is missing is reported
  // once per verb/resource/namespace, naming the objects when the checks named them.
  std::vector<std::string> order;
  std::map<std::string, std::vector<std::string>> denied_names;  // by Describe()
  std::set<std::tuple<std::string, std::string, std::string, std::string, std::string>> seen;
  for (const AccessCheck& c : checks) {
    if (!seen.insert({c.verb, c.group, c.resource, c.namespace_, c.name}).second) continue;
    nlohmann::json attributes = {{"verb", c.verb}, {"group", c.group}, {"resource", c.resource}};
    if (!c.namespace_.empty()) attributes["namespace"] = c.namespace_;
    if (!c.name.empty()) attributes["name"] = c.name;
    nlohmann::json review = {{"apiVersion", "authorization.k8s.io/v1"},
                             {"kind", "SelfSubjectAccessReview"},
                             {"spec", {{"resourceAttributes", attributes}}}};
    POWERCTL_TRY(answer,
                 client.Create("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", review));
    if (answer.value("status", nlohmann::json::object()).value("allowed", false)) continue;
    std::string text = Describe(c);
    auto [it, added] = denied_names.try_emplace(text);
    if (added) order.push_back(text);
    if (!c.name.empty()) it->second.push_back(c.name);
  }
  std::vector<std::string> missing;
  for (const std::string& text : order) {
    const std::vector<std::string>& names = denied_names[text];
    missing.push_back(names.empty() ? text : fmt::format("{} ({})", text, fmt::join(names, ", ")));
  }
  return missing;
}

Error PermissionError(const std::string& what, const std::vector<std::string>& missing) {
  return MakeError(
      ErrorCode::kForbidden,
      fmt::format("{}: nothing was changed because your credentials lack {} permission{}: {}", what,
                  missing.size(), missing.size() == 1 ? "" : "s", fmt::join(missing, "; ")));
}

}  // namespace powerctl::setup
