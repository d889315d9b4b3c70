#pragma once
// The nodes `consolidate apply` marked, as they are now: what `status` lists and `doctor`
// judges. A mark is a promise (this node holds no movable pod and may be switched off); drift
// is where the cluster no longer keeps it:
//   - a node draining for longer than kStuckDraining: an apply was interrupted or is stuck;
//   - a drained node uncordoned by hand: the scheduler may place pods on it;
//   - a drained node running pods that would have to move (a pod landed on it);
//   - a drained node still on (its kubelet Ready, heartbeat within kHeartbeatFresh) longer
//     than kStillOnGrace after it was drained: the watts the plan expected are not saved.

#include "core/common/result.h"
#include "core/consolidate/wake.h"

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace powerctl::kube {
class Client;
}

namespace powerctl::consolidate {

inline constexpr std::chrono::minutes kStuckDraining{30};
inline constexpr std::chrono::minutes kStillOnGrace{15};
inline constexpr std::chrono::minutes kHeartbeatFresh{5};
// Pods are looked up node by node up to this many marked nodes; beyond, one list of all.
inline constexpr std::size_t kMarkedNodesListedOneByOne = 20;

struct MarkedNode {
  std::string name;
  NodeMark mark;
  bool cordoned = false;
  bool kubelet_ready = false;        // Ready True with a fresh heartbeat: still on
  std::vector<std::string> movable;  // pods that would have to move, namespace/name
  std::vector<std::string> drift;    // what no longer holds, one sentence each
};

// Every node with the power-state label, sorted by name, judged at `now`.
Result<std::vector<MarkedNode>> InspectMarkedNodes(kube::Client& client,
                                                   std::chrono::system_clock::time_point now);

// Judges one node given the pods bound to it (exposed for tests).
MarkedNode JudgeMarkedNode(const nlohmann::json& node, const std::vector<nlohmann::json>& pods,
                           std::chrono::system_clock::time_point now);

}  // namespace powerctl::consolidate
