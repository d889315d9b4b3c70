#pragma once
// Waking drained nodes: when pods go Pending for lack of room, which node that `consolidate
// apply` drained would take them once it is switched back on and uncordoned. Pure: Pod and
// Node objects in, a plan out; `consolidate wake` (wake_run.h) acts on it and `explain pod`
// names the node.
//
// A drained node is judged as it will be once woken: uncordoned, and without the taints the
// node controller puts on a cordoned or powered-off node (node.kubernetes.io/unschedulable,
// unreachable, not-ready), against kube-scheduler's own filters (scoring/node_fit) with the
// pods still bound to it. Of the nodes that fit, the one that costs least to run goes first:
// the smallest expectedWattsSaved of its mark (the plan drained the costliest first, so this
// wakes them in the reverse order), then by name.

#include "core/common/result.h"
#include "core/consolidate/node_marks.h"
#include "core/scoring/node_fit.h"

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

namespace powerctl::consolidate {

// The node as kube-scheduler will see it once woken and uncordoned.
nlohmann::json AsWoken(const nlohmann::json& node);

// Whether the pod is waiting because no node had room for it: unbound, Pending, and its
// PodScheduled condition False with reason Unschedulable (the scheduler tried and failed).
bool IsUnschedulablePending(const nlohmann::json& pod);

// The drained nodes `pod` would fit once woken, cheapest to run first. `loads` holds what
// each node's bound pods request (scoring::NodeLoadsOf).
std::vector<std::string> DrainedNodesThatFit(const nlohmann::json& pod,
                                             const std::vector<nlohmann::json>& nodes,
                                             const std::map<std::string, scoring::NodeLoad>& loads);

inline constexpr int kMaxWakeNodes = 1000;

struct NodeWake {
  std::string node;
  std::vector<std::string> addresses;  // NodeAddresses: InternalIP first
  std::vector<std::string> pods;       // namespace/name of the Pending pods it takes
};

struct WakePlan {
  std::vector<NodeWake> wakes;  // in the order to wake them
  // Pending pods that stay so: no drained node would take them within max_nodes.
  std::vector<std::string> no_room;
};

// Assigns the unschedulable Pending pods, oldest first and at most `max_pods` of them, to
// drained nodes: each to a node already chosen where it still fits (counting the pods assigned
// before it), else to the cheapest drained node it fits, at most `max_nodes`
// (1..kMaxWakeNodes) nodes. `pods` are every pod not Succeeded or Failed: the bound ones are
// the nodes' load.
Result<WakePlan> PlanWake(const std::vector<nlohmann::json>& pods,
                          const std::vector<nlohmann::json>& nodes, int max_nodes,
                          std::size_t max_pods);

}  // namespace powerctl::consolidate
