#include "core/kube/resources.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace powerctl::kube {

const std::vector<ResourceType>& KnownResourceTypes() {
  static const std::vector<ResourceType> types = {
      {"Namespace", "", "v1", "namespaces", false},
      {"CustomResourceDefinition", "apiextensions.k8s.io", "v1", "customresourcedefinitions",
       false},
      {"ServiceAccount", "", "v1", "serviceaccounts", true},
      {"ClusterRole", "rbac.authorization.k8s.io", "v1", "clusterroles", false},
      {"ClusterRoleBinding", "rbac.authorization.k8s.io", "v1", "clusterrolebindings", false},
      {"Role", "rbac.authorization.k8s.io", "v1", "roles", true},
      {"RoleBinding", "rbac.authorization.k8s.io", "v1", "rolebindings", true},
      {"Secret", "", "v1", "secrets", true},
      {"ConfigMap", "", "v1", "configmaps", true},
      {"Service", "", "v1", "services", true},
      {"Deployment", "apps", "v1", "deployments", true},
      {"DaemonSet", "apps", "v1", "daemonsets", true},
      {"TASPolicy", "telemetry.intel.com", "v1alpha1", "taspolicies", true},
      {"Node", "", "v1", "nodes", false},
      {"Pod", "", "v1", "pods", true},
      {"Lease", "coordination.k8s.io", "v1", "leases", true},
  };
  return types;
}

const ResourceType* FindResourceType(std::string_view kind) {
  for (const ResourceType& t : KnownResourceTypes()) {
    if (t.kind == kind) return &t;
  }
  return nullptr;
}

std::string CollectionPath(const ResourceType& type, const std::string& namespace_) {
  std::string prefix = type.group.empty() ? fmt::format("/api/{}", type.version)
                                          : fmt::format("/apis/{}/{}", type.group, type.version);
  if (type.namespaced) return fmt::format("{}/namespaces/{}/{}", prefix, namespace_, type.plural);
  return fmt::format("{}/{}", prefix, type.plural);
}

Result<std::string> ObjectPath(const nlohmann::json& object) {
  if (!object.is_object() || !object.contains("kind") || !object["kind"].is_string()) {
    return MakeError(ErrorCode::kInvalidInput, "object without kind");
  }
  std::string kind = object["kind"].get<std::string>();
  const ResourceType* type = FindResourceType(kind);
  if (type == nullptr)
    return MakeError(ErrorCode::kInvalidInput,
                     fmt::format("powerctl does not manage kind {}", kind));
  const nlohmann::json& meta = object.value("metadata", nlohmann::json::object());
  std::string name = meta.value("name", "");
  std::string ns = meta.value("namespace", "");
  if (name.empty())
    return MakeError(ErrorCode::kInvalidInput, fmt::format("{} without metadata.name", kind));
  if (type->namespaced && ns.empty()) {
    return MakeError(ErrorCode::kInvalidInput,
                     fmt::format("{} {} without metadata.namespace", kind, name));
  }
  return CollectionPath(*type, ns) + "/" + name;
}

std::string DisplayName(const nlohmann::json& object) {
  std::string kind = object.value("kind", "object");
  std::transform(kind.begin(), kind.end(), kind.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  std::string name = object.contains("metadata") ? object["metadata"].value("name", "") : "";
  return kind + "/" + name;
}

}  // namespace powerctl::kube
