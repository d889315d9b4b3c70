#pragma once
// What the cluster cache keeps of a Pod, and of its resource requests. Plain data read from
// the API object; no I/O.

#include <nlohmann/json.hpp>

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>

namespace powerctl::cluster {

struct PodRequests {
  double cpu_cores = 0;
  double memory_bytes = 0;
};

// Computes a pod's requests from its JSON object. The default, SumContainerRequests, adds the
// requests of the regular containers only.
// TODO(issue 5): point this at the exact rule of core/scoring/pod_resources.h (init containers,
// sidecars, overhead) once it lands; NodeCacheOptions::pod_requests takes it.
using PodRequestsFn = std::function<PodRequests(const nlohmann::json& pod)>;
PodRequests SumContainerRequests(const nlohmann::json& pod);

struct PodInfo {
  std::string namespace_;
  std::string name;
  std::string uid;
  std::string node_name;  // spec.nodeName; "" while unbound
  std::string phase;      // Pending, Running, Succeeded, Failed, Unknown
  std::map<std::string, std::string> labels;
  // Without kubectl's last-applied-configuration (a copy of the whole manifest).
  std::map<std::string, std::string> annotations;
  PodRequests requests;
  // status.startTime, read once; nullopt before the kubelet started the pod (or malformed).
  std::optional<std::chrono::system_clock::time_point> started;
  bool deleting = false;  // metadata.deletionTimestamp is set

  std::string Key() const { return namespace_ + "/" + name; }
  // Succeeded or Failed: the pod holds no resources and counts for no group.
  bool Terminal() const { return phase == "Succeeded" || phase == "Failed"; }
};

PodInfo PodInfoFromJson(const nlohmann::json& pod, const PodRequestsFn& requests = {});

}  // namespace powerctl::cluster
