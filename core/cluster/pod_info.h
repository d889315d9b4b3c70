#pragma once
// What the cluster cache keeps of a Pod, and of its resource requests. Plain data read from
// the API object; no I/O.

#include <nlohmann/json.hpp>

#include <chrono>
#include <map>
#include <optional>
#include <string>

namespace powerctl::cluster {

// The labels of the pod-group gate (scoring/pod_groups.h): the cache indexes pods by group.
inline constexpr const char* kPodGroupLabel = "podGroup";
inline constexpr const char* kMinAvailableLabel = "minAvailable";
// Set on waiting pods when their group completes, so kube-scheduler requeues them.
inline constexpr const char* kGroupCompleteAnnotation = "powerctl.io/group-complete";

// The pod's effective requests by Kubernetes' rules (kube/pod_resources.h: sidecars, init
// containers, overhead), as the scheduler counts them on a node.
struct PodRequests {
  double cpu_cores = 0;
  double memory_bytes = 0;
};

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

PodInfo PodInfoFromJson(const nlohmann::json& pod);

}  // namespace powerctl::cluster
