#pragma once
// REST paths of the kinds powerctl manages. A static table rather than discovery:
// powerctl only ever writes these kinds, and the table makes every path reviewable.

#include "core/common/result.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace powerctl::kube {

struct ResourceType {
  std::string_view kind;
  std::string_view group;  // "" for core
  std::string_view version;
  std::string_view plural;
  bool namespaced;
};

const std::vector<ResourceType>& KnownResourceTypes();
const ResourceType* FindResourceType(std::string_view kind);

// "/api/v1/namespaces/NS/configmaps" or "/apis/apps/v1/namespaces/NS/deployments".
std::string CollectionPath(const ResourceType& type, const std::string& namespace_);
// The object's own path, from its kind, metadata.namespace and metadata.name.
Result<std::string> ObjectPath(const nlohmann::json& object);
// "deployment/powerctl-extender" (lower-case kind, as kubectl prints).
std::string DisplayName(const nlohmann::json& object);

}  // namespace powerctl::kube
