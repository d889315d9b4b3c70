#include "core/simulate/export_snapshot.h"

#include "core/common/json_fields.h"
#include "core/kube/quantity.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace powerctl::simulate {
namespace {

using json = nlohmann::json;

std::map<std::string, std::string> Strings(const json* object) {
  std::map<std::string, std::string> out;
  if (object == nullptr || !object->is_object()) return out;
  for (const auto& [key, value] : object->items()) {
    // kubectl's copy of the whole manifest says nothing about power and can be large.
    if (key == "kubectl.kubernetes.io/last-applied-configuration") continue;
    if (value.is_string()) out[key] = value.get<std::string>();
  }
  return out;
}

std::optional<double> Allocatable(const json& node, const char* resource, bool cpu) {
  const json* value = FindField(node, {"status", "allocatable", resource});
  if (value == nullptr || !value->is_string()) return std::nullopt;
  auto parsed = cpu ? kube::ParseCpuCores(value->get<std::string>())
                    : kube::ParseBytes(value->get<std::string>());
  if (!parsed.ok()) return std::nullopt;
  return *parsed;
}

// Only what placement and consolidate read of a pod: its name, namespace, labels, annotations,
// controller, its containers' requests and which volumes keep data on the node.
SimPod Trimmed(const json& pod) {
  SimPod out;
  const std::string name = StringField(pod, {"metadata", "name"});
  const std::string ns = StringField(pod, {"metadata", "namespace"});
  out.name = (ns.empty() ? "" : ns + "/") + (name.empty() ? "pod" : name);
  json containers = json::array();
  if (const json* list = FindField(pod, {"spec", "containers"}); list && list->is_array()) {
    for (const json& c : *list) {
      json requests = json::object();
      if (const json* r = FindField(c, {"resources", "requests"}); r && r->is_object()) {
        for (const char* key : {"cpu", "memory"})
          if (r->contains(key) && (*r)[key].is_string()) requests[key] = (*r)[key];
      }
      containers.push_back(
          {{"name", c.value("name", "c")}, {"resources", {{"requests", requests}}}});
    }
  }
  json metadata = {{"name", name.empty() ? "pod" : name},
                   {"namespace", ns.empty() ? "simulated" : ns},
                   {"uid", out.name}};
  if (auto labels = Strings(FindField(pod, {"metadata", "labels"})); !labels.empty())
    metadata["labels"] = labels;
  if (auto annotations = Strings(FindField(pod, {"metadata", "annotations"})); !annotations.empty())
    metadata["annotations"] = annotations;
  if (const json* owners = FindField(pod, {"metadata", "ownerReferences"});
      owners && owners->is_array()) {
    for (const json& owner : *owners) {
      const json* controller = FindField(owner, {"controller"});
      if (controller == nullptr || !controller->is_boolean() || !controller->get<bool>()) continue;
      metadata["ownerReferences"] = json::array({{{"kind", StringField(owner, {"kind"})},
                                                  {"name", StringField(owner, {"name"})},
                                                  {"controller", true}}});
    }
  }
  json spec = {{"containers", std::move(containers)}};
  if (const json* volumes = FindField(pod, {"spec", "volumes"}); volumes && volumes->is_array()) {
    json kept = json::array();
    for (const json& v : *volumes) {
      json entry = {{"name", StringField(v, {"name"})}};
      if (FindField(v, {"hostPath"}) != nullptr) entry["hostPath"] = json::object();
      if (const json* e = FindField(v, {"emptyDir"}); e != nullptr) {
        entry["emptyDir"] = json::object();
        if (std::string medium = StringField(*e, {"medium"}); !medium.empty())
          entry["emptyDir"]["medium"] = medium;
      }
      if (entry.size() > 1) kept.push_back(std::move(entry));
    }
    if (!kept.empty()) spec["volumes"] = std::move(kept);
  }
  out.object = {{"metadata", std::move(metadata)}, {"spec", std::move(spec)}};
  return out;
}

}  // namespace

Result<Snapshot> SnapshotFromObjects(const std::vector<json>& nodes,
                                     const std::vector<json>& pods) {
  Snapshot snapshot;
  snapshot.source = "exported";
  std::map<std::string, std::vector<SimPod>> by_node;
  for (const json& pod : pods) {
    const json* node = FindField(pod, {"spec", "nodeName"});
    const json* phase = FindField(pod, {"status", "phase"});
    if (node == nullptr || !node->is_string() || node->get<std::string>().empty()) continue;
    if (phase != nullptr && phase->is_string() && (*phase == "Succeeded" || *phase == "Failed")) {
      continue;  // terminal pods hold no resources
    }
    by_node[node->get<std::string>()].push_back(Trimmed(pod));
  }
  for (const json& object : nodes) {
    const json* name = FindField(object, {"metadata", "name"});
    if (name == nullptr || !name->is_string()) continue;
    SimNode node;
    node.name = name->get<std::string>();
    auto cpu = Allocatable(object, "cpu", true);
    auto memory = Allocatable(object, "memory", false);
    if (!cpu || !memory || *cpu <= 0 || *memory <= 0) continue;  // not a usable worker
    node.cpu_cores = *cpu;
    node.memory_bytes = *memory;
    if (auto max_pods = Allocatable(object, "pods", false); max_pods && *max_pods >= 1)
      node.max_pods = static_cast<int>(*max_pods);
    node.labels = Strings(FindField(object, {"metadata", "labels"}));
    node.annotations = Strings(FindField(object, {"metadata", "annotations"}));
    node.pods = std::move(by_node[node.name]);
    snapshot.nodes.push_back(std::move(node));
  }
  if (snapshot.nodes.empty())
    return MakeError(ErrorCode::kNotFound,
                     "the cluster has no node with allocatable CPU and memory");
  return snapshot;
}

Result<Snapshot> ExportSnapshot(kube::Client& client) {
  POWERCTL_TRY(nodes, client.List("/api/v1/nodes"));
  POWERCTL_TRY(pods, client.List("/api/v1/pods"));
  return SnapshotFromObjects(nodes, pods);
}

std::size_t AddMeasuredCurves(Snapshot& snapshot,
                              const std::map<std::string, std::vector<double>>& curves) {
  std::size_t added = 0;
  for (SimNode& node : snapshot.nodes) {
    auto it = curves.find(node.name);
    if (it == curves.end() || it->second.size() != kCurvePoints) continue;
    if (!std::all_of(it->second.begin(), it->second.end(),
                     [](double w) { return std::isfinite(w) && w >= 0; }))
      continue;
    node.power_curve = it->second;
    ++added;
  }
  return added;
}

}  // namespace powerctl::simulate
