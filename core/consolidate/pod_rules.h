#pragma once
// Which pods let their node be emptied, by cluster-autoscaler's rules for scale-down, so that
// a plan never counts on moving a pod that an operator or a drain would keep:
//   - DaemonSet pods and mirror (static) pods stay with their node and are no load to move;
//     a node left with only them counts as empty.
//   - `cluster-autoscaler.kubernetes.io/safe-to-evict: "false"` keeps the pod, and its node.
//   - `safe-to-evict: "true"` lets the pod move whatever else holds below.
//   - A pod no controller owns (ReplicaSet, StatefulSet, Job, ...) would be deleted, not
//     re-created elsewhere: it keeps its node.
//   - A pod with local storage (a hostPath volume, or an emptyDir not in memory) would lose
//     its data: it keeps its node.
// PodDisruptionBudgets are counted across the whole plan (DisruptionBudgets below).

#include "core/common/result.h"

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

namespace powerctl::kube {
class Client;
}

namespace powerctl::consolidate {

inline constexpr const char* kSafeToEvictAnnotation =
    "cluster-autoscaler.kubernetes.io/safe-to-evict";
inline constexpr const char* kMirrorPodAnnotation = "kubernetes.io/config.mirror";

enum class PodRole {
  kStays,    // DaemonSet or mirror pod: goes (off) with its node
  kMovable,  // would be re-created elsewhere
  kBlocks,   // keeps its node on
};

struct PodVerdict {
  PodRole role = PodRole::kMovable;
  std::string reason;  // for kBlocks: why, naming the rule
};

// A v1 Pod object, read without throwing.
PodVerdict ClassifyPod(const nlohmann::json& pod);

// The pod's controller: the owner reference with controller: true, or null.
const nlohmann::json* ControllerOf(const nlohmann::json& pod);

// "namespace/name" (just the name without a namespace): how plans name pods.
std::string PodName(const nlohmann::json& pod);

// A PodDisruptionBudget: the pods its selector matches in its namespace may lose at most
// `disruptions_allowed` more (status.disruptionsAllowed, what the Eviction API checks).
struct DisruptionBudget {
  std::string namespace_;
  std::string name;
  nlohmann::json selector;  // metav1.LabelSelector; null selects nothing
  // An empty selector ({}) selects every pod of the namespace in policy/v1, none in v1beta1.
  bool empty_selects_all = true;
  long disruptions_allowed = 0;
  bool Covers(const nlohmann::json& pod) const;
};

// From policy/v1 or policy/v1beta1 PodDisruptionBudget objects; entries without a name are
// skipped.
std::vector<DisruptionBudget> DisruptionBudgetsFromObjects(
    const std::vector<nlohmann::json>& objects);

// At most this many PodDisruptionBudgets are read from a cluster.
inline constexpr std::size_t kMaxDisruptionBudgets = 10000;

// Lists policy/v1, or policy/v1beta1 where the server is older than 1.21.
Result<std::vector<DisruptionBudget>> ListDisruptionBudgets(kube::Client& client);

}  // namespace powerctl::consolidate
