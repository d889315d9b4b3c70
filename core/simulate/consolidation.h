#pragma once
// consolidate's planner (core/consolidate) over a snapshot: pods' new homes are chosen by
// powerctl's scorer (the extender's own prioritize, as in simulate), on the node state a
// snapshot or a simulated placement gives, and watts are the nodes' true watts
// (TrueWatts: the measured curve, else the built-in model with the node's parameters, which is
// what powerctl predicts for a live cluster's export).

#include "core/config/config.h"
#include "core/consolidate/planner.h"
#include "core/simulate/scorers.h"
#include "core/simulate/simulate.h"
#include "core/simulate/snapshot.h"

#include <optional>
#include <vector>

namespace powerctl::simulate {

// A plan for the snapshot as it is. `request.nodes` is filled from the snapshot (any given
// are replaced); the pods' objects are the snapshot's (owner, annotations, volumes).
Result<consolidate::Plan> PlanSnapshot(const Snapshot& snapshot, consolidate::PlanRequest request,
                                       const config::PowerctlConfig& config);

// After a simulated placement of workload[0..arrived) (placement: the node each went to, or
// -1): the cluster's true watts once the planner's nodes are drained and off. The snapshot's
// own pods are taken to be DaemonSet pods (as with idle-off); placed pods stand for a
// Deployment's replicas. `nodes` is the state before placement, with the run's beliefs.
Result<consolidate::Plan> PlanAfterPlacement(const std::vector<NodeRuntime>& nodes,
                                             const std::vector<WorkloadPod>& workload,
                                             const std::vector<int>& placement, std::size_t arrived,
                                             const config::PowerctlConfig& config);

// `simulate --consolidate`, for one seed once every scorer has placed: each scorer's
// consolidated watts at each load (PlanAfterPlacement) and the bound with idle nodes off.
Status ConsolidateSeed(SeedRun& run, const std::vector<NodeRuntime>& nodes,
                       const std::vector<WorkloadPod>& workload,
                       const config::PowerctlConfig& config);

// Means over seeds, against the default scheduler with every node on.
void SummariseConsolidation(SimulationResult& result);

}  // namespace powerctl::simulate
