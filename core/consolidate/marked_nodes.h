#pragma once
// The nodes `consolidate apply` marked, as they are now: what `status` lists and `doctor`
// judges. A mark is a promise (this node holds no movable pod and may be switched off); drift
// is where the cluster no longer keeps it:
//   - a node draining for longer than kStuckDraining: an apply was interrupted or is stuck;
//   - a drained node uncordoned by hand: the scheduler may place pods on it;
//   - a drained node running pods that would have to move (a pod landed on it);
//   - a drained node still on longer than kStillOnGrace after it was drained: the watts the
//     plan expected are not saved. Where telemetry measures the node's power (passed in: this
//     room reads no telemetry), it is still on when it draws more than StillOnWatts; else when
//     its kubelet is Ready with a heartbeat within kHeartbeatFresh.

#include "core/common/result.h"
#include "core/consolidate/wake.h"

#include <chrono>
#include <functional>
#include <map>
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

// Above this a drained node counts as still on: the larger of kStillOnFloorWatts and
// kStillOnShareOfSaving of the watts its plan expected to save. A server switched off still
// draws a little: its BMC and power supplies on standby, typically 5-15 W, which a PDU or the
// BMC's own sensor reports; a large server's standby is larger, hence the share. A node that
// is on draws at least its idle power, which on any server is several times either bound
// (idle is 30-60 % of full load), so the bound separates off from on with room on both sides.
inline constexpr double kStillOnFloorWatts = 20;
inline constexpr double kStillOnShareOfSaving = 0.10;
double StillOnWatts(double expected_watts_saved);

struct MarkedNode {
  std::string name;
  NodeMark mark;
  bool cordoned = false;
  bool kubelet_ready = false;            // Ready True with a fresh heartbeat: still on
  std::optional<double> measured_watts;  // what telemetry measured, when it was asked
  std::vector<std::string> movable;      // pods that would have to move, namespace/name
  std::vector<std::string> drift;        // what no longer holds, one sentence each
};

// The measured watts of the given Node objects (the drained ones), by node name; a node
// without a reading is left out. Supplied by the caller that reads telemetry (doctor).
using MeasureNodePower =
    std::function<std::map<std::string, double>(const std::vector<nlohmann::json>& nodes)>;

// Every node with the power-state label, sorted by name, judged at `now`. With `measure`, the
// drained nodes' power is asked of it once, for all of them.
Result<std::vector<MarkedNode>> InspectMarkedNodes(kube::Client& client,
                                                   std::chrono::system_clock::time_point now,
                                                   const MeasureNodePower& measure = nullptr);

// Judges one node given the pods bound to it and, when telemetry has one, its measured power
// (exposed for tests).
MarkedNode JudgeMarkedNode(const nlohmann::json& node, const std::vector<nlohmann::json>& pods,
                           std::chrono::system_clock::time_point now,
                           std::optional<double> measured_watts = std::nullopt);

}  // namespace powerctl::consolidate
