#pragma once
// `powerctl consolidate wake`: one pass of waking drained nodes for Pending pods. Lists nodes
// and pods, plans (wake.h), records on each Pending pod an Event naming the drained node that
// would take it, and, with a hook, runs it per node (`--on-wake`, e.g. an IPMI or Redfish
// power-on) and then brings the node back (uncordons it and clears its marks, as `consolidate
// undo` does) so the scheduler places the pods once its kubelet is Ready.

#include "core/common/result.h"
#include "core/consolidate/node_hook.h"
#include "core/consolidate/wake.h"

#include <chrono>
#include <string>
#include <vector>

namespace powerctl::kube {
class Client;
}

namespace powerctl::consolidate {

inline constexpr const char* kReasonWakeNeeded = "DrainedNodeWouldFit";
inline constexpr const char* kWakeEventComponent = "powerctl-consolidate";
// At most this many Pending pods are considered per pass (the oldest).
inline constexpr std::size_t kMaxWakePods = 10000;

struct WakeRequest {
  int max_nodes = 1;    // nodes woken per pass, 1..kMaxWakeNodes
  HookRequest on_wake;  // empty command: report only, wake nothing
  bool dry_run = false;
  std::string instance;  // the Events' reportingInstance (host name)
};

struct NodeWakeOutcome {
  NodeWake wake;
  HookOutcome hook;  // hook.ran false: no hook, or a dry run
  bool brought_back = false;
  std::string error;  // bringing it back failed
};

struct WakeReport {
  std::vector<NodeWakeOutcome> nodes;
  std::vector<std::string> no_room;
  int drained_nodes = 0;  // nodes marked drained when the pass listed them
  int events = 0;         // Events recorded on Pending pods
  std::vector<std::string> warnings;
};

// kInvalidInput for a hook out of bounds (ValidateHook) or max_nodes out of range. A node
// whose hook succeeded is brought back with UndoNode.
Result<WakeReport> WakeOnce(kube::Client& client, const WakeRequest& request,
                            std::chrono::system_clock::time_point now);

}  // namespace powerctl::consolidate
