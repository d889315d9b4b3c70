#include "core/setup/delete.h"

#include "core/kube/resources.h"
#include "core/manifests/components.h"
#include "core/setup/access.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace powerctl::setup {
namespace {

using json = nlohmann::json;

// Kinds each component creates, in the order they are deleted.
std::vector<std::string_view> KindsOf(manifests::Component c) {
  switch (c) {
    case manifests::Component::kScheduler:
    case manifests::Component::kExtender:
    case manifests::Component::kModel:
      return {"Deployment", "Service", "ConfigMap"};
    case manifests::Component::kPolicies:
      return {"TASPolicy", "CustomResourceDefinition"};
    case manifests::Component::kSecrets:
      return {"Secret"};
    case manifests::Component::kRbac:
      return {"RoleBinding", "Role", "ClusterRoleBinding", "ClusterRole", "ServiceAccount"};
    case manifests::Component::kNamespace:
      return {"Namespace"};
    case manifests::Component::kLb:
      return {"DaemonSet", "ConfigMap", "ClusterRoleBinding", "ClusterRole", "ServiceAccount"};
    case manifests::Component::kConsolidate:
      return {"ClusterRoleBinding", "ClusterRole", "ServiceAccount"};
  }
  return {};
}

Result<std::vector<DeletedObject>> FindObjects(
    kube::Client& client, const DeleteRequest& request,
    const std::vector<manifests::Component>& components) {
  std::set<std::string> namespaces = {request.config.namespace_, "kube-system"};
  for (const auto& p : request.config.policies) {
    if (!p.namespace_.empty()) namespaces.insert(p.namespace_);
  }
  std::vector<DeletedObject> found;
  std::set<std::string> seen;
  // Reverse dependency order: what depends on others goes first.
  for (auto it = components.rbegin(); it != components.rend(); ++it) {
    std::string component(manifests::ComponentName(*it));
    for (std::string_view kind : KindsOf(*it)) {
      const kube::ResourceType* type = kube::FindResourceType(kind);
      kube::ListOptions options;
      options.label_selector = fmt::format(
          "app.kubernetes.io/managed-by=powerctl,app.kubernetes.io/component={}", component);
      // The CRD is shared by all installs, so it carries no instance label.
      if (kind != "CustomResourceDefinition") {
        options.label_selector += ",app.kubernetes.io/instance=" + request.config.namespace_;
      }
      std::vector<std::string> scopes =
          type->namespaced ? std::vector<std::string>(namespaces.begin(), namespaces.end())
                           : std::vector<std::string>{""};
      for (const std::string& ns : scopes) {
        auto items = client.List(kube::CollectionPath(*type, ns), options);
        if (!items.ok()) {
          // A namespace or a type (the CRD) that does not exist holds nothing to delete.
          if (items.error().code == ErrorCode::kNotFound) continue;
          return items.error();
        }
        for (json& item : *items) {
          item["kind"] = std::string(kind);
          POWERCTL_TRY(path, kube::ObjectPath(item));
          if (!seen.insert(path).second) continue;
          DeletedObject d{kube::DisplayName(item),
                          path,
                          false,
                          {"delete", std::string(type->group), std::string(type->plural), ns,
                           item["metadata"].value("name", "")}};
          d.kept = kind == "CustomResourceDefinition" && !request.include_crds;
          found.push_back(std::move(d));
        }
      }
    }
  }
  return found;
}

std::vector<AccessCheck> DeleteChecks(const std::vector<DeletedObject>& objects) {
  std::vector<AccessCheck> checks;
  for (const DeletedObject& o : objects) {
    if (!o.kept) checks.push_back(o.delete_check);
  }
  return checks;
}

}  // namespace

Result<DeleteReport> Delete(kube::Client& client, const DeleteRequest& request,
                            const std::function<void(const DeletedObject&)>& on_object,
                            const Clock& clock) {
  POWERCTL_TRY(components, manifests::ResolveComponents(request.components, request.config));
  if (request.components.empty() || std::find(request.components.begin(), request.components.end(),
                                              "all") != request.components.end()) {
    // `all` deletes secrets, the model and the opt-in components too, whatever the current
    // config enables or `apply all` applies: deleting the namespace would take their
    // namespaced objects anyway, and leave their ClusterRoles and bindings behind.
    components = manifests::AllComponents();
  }
  POWERCTL_TRY(objects, FindObjects(client, request, components));
  POWERCTL_TRY(missing, MissingPermissions(client, DeleteChecks(objects)));
  if (!missing.empty()) return PermissionError("delete", missing);

  DeleteReport report;
  for (const DeletedObject& o : objects) {
    if (!o.kept && request.dry_run != DryRunMode::kClient) {
      auto deleted = client.Delete(o.path, request.dry_run == DryRunMode::kServer);
      if (!deleted.ok() && deleted.error().code != ErrorCode::kNotFound) {
        return WithContext(deleted.error(), "deleting " + o.name);
      }
    }
    if (on_object) on_object(o);
    report.objects.push_back(o);
  }
  if (request.wait && request.dry_run == DryRunMode::kNone) {
    auto deadline = clock.now() + request.timeout;
    for (const DeletedObject& o : report.objects) {
      if (o.kept) continue;
      while (true) {
        auto live = client.Get(o.path);
        if (!live.ok() && live.error().code == ErrorCode::kNotFound) break;
        if (!live.ok()) return live.error();
        if (clock.now() >= deadline) {
          return MakeError(ErrorCode::kApi,
                           fmt::format("timed out waiting for {} to be deleted", o.name));
        }
        clock.sleep(std::chrono::milliseconds(500));
      }
    }
  }
  return report;
}

}  // namespace powerctl::setup
