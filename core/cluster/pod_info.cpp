// PodInfo from a v1 Pod object; absent or malformed fields stay empty.

#include "core/cluster/pod_info.h"

#include "core/common/json_fields.h"
#include "core/kube/pod_resources.h"
#include "core/kube/quantity.h"
#include "core/telemetry/metrics_api.h"

namespace powerctl::cluster {
namespace {

using json = nlohmann::json;

// kubectl apply's copy of the whole manifest: large, and read by nothing here.
constexpr std::string_view kLastApplied = "kubectl.kubernetes.io/last-applied-configuration";

std::map<std::string, std::string> StringMap(const json* object) {
  std::map<std::string, std::string> out;
  if (object == nullptr || !object->is_object()) return out;
  for (const auto& [key, value] : object->items()) {
    if (value.is_string() && key != kLastApplied) out[key] = value.get<std::string>();
  }
  return out;
}

// Regular containers' requests that parse, for a pod the effective rule rejects (only a
// hand-written object can: the API server validated every pod it stores), so one bad quantity
// does not hide the rest.
PodRequests SumParsableContainerRequests(const json& pod) {
  PodRequests out;
  const json* containers = FindField(pod, {"spec", "containers"});
  if (containers == nullptr || !containers->is_array()) return out;
  for (const json& container : *containers) {
    std::string cpu = StringField(container, {"resources", "requests", "cpu"});
    std::string memory = StringField(container, {"resources", "requests", "memory"});
    if (auto cores = kube::ParseCpuCores(cpu); !cpu.empty() && cores.ok()) {
      out.cpu_cores += *cores;
    }
    if (auto bytes = kube::ParseBytes(memory); !memory.empty() && bytes.ok()) {
      out.memory_bytes += *bytes;
    }
  }
  return out;
}

PodRequests RequestsOf(const json& pod) {
  auto resources = kube::EffectivePodResources(pod);
  if (!resources.ok()) return SumParsableContainerRequests(pod);
  return {static_cast<double>(resources->cpu_request_millis) / 1000.0,
          static_cast<double>(resources->memory_request_bytes)};
}

}  // namespace

PodInfo PodInfoFromJson(const json& pod) {
  PodInfo info;
  info.namespace_ = StringField(pod, {"metadata", "namespace"});
  info.name = StringField(pod, {"metadata", "name"});
  info.uid = StringField(pod, {"metadata", "uid"});
  info.node_name = StringField(pod, {"spec", "nodeName"});
  info.phase = StringField(pod, {"status", "phase"});
  info.labels = StringMap(FindField(pod, {"metadata", "labels"}));
  info.annotations = StringMap(FindField(pod, {"metadata", "annotations"}));
  if (std::string start = StringField(pod, {"status", "startTime"}); !start.empty()) {
    info.started = telemetry::ParseRfc3339(start);
  }
  info.deleting = FindField(pod, {"metadata", "deletionTimestamp"}) != nullptr;
  info.requests = RequestsOf(pod);
  return info;
}

}  // namespace powerctl::cluster
