#pragma once
// The four ways of placing a pod that a simulation compares, behind one interface, over the
// nodes' state as placement changes it. Each returns the total kube-scheduler would compare
// across nodes (the sum of its score plugins, times their weights), highest wins.
//
//   powerctl       the extender's prioritize (scoring::SchedulingCore, the server's code) x
//                  extender weight x 10, plus the resource scores scheduler.resourceScoring
//                  puts in the generated profile: MostAllocated (pack), LeastAllocated +
//                  BalancedAllocation (spread) or none
//   default        LeastAllocated + BalancedAllocation
//   minimizepower  WAO's MinimizePower v1 plugin (weight 100, as in its shipped scheduler
//                  configuration) plus the defaults
//   peaks          PEAKS alone (its sample profile disables the other score plugins)

#include "core/config/config.h"
#include "core/simulate/baseline_scorers.h"
#include "core/simulate/power_model.h"
#include "core/simulate/workload.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace powerctl::simulate {

inline constexpr std::string_view kScorerPowerctl = "powerctl";
inline constexpr std::string_view kScorerDefault = "default";
inline constexpr std::string_view kScorerMinimizePower = "minimizepower";
inline constexpr std::string_view kScorerPeaks = "peaks";
std::vector<std::string> AllScorers();

// A node during one placement run.
struct NodeRuntime {
  const SimNode* node = nullptr;
  BuiltinParams belief;  // what the predictors are told (true fit + error)
  std::int64_t cpu_allocatable_millis = 0;
  std::int64_t memory_allocatable_bytes = 0;
  std::int64_t cpu_requested_millis = 0;  // for the fit filter
  std::int64_t memory_requested_bytes = 0;
  std::int64_t cpu_nonzero_millis = 0;  // for scoring (scheduler defaults for empty requests)
  std::int64_t memory_nonzero_bytes = 0;
  int pod_count = 0;
  double base_cpu_used = 0;  // cores used by the pods it had before the run
  double cpu_used = 0;       // cores used now: placed pods use what they request

  // NodeResourcesFit and the pod count: can `pod` go here?
  bool Fits(const WorkloadPod& pod) const;
  void Place(const WorkloadPod& pod);
  RequestedResources WithPod(const WorkloadPod& pod) const;
};

// The snapshot's nodes with their existing pods placed, as every run starts: the predictors'
// belief off by up to `error` (drawn from `rng`; 0 draws nothing). kInvalidInput for a node
// whose built-in model annotations cannot be read.
Result<std::vector<NodeRuntime>> InitialNodes(const Snapshot& snapshot, double error,
                                              std::mt19937_64& rng);

class Scorer {
 public:
  virtual ~Scorer() = default;
  // One total per element of `feasible` (indices into `nodes`).
  virtual std::vector<std::int64_t> Score(const WorkloadPod& pod,
                                          const std::vector<std::size_t>& feasible,
                                          const std::vector<NodeRuntime>& nodes) = 0;
  // `pod` was bound to nodes[index] (whose state already includes it).
  virtual void Placed(const WorkloadPod& /*pod*/, std::size_t /*index*/,
                      const std::vector<NodeRuntime>& /*nodes*/) {}
  // Undoes the last Placed of `pod` on nodes[index]: consolidation tries a move and takes it
  // back when the rest of its node's pods do not fit.
  virtual void Removed(const WorkloadPod& /*pod*/, std::size_t /*index*/,
                       const std::vector<NodeRuntime>& /*nodes*/) {}
};

struct ScorerOptions {
  // Diagnostic: the powerctl scorer uses the extender's score before it is rounded to the
  // protocol's 0..10 integers, to show what the rounding costs. The extender never does this.
  bool unrounded_extender_scores = false;
  // The powerctl scorer asks SchedulingCore::Prioritize about every candidate for every pod,
  // instead of re-estimating only the nodes that changed (for tests: both must agree).
  bool score_every_candidate = false;
};

// kInvalidInput for an unknown name. `nodes` is the initial state (the powerctl scorer
// builds its cluster snapshot and telemetry from it); `config` holds the scoring weights.
Result<std::unique_ptr<Scorer>> MakeScorer(std::string_view name,
                                           const std::vector<NodeRuntime>& nodes,
                                           const config::PowerctlConfig& config,
                                           const ScorerOptions& options = {});

std::unique_ptr<Scorer> MakePowerctlScorer(const std::vector<NodeRuntime>& nodes,
                                           const config::PowerctlConfig& config,
                                           const ScorerOptions& options = {});

}  // namespace powerctl::simulate
