#pragma once
// kube-scheduler's own node filters, evaluated here so `explain` and `score` can say which
// nodes the scheduler drops before the extender ever sees them: NodeUnschedulable,
// TaintToleration (NoSchedule and NoExecute; PreferNoSchedule only scores), NodeAffinity
// (spec.nodeSelector and required node affinity) and NodeResourcesFit (CPU, memory, pod
// count). Pure functions over the Pod and Node JSON.
//
// Each failure has a stable reason in kube-scheduler's words without per-node values (so
// reasons aggregate across nodes, as the scheduler's "0/N nodes are available" histogram
// does), a detail with the specifics, and a concrete fix.

#include "core/kube/pod_resources.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace powerctl::scoring {

inline constexpr const char* kCheckUnschedulable = "unschedulable";
inline constexpr const char* kCheckTaints = "taints";
inline constexpr const char* kCheckNodeAffinity = "nodeAffinity";
inline constexpr const char* kCheckResources = "resources";

inline constexpr const char* kReasonUnschedulable = "node(s) were unschedulable";
inline constexpr const char* kReasonUntoleratedTaint = "node(s) had untolerated taint";
inline constexpr const char* kReasonNodeAffinity =
    "node(s) didn't match Pod's node affinity/selector";
inline constexpr const char* kReasonInsufficientCpu = "Insufficient cpu";
inline constexpr const char* kReasonInsufficientMemory = "Insufficient memory";
inline constexpr const char* kReasonTooManyPods = "Too many pods";

struct FitFailure {
  std::string check;   // kCheck*
  std::string reason;  // kReason*
  std::string detail;  // e.g. "taint dedicated=gpu:NoSchedule"
  std::string fix;     // e.g. "kubectl taint nodes node-a dedicated:NoSchedule-"

  bool operator==(const FitFailure&) const = default;
};

// What the pods already bound to a node request (the scheduler's NodeInfo.Requested).
struct NodeLoad {
  std::int64_t cpu_millis = 0;
  std::int64_t memory_bytes = 0;
  std::int64_t pods = 0;
};

// What the pods bound to each node request, from v1 Pod objects (Succeeded and Failed pods
// hold nothing). The pod named `exclude_key` ("namespace/name") is not counted, so a bound pod
// being explained is not counted twice.
std::map<std::string, NodeLoad> NodeLoadsOf(const std::vector<nlohmann::json>& pods,
                                            const std::string& exclude_key = "");

// Every failed check of `pod` on `node`, in the scheduler's filter order; empty: it fits.
// `requests` is the pod's EffectivePodResources.
std::vector<FitFailure> CheckNodeFit(const nlohmann::json& pod, const kube::PodResources& requests,
                                     const nlohmann::json& node, const NodeLoad& load);

// The single checks (exposed for tests).
std::optional<FitFailure> CheckUnschedulable(const nlohmann::json& pod, const nlohmann::json& node);
std::optional<FitFailure> CheckTaints(const nlohmann::json& pod, const nlohmann::json& node);
std::optional<FitFailure> CheckNodeAffinity(const nlohmann::json& pod, const nlohmann::json& node);
std::vector<FitFailure> CheckResources(const kube::PodResources& requests,
                                       const nlohmann::json& node, const NodeLoad& load);

// v1 Toleration.ToleratesTaint: effect (empty = any), key (empty with Exists = any), and
// operator Equal (the default) comparing values or Exists.
bool Tolerates(const nlohmann::json& toleration, const nlohmann::json& taint);
// One NodeSelectorRequirement against node labels: In, NotIn, Exists, DoesNotExist, Gt, Lt.
bool MatchesRequirement(const nlohmann::json& requirement,
                        const std::map<std::string, std::string>& labels);

}  // namespace powerctl::scoring
