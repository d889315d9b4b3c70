// NodeState from a Node object, and the ClusterSnapshot accessors.

#include "core/cluster/node_cache.h"
#include "core/kube/json_fields.h"
#include "core/telemetry/quantity.h"

namespace powerctl::cluster {
namespace {

using json = nlohmann::json;
using kube::FindField;
using kube::StringField;

std::optional<double> Resource(const json& node, const char* field, const char* resource) {
  std::string text = StringField(node, {"status", field, resource});
  if (text.empty()) return std::nullopt;
  Result<double> value =
      std::string(resource) == "cpu" ? telemetry::ParseCpuCores(text) : telemetry::ParseBytes(text);
  return value.ok() ? std::optional<double>(*value) : std::nullopt;
}

}  // namespace

NodeState NodeStateFromJson(const json& node) {
  NodeState state;
  state.info = telemetry::NodeInfoFromJson(node);
  state.facts = predict::NodeFactsFromJson(node);
  state.name = state.facts.name;
  std::erase_if(state.facts.annotations, [](const auto& item) {
    return !item.first.starts_with(kPowerctlAnnotationPrefix);
  });
  state.cpu_capacity = Resource(node, "capacity", "cpu");
  state.cpu_allocatable = Resource(node, "allocatable", "cpu");
  state.memory_capacity = Resource(node, "capacity", "memory");
  state.memory_allocatable = Resource(node, "allocatable", "memory");
  const json* unschedulable = FindField(node, {"spec", "unschedulable"});
  state.unschedulable =
      unschedulable != nullptr && unschedulable->is_boolean() && unschedulable->get<bool>();
  return state;
}

const std::vector<PodInfo>& ClusterSnapshot::PodGroup(const std::string& ns,
                                                      const std::string& group) const {
  static const std::vector<PodInfo> kEmpty;
  auto it = pod_groups.find(ns + "/" + group);
  return it == pod_groups.end() ? kEmpty : it->second;
}

std::vector<telemetry::NodeInfo> ClusterSnapshot::NodeInfos() const {
  std::vector<telemetry::NodeInfo> out;
  out.reserve(nodes.size());
  for (const auto& [name, node] : nodes) out.push_back(node->info);
  return out;
}

const NodeState* ClusterSnapshot::FindNode(const std::string& name) const {
  auto it = nodes.find(name);
  return it == nodes.end() ? nullptr : it->second.get();
}

void ClusterSnapshot::PutNode(NodeState node) {
  std::string name = node.name;
  if (node.object == nullptr) node.object = std::make_shared<const char>('\0');
  nodes[name] = std::make_shared<const NodeState>(std::move(node));
}

}  // namespace powerctl::cluster
