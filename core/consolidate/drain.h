#pragma once
// Emptying one cordoned node: each movable pod evicted (eviction.h), then a wait until the
// evicted pods are gone from the node and their controllers run as many pods elsewhere as they
// ran before, so no workload is left short when the node is marked drained.

#include "core/common/clock.h"
#include "core/common/result.h"
#include "core/consolidate/eviction.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace powerctl::kube {
class Client;
}

namespace powerctl::consolidate {

struct DrainRequest {
  std::string node;
  std::vector<nlohmann::json> pods;  // the node's pods to evict (v1 Pod objects)
  // Its pods already terminating (an earlier run evicted them): waited for like the others.
  std::vector<nlohmann::json> terminating;
  std::string eviction_api_version = "policy/v1";
  bool dry_run = false;  // server-side dry run: evictions checked, nothing waited for
  std::chrono::milliseconds timeout{300'000};  // the whole drain: 429s, termination, replacements
  std::chrono::milliseconds poll_interval{1000};
  const std::vector<DisruptionBudget>* budgets = nullptr;
  std::function<void(const std::string&)> progress;  // passing status, for a progress line
};

// The pods evicted ("namespace/name"), or the first error: an eviction refused past the
// deadline (kConflict, naming the PodDisruptionBudget), the API server's error, or kConflict
// when the pods are still there or not replaced at the deadline (naming them).
Result<std::vector<std::string>> DrainNode(kube::Client& client, const DrainRequest& request,
                                           const Clock& clock);

// Whether `pod` counts as running for its controller: phase Running and not being deleted.
bool IsRunningPod(const nlohmann::json& pod);

// The uid of the pod's controller (the owner reference with controller: true), or "".
std::string ControllerUid(const nlohmann::json& pod);

}  // namespace powerctl::consolidate
