#pragma once
// `powerctl simulate`: places a workload on a cluster snapshot once per scorer and compares
// the nodes' true watts. Placement is online, as kube-scheduler's: each pod in arrival order
// goes to the feasible node (fits CPU, memory and pod count) with the highest total score,
// ties broken at random (seeded), and nothing moves afterwards. So one run up to the highest
// load also gives the watts at every lower load: the moment the arrived pods' CPU requests
// first reach L% of the cluster's allocatable CPU.
//
// Each seed draws its own workload (unless one is given), its own prediction errors and its
// own tie-breaks; figures are averaged over seeds.

#include "core/config/config.h"
#include "core/simulate/snapshot.h"
#include "core/simulate/workload.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace powerctl::simulate {

// Where a running simulation is, for a progress display. Seeds and scorers run in parallel;
// each call is about one (seed, scorer) run, and fraction_done about all of them.
struct SimulationProgress {
  int seed_index = 0;  // 0-based, of `seeds`
  int seeds = 0;
  std::string scorer;
  int scorer_index = 0;  // 0-based, of `scorers`
  int scorers = 0;
  double load_percent = 0;       // the cluster CPU load this scorer's placement has reached
  bool scorer_done = false;      // this scorer's run for this seed has ended
  double run_fraction_done = 0;  // of this (seed, scorer) run, 0..1
  double fraction_done = 0;      // of the whole simulation, 0..1; 1 on the last call
};
using ProgressCallback = std::function<void(const SimulationProgress&)>;

struct SimulationRequest {
  Snapshot snapshot;
  std::optional<std::vector<WorkloadPod>> workload;  // else generated per seed
  std::optional<int> pods;                           // generated workload: this many pods
  std::vector<double> loads = {25, 50, 75};          // cluster CPU load, percent
  int seeds = 5;
  std::uint64_t first_seed = 1;
  double prediction_error = 0.10;    // relative error of believed idle and max watts
  std::vector<std::string> scorers;  // empty: all; "default" is always run (the baseline)
  config::PowerctlConfig config;
  // Nodes on which a run placed nothing count as switched off (0 W), for every scorer and the
  // bound: what consolidation could add. The snapshot's own pods on such a node are taken to
  // be DaemonSet pods, which go with the node.
  bool idle_off = false;
  // After each scorer's placement, at each load: consolidate's planner (config.consolidate)
  // drains what it can and the drained nodes count as off (core/simulate/consolidation.h).
  bool consolidate = false;
  // Diagnostic: powerctl's extender score unrounded (ScorerOptions), to measure what the 0..10
  // protocol's rounding costs.
  bool unrounded_extender_scores = false;
  // Every scorer placed as kube-scheduler's OpportunisticBatching would (batching.h): a pod
  // like the previous one may take the next node of its ranking unscored. For measuring what
  // batching costs; powerctl's generated scheduler turns it off.
  bool opportunistic_batching = false;
  // Threads the seeds' and scorers' runs share (each run is one thread's); 0: the machine's
  // cores. The results are the same for any number.
  std::size_t threads = 0;
  // Called, one call at a time, from the thread running a placement each time a scorer's placement
  // passes a whole percent of load (at most once per pod) and once when the scorer's run ends.
  // Optional.
  ProgressCallback progress;
};

struct LoadWatts {
  double load_percent = 0;
  std::optional<double> watts;               // nullopt: the workload never reached this load
  int unscheduled = 0;                       // pods no node could take, up to that load
  std::size_t arrived = 0;                   // workload pods arrived by then
  std::optional<double> consolidated_watts;  // with --consolidate: drained nodes off
  int drained = 0;
};

struct ScorerRun {
  std::string scorer;
  std::vector<double> node_watts;  // true watts per node at the end, in snapshot order
  std::vector<int> node_pods;      // pods placed by the run
  std::vector<double> node_cpu;    // cores in use at the end
  double total_watts = 0;
  int placed = 0;
  int unscheduled = 0;
  std::vector<LoadWatts> at_loads;                // one per requested load
  std::vector<std::optional<double>> by_percent;  // watts when load first reached 0..100%
  std::vector<int> placement;                     // per workload pod: its node, or -1
  int hinted = 0;  // with opportunistic_batching: pods placed from the previous ranking
};

struct SeedRun {
  std::uint64_t seed = 0;
  int pods = 0;
  double final_load_percent = 0;
  std::vector<ScorerRun> scorers;
  std::vector<std::optional<double>> bound;  // per load: LowerBoundWatts for the pods arrived
  std::vector<std::optional<double>> bound_idle_off;  // with --consolidate: idle nodes off
};

struct ScorerSummary {
  std::string scorer;
  std::vector<std::optional<double>> mean_watts;       // per load (every seed reached it)
  std::vector<std::optional<double>> powerctl_saving;  // mean % powerctl saves against it
  std::vector<std::optional<double>> above_bound;      // mean % above the lower bound
  std::vector<double> mean_unscheduled;                // per load
  std::vector<double> mean_node_watts;                 // at the end
  std::vector<std::optional<double>> mean_by_percent;  // 0..100
  double mean_total_watts = 0;
};

// With --consolidate: one scorer's placement, then consolidation, at each load.
struct ConsolidationSummary {
  std::string scorer;
  std::vector<std::optional<double>> mean_watts;        // drained nodes off
  std::vector<std::optional<double>> below_default_on;  // mean % below default, all on
  std::vector<std::optional<double>> mean_drained;      // nodes
};

struct SimulationResult {
  std::string snapshot_source;
  std::vector<std::string> nodes;
  std::vector<double> loads;
  double initial_load_percent = 0;  // the snapshot's existing pods
  double prediction_error = 0;
  bool idle_off = false;
  bool unrounded_extender_scores = false;
  bool opportunistic_batching = false;
  bool consolidate = false;
  std::vector<std::optional<double>> mean_bound;  // per load (core/simulate/bound.h)
  std::vector<SeedRun> runs;
  std::vector<ScorerSummary> summary;                      // in request order, "default" included
  std::vector<ConsolidationSummary> consolidation;         // with --consolidate
  std::vector<std::optional<double>> mean_bound_idle_off;  // with --consolidate, per load
};

// kInvalidInput for bad settings (unknown scorer, loads outside (0, 100], no seeds, loads
// below what the snapshot already has).
Result<SimulationResult> RunSimulation(const SimulationRequest& request);

// The requested loads no placement reached (their watts are all null), and the lowest final
// load of the seeds' workloads: a workload too small for the cluster is worth a warning.
struct UnreachedLoads {
  std::vector<double> loads;
  double reached_percent = 0;
};
UnreachedLoads LoadsNotReached(const SimulationResult& result);

// The result as JSON for -o json|yaml: summary, per-seed totals and per-node watts.
nlohmann::ordered_json SimulationDocument(const SimulationResult& result);

}  // namespace powerctl::simulate
