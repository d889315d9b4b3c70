#pragma once
// `consolidate apply`: carries a plan out, node by node, so that it can be stopped at any point
// and run again.
//
//   1. Nodes marked draining (a run was interrupted) are finished first, if their plan still
//      holds; if not, they are released (uncordoned, unless they were cordoned before, and
//      their marks removed).
//   2. A plan is made of the cluster as it is now. Before each node is touched, it is planned
//      again on its own, on the cluster as it is then: if it is no longer worth emptying, its
//      pods no longer fit elsewhere, a PodDisruptionBudget now forbids a move, or pods the plan
//      did not know are on it, nothing of it is evicted and the run says why and goes on.
//   3. One PATCH cordons the node and marks it draining (node_marks.h), so powerctl never
//      leaves a node cordoned without its mark; its pods are evicted (drain.h); once they are
//      gone and their controllers run them elsewhere, a second PATCH marks it drained; then the
//      --on-drained hook runs (node_hook.h).
// A failed drain stops the run and leaves the node cordoned and marked draining: the next run
// resumes it, and `undo` releases it.

#include "core/common/clock.h"
#include "core/common/result.h"
#include "core/consolidate/node_hook.h"
#include "core/consolidate/planner.h"
#include "core/kube/client.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace powerctl::consolidate {

// The cluster as apply reads it.
struct ClusterState {
  std::vector<nlohmann::json> nodes;
  std::vector<nlohmann::json> pods;
  std::vector<DisruptionBudget> budgets;
};

Result<ClusterState> ReadClusterState(kube::Client& client);

// Plans on a cluster state (`request.nodes` is filled by it). In powerctl this is
// simulate::PlanSnapshot over the state's nodes and pods, so pods' new homes are chosen by the
// extender's scoring; it is given by the caller because that room sits above this one.
using StatePlanner = std::function<Result<Plan>(const ClusterState&, PlanRequest)>;

// `settings` (selector, exclusions, headroom, max nodes) made a plan of `state`: with its
// budgets; cordoned nodes take no pods; nodes marked drained or draining, and those annotated
// cluster-autoscaler.kubernetes.io/scale-down-disabled=true, are kept on, with why.
PlanRequest ClusterPlanRequest(const ClusterState& state, PlanRequest settings);

// The plan of the cluster as it is now: what `consolidate plan` shows and `apply` starts from.
Result<Plan> PlanLive(kube::Client& client, PlanRequest settings, const StatePlanner& planner);

inline constexpr std::chrono::seconds kMaxDrainTimeout{6 * 3600};

struct ApplyRequest {
  LabelSelector selector;
  std::vector<std::string> excluded;
  int max_nodes = kMaxPlanNodes;
  double headroom = 0.2;
  std::chrono::milliseconds timeout{300'000};  // per node, 1 s .. kMaxDrainTimeout
  std::chrono::milliseconds poll_interval{1000};
  HookRequest on_drained;  // command "" = no hook
  kube::DryRun dry_run = kube::DryRun::kNone;
};

enum class NodeAction {
  kDrained,   // drained and marked (with a dry run: would be)
  kReleased,  // was draining, its plan no longer holds: uncordoned and unmarked
  kSkipped,   // planned, but the plan no longer held when its turn came: untouched
  kFailed,    // the drain failed: left cordoned and marked draining
};

struct NodeOutcome {
  std::string node;
  NodeAction action = NodeAction::kDrained;
  bool resumed = false;  // was marked draining when the run began
  double expected_watts_saved = 0;
  std::vector<std::string> evicted;  // pods, "namespace/name"
  std::string detail;                // why released, skipped or failed
  HookOutcome hook;
};

struct ApplyResult {
  Plan plan;  // the plan made after resuming
  std::vector<NodeOutcome> nodes;
  // A drain or a hook failed.
  bool Failed() const;
};

struct ApplyObserver {
  std::function<void(const std::string&)> progress;  // passing status, for a progress line
  std::function<void(const std::string&)> event;     // a step done ("cordoned n1")
};

// Errors: kInvalidInput for settings out of range; the API server's when the cluster cannot
// be read or planned. What happens to each node is in the result.
Result<ApplyResult> ApplyConsolidation(kube::Client& client, const ApplyRequest& request,
                                       const StatePlanner& planner, const ApplyObserver& observer,
                                       const Clock& clock = {});

std::string_view NodeActionName(NodeAction action);

}  // namespace powerctl::consolidate
