#include "core/setup/access.h"

#include <set>

#include <fmt/format.h>

namespace powerctl::setup {

Result<std::vector<std::string>> MissingPermissions(kube::Client& client, const std::vector<AccessCheck>& checks) {
  std::vector<std::string> missing;
  std::set<std::string> seen;
  for (const AccessCheck& c : checks) {
    std::string text = fmt::format("{} {}{}{}", c.verb, c.resource, c.group.empty() ? "" : "." + c.group,
                                   c.namespace_.empty() ? "" : " in namespace " + c.namespace_);
    if (!seen.insert(text).second) continue;
    nlohmann::json attributes = {{"verb", c.verb}, {"group", c.group}, {"resource", c.resource}};
    if (!c.namespace_.empty()) attributes["namespace"] = c.namespace_;
    if (!c.name.empty()) attributes["name"] = c.name;
    nlohmann::json review = {{"apiVersion", "authorization.k8s.io/v1"},
                             {"kind", "SelfSubjectAccessReview"},
                             {"spec", {{"resourceAttributes", attributes}}}};
    POWERCTL_TRY(answer, client.Create("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", review));
    if (!answer.value("status", nlohmann::json::object()).value("allowed", false)) missing.push_back(text);
  }
  return missing;
}

Error PermissionError(const std::string& what, const std::vector<std::string>& missing) {
  return MakeError(ErrorCode::kForbidden,
                   fmt::format("{}: nothing was changed because your credentials lack {} permission{}: {}", what,
                               missing.size(), missing.size() == 1 ? "" : "s", fmt::join(missing, "; ")));
}

}  // namespace powerctl::setup
