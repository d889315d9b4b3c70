#include "core/simulate/consolidation.h"

#include "core/simulate/bound.h"
#include "core/simulate/power_model.h"
#include "core/simulate/workload.h"

#include <algorithm>
#include <memory>
#include <numeric>

namespace powerctl::simulate {
namespace {

using consolidate::Evacuation;
using consolidate::PodMove;

double NodeWatts(const NodeRuntime& n) {
  return TrueWatts(*n.node, n.cpu_used / n.node->cpu_cores);
}

// Pods move onto the open nodes as the extender would send them: the highest powerctl total
// among the nodes they fit within headroom (ties: the first in snapshot order, so a plan is
// the same every time it is made).
class ScoredEvacuator : public consolidate::Evacuator {
 public:
  ScoredEvacuator(std::vector<NodeRuntime> nodes, std::vector<std::vector<WorkloadPod>> pods,
                  std::unique_ptr<Scorer> scorer)
      : nodes_(std::move(nodes)), pods_(std::move(pods)), scorer_(std::move(scorer)) {}

  Evacuation Evacuate(std::size_t from, const std::vector<std::size_t>& indices,
                      const std::vector<bool>& open, double max_fill, bool commit) override {
    Evacuation out;
    std::vector<NodeRuntime> trial = nodes_;
    // Largest first: what fits hardest is placed while there is most room.
    std::vector<std::size_t> order = indices;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return pods_[from][a].cpu_request_millis > pods_[from][b].cpu_request_millis;
    });
    std::vector<std::pair<std::size_t, std::size_t>> placed;  // (pod, node)
    std::vector<std::size_t> feasible;
    out.fits = true;
    for (std::size_t p : order) {
      const WorkloadPod& pod = pods_[from][p];
      feasible.clear();
      for (std::size_t i = 0; i < trial.size(); ++i) {
        const NodeRuntime& n = trial[i];
        const double limit = max_fill * static_cast<double>(n.cpu_allocatable_millis);
        if (open[i] && n.Fits(pod) &&
            static_cast<double>(n.cpu_requested_millis + pod.cpu_request_millis) <= limit + 1e-6)
          feasible.push_back(i);
      }
      if (feasible.empty()) {
        out.fits = false;
        out.unplaced = consolidate::PodName(pod.pod.object);
        break;
      }
      const std::vector<std::int64_t> scores = scorer_->Score(pod, feasible, trial);
      const std::size_t best =
          static_cast<std::size_t>(std::max_element(scores.begin(), scores.end()) - scores.begin());
      const std::size_t to = feasible[best];
      trial[to].Place(pod);
      scorer_->Placed(pod, to, trial);
      placed.emplace_back(p, to);
      out.moves.push_back({consolidate::PodName(pod.pod.object), trial[to].node->name});
    }
    std::vector<bool> touched(trial.size(), false);
    for (const auto& [p, to] : placed) touched[to] = true;
    for (std::size_t i = 0; i < trial.size(); ++i)
      if (touched[i]) out.added_watts += NodeWatts(trial[i]) - NodeWatts(nodes_[i]);
    if (commit && out.fits) {
      nodes_ = std::move(trial);
      for (const auto& [p, to] : placed) pods_[to].push_back(pods_[from][p]);
      return out;
    }
    for (auto it = placed.rbegin(); it != placed.rend(); ++it)
      scorer_->Removed(pods_[from][it->first], it->second, trial);
    return out;
  }

 private:
  std::vector<NodeRuntime> nodes_;
  std::vector<std::vector<WorkloadPod>> pods_;  // per node, as the planner's indices
  std::unique_ptr<Scorer> scorer_;
};

std::vector<consolidate::PlanNodeInput> Inputs(const std::vector<NodeRuntime>& nodes,
                                               const std::vector<std::vector<WorkloadPod>>& pods) {
  std::vector<consolidate::PlanNodeInput> inputs;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    consolidate::PlanNodeInput in;
    in.name = nodes[i].node->name;
    in.labels = nodes[i].node->labels;
    in.watts = NodeWatts(nodes[i]);
    for (const WorkloadPod& p : pods[i]) in.pods.push_back(p.pod.object);
    inputs.push_back(std::move(in));
  }
  return inputs;
}

nlohmann::json OwnedBy(nlohmann::json object, const char* kind) {
  object["metadata"]["ownerReferences"] =
      nlohmann::json::array({{{"kind", kind}, {"name", "simulated"}, {"controller", true}}});
  return object;
}

}  // namespace

Result<consolidate::Plan> PlanSnapshot(const Snapshot& snapshot, consolidate::PlanRequest request,
                                       const config::PowerctlConfig& config) {
  std::mt19937_64 no_error_drawn(0);
  POWERCTL_TRY(nodes, InitialNodes(snapshot, 0.0, no_error_drawn));
  std::vector<std::vector<WorkloadPod>> pods(nodes.size());
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    for (const SimPod& p : snapshot.nodes[i].pods) {
      POWERCTL_TRY(pod, MakeWorkloadPod(p));
      pods[i].push_back(std::move(pod));
    }
  }
  request.nodes = Inputs(nodes, pods);
  ScoredEvacuator evacuator(nodes, std::move(pods), MakePowerctlScorer(nodes, config));
  return consolidate::PlanConsolidation(request, evacuator);
}

Result<consolidate::Plan> PlanAfterPlacement(const std::vector<NodeRuntime>& initial,
                                             const std::vector<WorkloadPod>& workload,
                                             const std::vector<int>& placement, std::size_t arrived,
                                             const config::PowerctlConfig& config) {
  std::vector<NodeRuntime> nodes = initial;
  std::unique_ptr<Scorer> scorer = MakePowerctlScorer(initial, config);
  std::vector<std::vector<WorkloadPod>> pods(nodes.size());
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    for (const SimPod& p : nodes[i].node->pods) {
      POWERCTL_TRY(pod, MakeWorkloadPod(SimPod{p.name, OwnedBy(p.object, "DaemonSet")}));
      pods[i].push_back(std::move(pod));
    }
  }
  for (std::size_t k = 0; k < arrived && k < workload.size() && k < placement.size(); ++k) {
    if (placement[k] < 0) continue;
    const std::size_t to = static_cast<std::size_t>(placement[k]);
    WorkloadPod pod = workload[k];
    pod.pod.object = OwnedBy(std::move(pod.pod.object), "ReplicaSet");
    nodes[to].Place(pod);
    scorer->Placed(pod, to, nodes);
    pods[to].push_back(std::move(pod));
  }
  consolidate::PlanRequest request;
  request.headroom = config.consolidate.headroom;
  request.nodes = Inputs(nodes, pods);
  ScoredEvacuator evacuator(std::move(nodes), std::move(pods), std::move(scorer));
  return consolidate::PlanConsolidation(request, evacuator);
}

Status ConsolidateSeed(SeedRun& run, const std::vector<NodeRuntime>& nodes,
                       const std::vector<WorkloadPod>& workload,
                       const config::PowerctlConfig& config) {
  for (ScorerRun& scorer : run.scorers) {
    for (LoadWatts& at : scorer.at_loads) {
      if (!at.watts) continue;
      POWERCTL_TRY(plan, PlanAfterPlacement(nodes, workload, scorer.placement, at.arrived, config));
      at.consolidated_watts = plan.watts_after;
      at.drained = plan.drained;
    }
  }
  // Every scorer saw the same arrivals: the first one's tell how many pods each load held.
  run.bound_idle_off.assign(run.bound.size(), std::nullopt);
  const ScorerRun& first = run.scorers.front();
  for (std::size_t l = 0; l < first.at_loads.size() && l < run.bound.size(); ++l) {
    if (!first.at_loads[l].watts) continue;
    std::vector<double> cores;
    for (std::size_t k = 0; k < first.at_loads[l].arrived && k < workload.size(); ++k)
      cores.push_back(static_cast<double>(workload[k].cpu_request_millis) / 1000.0);
    run.bound_idle_off[l] = LowerBoundWatts(nodes, std::move(cores), true);
  }
  return Ok{};
}

void SummariseConsolidation(SimulationResult& result) {
  if (result.runs.empty()) return;
  const double seeds = static_cast<double>(result.runs.size());
  const std::size_t loads = result.loads.size();
  result.mean_bound_idle_off.assign(loads, std::nullopt);
  for (std::size_t l = 0; l < loads; ++l) {
    double sum = 0;
    bool all = true;
    for (const SeedRun& run : result.runs) {
      all = all && l < run.bound_idle_off.size() && run.bound_idle_off[l].has_value();
      if (all) sum += *run.bound_idle_off[l];
    }
    if (all) result.mean_bound_idle_off[l] = sum / seeds;
  }
  auto default_on = [](const SeedRun& run, std::size_t l) -> std::optional<double> {
    for (const ScorerRun& s : run.scorers)
      if (s.scorer == kScorerDefault) return s.at_loads[l].watts;
    return std::nullopt;
  };
  const std::size_t scorers = result.runs.front().scorers.size();
  for (std::size_t k = 0; k < scorers; ++k) {
    ConsolidationSummary summary;
    summary.scorer = result.runs.front().scorers[k].scorer;
    for (std::size_t l = 0; l < loads; ++l) {
      double watts = 0, below = 0, drained = 0;
      bool all = true;
      for (const SeedRun& run : result.runs) {
        const LoadWatts& at = run.scorers[k].at_loads[l];
        const std::optional<double> baseline = default_on(run, l);
        all = all && at.consolidated_watts && baseline && *baseline > 0;
        if (!all) break;
        watts += *at.consolidated_watts;
        below += 100 * (*baseline - *at.consolidated_watts) / *baseline;
        drained += at.drained;
      }
      summary.mean_watts.push_back(all ? std::optional<double>(watts / seeds) : std::nullopt);
      summary.below_default_on.push_back(all ? std::optional<double>(below / seeds) : std::nullopt);
      summary.mean_drained.push_back(all ? std::optional<double>(drained / seeds) : std::nullopt);
    }
    result.consolidation.push_back(std::move(summary));
  }
}

}  // namespace powerctl::simulate
