#include "core/simulate/simulate.h"

#include "core/common/worker_pool.h"
#include "core/predict/node_params.h"
#include "core/simulate/batching.h"
#include "core/simulate/bound.h"
#include "core/simulate/consolidation.h"
#include "core/simulate/power_model.h"
#include "core/simulate/scorers.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <mutex>
#include <random>
#include <thread>

namespace powerctl::simulate {
namespace {

Error Invalid(std::string message) {
  return MakeError(ErrorCode::kInvalidInput, std::move(message));
}

struct ClusterTotals {
  double cpu_allocatable_cores = 0;
  double cpu_requested_cores = 0;  // by the existing pods
};

ClusterTotals Totals(const std::vector<NodeRuntime>& nodes) {
  ClusterTotals t;
  for (const NodeRuntime& n : nodes) {
    t.cpu_allocatable_cores += static_cast<double>(n.cpu_allocatable_millis) / 1000.0;
    t.cpu_requested_cores += static_cast<double>(n.cpu_requested_millis) / 1000.0;
  }
  return t;
}

// With `placed` (idle-off), a node on which the run placed nothing draws nothing.
double ClusterWatts(const std::vector<NodeRuntime>& nodes, const std::vector<int>* placed) {
  double watts = 0;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (placed != nullptr && (*placed)[i] == 0) continue;
    watts += TrueWatts(*nodes[i].node, nodes[i].cpu_used / nodes[i].node->cpu_cores);
  }
  return watts;
}

// Highest total wins; ties go to a uniformly random one of them (kube-scheduler's selectHost
// samples the tied nodes the same way).
std::size_t PickNode(const std::vector<std::int64_t>& scores, std::mt19937_64& rng) {
  std::size_t best = 0;
  int tied = 0;
  for (std::size_t k = 0; k < scores.size(); ++k) {
    if (k == 0 || scores[k] > scores[best]) {
      best = k;
      tied = 1;
    } else if (scores[k] == scores[best]) {
      ++tied;
      if (rng() % static_cast<std::uint64_t>(tied) == 0) best = k;
    }
  }
  return best;
}

// What PlaceAll reports: the load its placement has reached, and whether the run has ended.
using PlacementProgress = std::function<void(double load_percent, bool done)>;

Result<ScorerRun> PlaceAll(const std::string& name, std::vector<NodeRuntime> nodes,
                           const std::vector<WorkloadPod>& workload,
                           const SimulationRequest& request, std::uint64_t tie_seed,
                           const PlacementProgress& progress) {
  ScorerOptions options;
  options.unrounded_extender_scores = request.unrounded_extender_scores;
  POWERCTL_TRY(scorer, MakeScorer(name, nodes, request.config, options));
  std::mt19937_64 rng(tie_seed);
  ClusterTotals totals = Totals(nodes);
  ScorerRun run;
  run.scorer = name;
  run.node_pods.assign(nodes.size(), 0);
  run.by_percent.assign(101, std::nullopt);
  for (double load : request.loads) run.at_loads.push_back({load, std::nullopt, 0});
  double arrived = totals.cpu_requested_cores;
  int reported_percent = -1;  // the last whole percent passed to `progress`
  int recorded_percent = -1;  // by_percent is set up to here
  auto record = [&] {
    double percent = 100 * arrived / totals.cpu_allocatable_cores;
    const int whole = static_cast<int>(std::floor(percent + 1e-9));
    if (progress && whole > reported_percent) {
      reported_percent = whole;
      progress(percent, false);
    }
    // The cluster's watts are summed over every node, so only when a figure needs them: a
    // new whole percent or a requested load (about a hundred times a run, not once a pod).
    std::optional<double> watts;
    auto cluster_watts = [&] {
      if (!watts) watts = ClusterWatts(nodes, request.idle_off ? &run.node_pods : nullptr);
      return *watts;
    };
    for (int p = recorded_percent + 1; p <= std::min(100, whole); ++p) {
      run.by_percent[p] = cluster_watts();
      recorded_percent = p;
    }
    for (LoadWatts& at : run.at_loads) {
      if (!at.watts && percent + 1e-9 >= at.load_percent) {
        at.watts = cluster_watts();
        at.unscheduled = run.unscheduled;
        at.arrived = run.placement.size();
      }
    }
  };
  record();
  std::vector<std::size_t> feasible;
  OpportunisticBatch batch;
  for (const WorkloadPod& pod : workload) {
    arrived += static_cast<double>(pod.cpu_request_millis) / 1000.0;
    feasible.clear();
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      if (nodes[i].Fits(pod)) feasible.push_back(i);
    }
    std::optional<std::size_t> hinted;
    if (request.opportunistic_batching && !feasible.empty()) hinted = batch.Hint(pod, nodes);
    if (feasible.empty()) {
      run.placement.push_back(-1);
      ++run.unscheduled;
    } else {
      std::size_t chosen = 0;
      if (hinted) {
        chosen = *hinted;
      } else {
        std::vector<std::int64_t> scores = scorer->Score(pod, feasible, nodes);
        chosen = feasible[PickNode(scores, rng)];
        if (request.opportunistic_batching) batch.Store(pod, feasible, scores, chosen);
      }
      nodes[chosen].Place(pod);
      scorer->Placed(pod, chosen, nodes);
      ++run.node_pods[chosen];
      run.placement.push_back(static_cast<int>(chosen));
      ++run.placed;
    }
    record();
  }
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const NodeRuntime& n = nodes[i];
    const bool off = request.idle_off && run.node_pods[i] == 0;
    run.node_watts.push_back(off ? 0.0 : TrueWatts(*n.node, n.cpu_used / n.node->cpu_cores));
    run.node_cpu.push_back(n.cpu_used);
  }
  run.total_watts = ClusterWatts(nodes, request.idle_off ? &run.node_pods : nullptr);
  run.hinted = batch.hinted();
  if (progress) progress(100 * arrived / totals.cpu_allocatable_cores, true);
  return run;
}

void Summarise(SimulationResult& result) {
  const std::size_t scorers = result.runs.front().scorers.size();
  const std::size_t seeds = result.runs.size();
  for (std::size_t l = 0; l < result.loads.size(); ++l) {
    double sum = 0;
    bool all = true;
    for (const SeedRun& run : result.runs) {
      all = all && run.bound[l].has_value();
      if (all) sum += *run.bound[l];
    }
    result.mean_bound.push_back(all ? std::optional<double>(sum / static_cast<double>(seeds))
                                    : std::nullopt);
  }
  auto find = [&](const SeedRun& run, const std::string& name) -> const ScorerRun* {
    for (const ScorerRun& s : run.scorers)
      if (s.scorer == name) return &s;
    return nullptr;
  };
  for (std::size_t k = 0; k < scorers; ++k) {
    ScorerSummary summary;
    summary.scorer = result.runs.front().scorers[k].scorer;
    for (std::size_t l = 0; l < result.loads.size(); ++l) {
      double watts = 0, saving = 0, unscheduled = 0, above = 0;
      bool all = true, saving_all = true, bound_all = true;
      for (const SeedRun& run : result.runs) {
        const ScorerRun& s = run.scorers[k];
        const ScorerRun* p = find(run, std::string(kScorerPowerctl));
        all = all && s.at_loads[l].watts.has_value();
        if (!all) break;
        watts += *s.at_loads[l].watts;
        unscheduled += s.at_loads[l].unscheduled;
        if (run.bound[l] && *run.bound[l] > 0) {
          above += 100 * (*s.at_loads[l].watts - *run.bound[l]) / *run.bound[l];
        } else {
          bound_all = false;
        }
        if (p != nullptr && p->at_loads[l].watts) {
          saving += 100 * (*s.at_loads[l].watts - *p->at_loads[l].watts) / *s.at_loads[l].watts;
        } else {
          saving_all = false;
        }
      }
      const double n = static_cast<double>(seeds);
      summary.mean_watts.push_back(all ? std::optional<double>(watts / n) : std::nullopt);
      summary.powerctl_saving.push_back(all && saving_all ? std::optional<double>(saving / n)
                                                          : std::nullopt);
      summary.mean_unscheduled.push_back(all ? unscheduled / n : 0);
      summary.above_bound.push_back(all && bound_all ? std::optional<double>(above / n)
                                                     : std::nullopt);
    }
    summary.mean_node_watts.assign(result.nodes.size(), 0);
    summary.mean_by_percent.assign(101, std::nullopt);
    for (int p = 0; p <= 100; ++p) {
      double sum = 0;
      bool all = true;
      for (const SeedRun& run : result.runs) {
        const auto& v = run.scorers[k].by_percent[p];
        all = all && v.has_value();
        if (all) sum += *v;
      }
      if (all) summary.mean_by_percent[p] = sum / static_cast<double>(seeds);
    }
    for (const SeedRun& run : result.runs) {
      summary.mean_total_watts += run.scorers[k].total_watts / static_cast<double>(seeds);
      for (std::size_t i = 0; i < result.nodes.size(); ++i)
        summary.mean_node_watts[i] += run.scorers[k].node_watts[i] / static_cast<double>(seeds);
    }
    result.summary.push_back(std::move(summary));
  }
}

}  // namespace

Result<SimulationResult> RunSimulation(const SimulationRequest& request) {
  if (request.seeds < 1 || request.seeds > 1000) return Invalid("--seeds: must be 1 to 1000");
  if (request.loads.empty()) return Invalid("--load: give at least one load");
  for (double load : request.loads) {
    if (!(load > 0 && load <= 100)) return Invalid("--load: each load must be in (0, 100] percent");
  }
  if (!(request.prediction_error >= 0 && request.prediction_error < 1))
    return Invalid("--prediction-error: must be at least 0 and below 100 percent");
  std::vector<std::string> names;
  for (const std::string& name : request.scorers.empty() ? AllScorers() : request.scorers) {
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  if (std::find(names.begin(), names.end(), kScorerDefault) == names.end())
    names.insert(names.begin(), std::string(kScorerDefault));

  SimulationResult result;
  result.snapshot_source = request.snapshot.source;
  result.loads = request.loads;
  std::sort(result.loads.begin(), result.loads.end());
  result.prediction_error = request.prediction_error;
  result.idle_off = request.idle_off;
  result.consolidate = request.consolidate;
  result.unrounded_extender_scores = request.unrounded_extender_scores;
  result.opportunistic_batching = request.opportunistic_batching;
  for (const SimNode& n : request.snapshot.nodes) result.nodes.push_back(n.name);
  SimulationRequest sorted = request;
  sorted.loads = result.loads;

  // Each seed's cluster and workload, drawn one after the other; then every seed's bound and
  // every (seed, scorer) placement as tasks on the machine's cores. The runs share nothing but
  // read-only inputs, and each has its own random engines, so the results do not depend on
  // how many threads ran them or in which order.
  struct SeedInputs {
    std::vector<NodeRuntime> nodes;
    std::vector<WorkloadPod> workload;
    ClusterTotals totals;
  };
  std::vector<SeedInputs> inputs(static_cast<std::size_t>(request.seeds));
  result.runs.resize(inputs.size());
  for (int s = 0; s < request.seeds; ++s) {
    const std::uint64_t seed = request.first_seed + static_cast<std::uint64_t>(s);
    std::mt19937_64 error_rng(seed * 1000003ULL + 7);
    POWERCTL_TRY(nodes, InitialNodes(request.snapshot, request.prediction_error, error_rng));
    ClusterTotals totals = Totals(nodes);
    result.initial_load_percent = 100 * totals.cpu_requested_cores / totals.cpu_allocatable_cores;
    if (result.initial_load_percent > result.loads.front() + 1e-9) {
      return Invalid(
          fmt::format("--load {:g}: the snapshot's pods already request {:.1f}% of its CPU",
                      result.loads.front(), result.initial_load_percent));
    }
    std::vector<WorkloadPod> workload;
    if (request.workload) {
      workload = *request.workload;
    } else {
      WorkloadSpec spec;
      spec.seed = seed;
      spec.pods = request.pods;
      spec.cpu_cores =
          totals.cpu_allocatable_cores * result.loads.back() / 100 - totals.cpu_requested_cores;
      workload = GenerateWorkload(spec);
    }
    SeedRun& run = result.runs[static_cast<std::size_t>(s)];
    run.seed = seed;
    run.pods = static_cast<int>(workload.size());
    run.bound.assign(result.loads.size(), std::nullopt);
    double arrived = totals.cpu_requested_cores;
    for (const WorkloadPod& p : workload)
      arrived += static_cast<double>(p.cpu_request_millis) / 1000;
    run.final_load_percent = 100 * arrived / totals.cpu_allocatable_cores;
    run.scorers.resize(names.size());
    inputs[static_cast<std::size_t>(s)] = {std::move(nodes), std::move(workload), totals};
  }

  // Progress: each run's share done (0..1), summed under one lock so the callback sees one
  // caller at a time.
  const std::size_t scorer_count = names.size();
  const std::size_t run_count = inputs.size() * scorer_count;
  std::mutex progress_mu;
  std::vector<double> shares(run_count, 0.0);
  double shares_sum = 0;
  std::size_t runs_done = 0;

  auto bound_of = [&](std::size_t s) {
    const SeedInputs& in = inputs[s];
    SeedRun& run = result.runs[s];
    double arrived = in.totals.cpu_requested_cores;
    std::vector<double> arrived_pods;  // the CPU of each pod arrived so far
    auto bound_reached = [&] {
      const double percent = 100 * arrived / in.totals.cpu_allocatable_cores;
      for (std::size_t l = 0; l < result.loads.size(); ++l) {
        if (!run.bound[l] && percent + 1e-9 >= result.loads[l])
          run.bound[l] = LowerBoundWatts(in.nodes, arrived_pods, request.idle_off);
      }
    };
    bound_reached();
    for (const WorkloadPod& p : in.workload) {
      arrived += static_cast<double>(p.cpu_request_millis) / 1000;
      arrived_pods.push_back(static_cast<double>(p.cpu_request_millis) / 1000);
      bound_reached();
    }
  };
  auto place = [&](std::size_t s, std::size_t k) -> Status {
    const SeedInputs& in = inputs[s];
    SeedRun& run = result.runs[s];
    PlacementProgress progress;
    if (request.progress) {
      progress = [&, s, k](double load_percent, bool done) {
        SimulationProgress p;
        p.seed_index = static_cast<int>(s);
        p.seeds = request.seeds;
        p.scorer = names[k];
        p.scorer_index = static_cast<int>(k);
        p.scorers = static_cast<int>(scorer_count);
        p.load_percent = load_percent;
        p.scorer_done = done;
        // This run's share: how far its load has come from the snapshot's to the final one.
        const double span = run.final_load_percent - result.initial_load_percent;
        double share = 1;
        if (!done && span > 0) {
          share = std::clamp((load_percent - result.initial_load_percent) / span, 0.0, 1.0);
        }
        p.run_fraction_done = share;
        std::lock_guard lock(progress_mu);
        double& mine = shares[s * scorer_count + k];
        shares_sum += share - mine;
        mine = share;
        if (done) ++runs_done;
        p.fraction_done = runs_done == run_count
                              ? 1.0
                              : std::min(shares_sum / static_cast<double>(run_count), 1.0);
        request.progress(p);
      };
    }
    POWERCTL_TRY(placed,
                 PlaceAll(names[k], in.nodes, in.workload, sorted, run.seed * 7919 + k, progress));
    run.scorers[k] = std::move(placed);
    return OkStatus();
  };

  // Tasks: per seed, its bound, then its scorers' placements.
  const std::size_t per_seed = scorer_count + 1;
  std::vector<Status> statuses(inputs.size() * per_seed, OkStatus());
  std::size_t threads = request.threads > 0 ? request.threads : std::thread::hardware_concurrency();
  threads = std::clamp<std::size_t>(threads, 1, statuses.size());
  WorkerPool pool(threads - 1);
  pool.ForEach(statuses.size(), [&](std::size_t task) {
    const std::size_t s = task / per_seed;
    const std::size_t k = task % per_seed;
    if (k == scorer_count) {
      bound_of(s);
    } else {
      statuses[task] = place(s, k);
    }
  });
  for (const Status& status : statuses) {
    if (!status.ok()) return status.error();
  }
  if (request.consolidate) {
    for (std::size_t s = 0; s < inputs.size(); ++s) {
      POWERCTL_CHECK_OK(
          ConsolidateSeed(result.runs[s], inputs[s].nodes, inputs[s].workload, request.config));
    }
  }
  Summarise(result);
  if (request.consolidate) SummariseConsolidation(result);
  return result;
}

}  // namespace powerctl::simulate
