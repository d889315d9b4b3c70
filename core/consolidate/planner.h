#pragma once
// Which nodes to empty so that the cluster draws least, and where their pods would go.
//
// Greedy: each round tries every candidate node still on, moving its pods one by one onto the
// nodes that stay (each pod where the extender's scoring would send it, within the receiving
// node's headroom), and drains the node whose emptying saves the most watts: its watts now
// minus what its pods add to the nodes they land on. Rounds repeat until no node saves
// anything, no node's pods fit, or max_nodes are drained.
//
// Why greedy: choosing the best set of nodes is a bin-packing problem (NP-hard); the node that
// saves most is nearly always worth emptying, since a node's idle draw is most of its saving.
// What it does not do: it never undoes an earlier choice, never moves pods between nodes that
// stay to make room, and never weighs two nodes that only pay off together.

#include "core/common/result.h"
#include "core/consolidate/label_selector.h"
#include "core/consolidate/pod_rules.h"

#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace powerctl::consolidate {

struct PodMove {
  std::string pod;  // namespace/name
  std::string to;   // node
};

struct Evacuation {
  bool fits = false;
  std::vector<PodMove> moves;
  double added_watts = 0;  // what the receiving nodes draw more, together
  std::string unplaced;    // when !fits: the first pod no open node could take
};

// Where pods would go and what that costs: in powerctl, the extender's scoring over the
// cluster's state (core/simulate/consolidation.h). The planner decides only which nodes.
class Evacuator {
 public:
  virtual ~Evacuator() = default;
  // Places `pods` (indices into node `from`'s pods) one by one, each on the best-scored node
  // among those `open` whose CPU requests stay within `max_fill` of its allocatable with the
  // pod. Changes the state only with `commit`, and only when every pod fits.
  virtual Evacuation Evacuate(std::size_t from, const std::vector<std::size_t>& pods,
                              const std::vector<bool>& open, double max_fill, bool commit) = 0;
};

struct PlanNodeInput {
  std::string name;
  std::map<std::string, std::string> labels;
  double watts = 0;                  // what it draws now
  std::vector<nlohmann::json> pods;  // the v1 Pod objects bound to it
};

inline constexpr int kMaxPlanNodes = 10000;
inline constexpr double kMaxHeadroom = 0.9;

struct PlanRequest {
  std::vector<PlanNodeInput> nodes;
  std::vector<DisruptionBudget> budgets;
  double headroom = 0.2;              // CPU fraction each receiving node keeps free, 0..0.9
  int max_nodes = kMaxPlanNodes;      // drain at most this many, 1..kMaxPlanNodes
  LabelSelector selector;             // only nodes it matches may be emptied
  std::vector<std::string> excluded;  // never emptied (they may still receive pods)
  // Cordoned (spec.unschedulable): they take no pods; they may still be emptied.
  std::vector<std::string> cordoned;
  // Never emptied, with why ("already drained", cluster-autoscaler's scale-down-disabled).
  std::map<std::string, std::string> kept_on;
};

struct NodePlan {
  std::string node;
  double watts_now = 0;
  bool drain = false;
  int order = 0;                      // 1-based: drain in this order
  std::optional<double> watts_saved;  // for drained nodes
  int staying_pods = 0;               // DaemonSet and mirror pods, which go off with the node
  std::vector<PodMove> moves;         // for drained nodes
  std::string reason;                 // why it stays on
};

struct Plan {
  std::vector<NodePlan> nodes;  // the drained in order, then the others in input order
  double watts_before = 0;
  double watts_after = 0;
  int drained = 0;
  double headroom = 0;
};

// kInvalidInput for settings out of range or more than kMaxPlanNodes nodes.
Result<Plan> PlanConsolidation(const PlanRequest& request, Evacuator& evacuator);

}  // namespace powerctl::consolidate
