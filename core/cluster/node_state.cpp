// NodeState from a Node object, and the ClusterSnapshot accessors.

#include "core/cluster/node_cache.h"
#include "core/common/json_fields.h"
#include "core/config/tas_policy.h"
#include "core/kube/quantity.h"
#include "core/predict/node_params.h"

#include <algorithm>
#include <string_view>

namespace powerctl::cluster {
namespace {

using json = nlohmann::json;

std::optional<double> Resource(const json& node, const char* field, const char* resource) {
  std::string text = StringField(node, {"status", field, resource});
  if (text.empty()) return std::nullopt;
  Result<double> value =
      std::string(resource) == "cpu" ? kube::ParseCpuCores(text) : kube::ParseBytes(text);
  return value.ok() ? std::optional<double>(*value) : std::nullopt;
}

bool StartsWith(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

}  // namespace

bool ScoringReadsLabel(const std::string& key, const std::string& value) {
  // The power model's: temperature ranges and where the node's model server is.
  for (std::string_view sensor : {"ambient", "cpu1", "cpu2"}) {
    if (!StartsWith(key, sensor)) continue;
    const std::string_view bound = std::string_view(key).substr(sensor.size());
    if (bound == "/min" || bound == "/max") return true;
  }
  if (StartsWith(key, "tensorflow/")) return true;
  // What policies write and read back: labeling's prefixed keys, deschedule's
  // `<policy>=violating` (any key: a deschedule policy may be named anything).
  return StartsWith(key, config::kLabelingPrefix) || value == config::kViolatingValue;
}

bool ScoringReadsAnnotation(const std::string& key) {
  return StartsWith(key, predict::kPowerctlAnnotationPrefix);
}

NodeState NodeStateFromJson(const json& node) {
  NodeState state;
  state.info = telemetry::NodeInfoFromJson(node);
  state.facts = predict::NodeFactsFromJson(node);
  std::erase_if(state.facts.labels,
                [](const auto& label) { return !ScoringReadsLabel(label.first, label.second); });
  std::erase_if(state.facts.annotations,
                [](const auto& annotation) { return !ScoringReadsAnnotation(annotation.first); });
  state.name = state.facts.name;
  state.cpu_capacity = Resource(node, "capacity", "cpu");
  state.cpu_allocatable = Resource(node, "allocatable", "cpu");
  state.memory_capacity = Resource(node, "capacity", "memory");
  state.memory_allocatable = Resource(node, "allocatable", "memory");
  state.pods_allocatable = Resource(node, "allocatable", "pods");  // a plain count
  const json* unschedulable = FindField(node, {"spec", "unschedulable"});
  state.unschedulable =
      unschedulable != nullptr && unschedulable->is_boolean() && unschedulable->get<bool>();
  return state;
}

namespace {

template <typename Nodes>  // const or not
auto NodeLowerBound(Nodes& nodes, std::string_view name) {
  return std::lower_bound(nodes.begin(), nodes.end(), name,
                          [](const NodePtr& node, std::string_view n) {
                            // compare(), not <: clang 14 cannot compile libstdc++ 12's
                            // string <=> string_view (the fuzz build uses clang).
                            return node->name.compare(n) < 0;
                          });
}

std::uint32_t NameHash(std::string_view name) {
  const std::size_t h = std::hash<std::string_view>{}(name);
  return static_cast<std::uint32_t>(h ^ (h >> 32));
}

}  // namespace

NodeIndex::NodeIndex(std::vector<std::string> names) : names_(std::move(names)) {
  std::size_t capacity = 16;
  while (capacity < 2 * names_.size()) capacity *= 2;
  slots_.resize(capacity);
  const std::size_t mask = capacity - 1;
  for (std::size_t i = 0; i < names_.size(); ++i) {
    const std::uint32_t hash = NameHash(names_[i]);
    std::size_t at = hash & mask;
    while (slots_[at].position_plus_one != 0) at = (at + 1) & mask;
    slots_[at] = Slot{hash, static_cast<std::uint32_t>(i + 1)};
  }
}

std::size_t NodeIndex::Find(std::string_view name) const {
  const std::uint32_t hash = NameHash(name);
  const std::size_t mask = slots_.size() - 1;
  for (std::size_t at = hash & mask;; at = (at + 1) & mask) {
    const Slot& slot = slots_[at];
    if (slot.position_plus_one == 0) return kNoNode;
    const std::size_t position = slot.position_plus_one - 1;
    if (slot.hash == hash && names_[position] == name) return position;
  }
}

std::size_t ClusterSnapshot::FindNodePosition(std::string_view name) const {
  if (index != nullptr) return index->Find(name);
  auto it = NodeLowerBound(nodes, name);
  return it != nodes.end() && (*it)->name == name ? static_cast<std::size_t>(it - nodes.begin())
                                                  : kNoNode;
}

const NodeState* ClusterSnapshot::FindNode(std::string_view name) const {
  std::size_t at = FindNodePosition(name);
  return at == kNoNode ? nullptr : nodes[at].get();
}

NodePtr ClusterSnapshot::FindNodePtr(std::string_view name) const {
  std::size_t at = FindNodePosition(name);
  return at == kNoNode ? nullptr : nodes[at];
}

void ClusterSnapshot::IndexNodes() {
  std::vector<std::string> names;
  names.reserve(nodes.size());
  for (const NodePtr& node : nodes) names.push_back(node->name);
  index = std::make_shared<const NodeIndex>(std::move(names));
}

void ClusterSnapshot::PutNode(NodeState node) {
  auto it = NodeLowerBound(nodes, node.name);
  auto shared = std::make_shared<const NodeState>(std::move(node));
  if (it != nodes.end() && (*it)->name == shared->name) {
    *it = std::move(shared);  // positions unchanged: the index still holds
  } else {
    nodes.insert(it, std::move(shared));
    index.reset();
  }
}

const std::vector<PodInfo>& ClusterSnapshot::PodGroup(const std::string& ns,
                                                      const std::string& group) const {
  static const std::vector<PodInfo> kEmpty;
  auto it = pod_groups.find(ns + "/" + group);
  return it == pod_groups.end() || it->second == nullptr ? kEmpty : *it->second;
}

std::vector<telemetry::NodeInfo> ClusterSnapshot::NodeInfos() const {
  std::vector<telemetry::NodeInfo> out;
  out.reserve(nodes.size());
  for (const NodePtr& node : nodes) out.push_back(node->info);
  return out;
}

}  // namespace powerctl::cluster
