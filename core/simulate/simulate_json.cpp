// SimulationDocument: the result of a simulation for -o json|yaml.
#include "core/simulate/simulate.h"

#include <algorithm>
#include <cmath>

namespace powerctl::simulate {
namespace {

using ojson = nlohmann::ordered_json;

ojson Rounded(double value, int digits = 1) {
  double scale = std::pow(10, digits);
  return std::round(value * scale) / scale;
}

ojson Rounded(const std::optional<double>& value, int digits = 1) {
  return value ? Rounded(*value, digits) : ojson();
}

}  // namespace

ojson SimulationDocument(const SimulationResult& result) {
  ojson doc = {{"snapshot", result.snapshot_source},
               {"nodes", result.nodes.size()},
               {"initialLoadPercent", Rounded(result.initial_load_percent)},
               {"predictionErrorPercent", Rounded(result.prediction_error * 100)},
               {"idleOff", result.idle_off},
               {"unroundedExtenderScores", result.unrounded_extender_scores},
               {"opportunisticBatching", result.opportunistic_batching},
               {"seeds", result.runs.size()}};
  ojson bound = ojson::array();
  for (std::size_t l = 0; l < result.loads.size(); ++l)
    bound.push_back(
        {{"loadPercent", result.loads[l]}, {"meanWatts", Rounded(result.mean_bound[l])}});
  doc["lowerBound"] = std::move(bound);
  ojson summary = ojson::array();
  for (const ScorerSummary& s : result.summary) {
    ojson loads = ojson::array();
    for (std::size_t l = 0; l < result.loads.size(); ++l) {
      loads.push_back({{"loadPercent", result.loads[l]},
                       {"meanWatts", Rounded(s.mean_watts[l])},
                       {"powerctlSavingPercent", Rounded(s.powerctl_saving[l], 2)},
                       {"aboveBoundPercent", Rounded(s.above_bound[l], 2)},
                       {"meanUnscheduled", Rounded(s.mean_unscheduled[l])}});
    }
    ojson nodes = ojson::object();
    for (std::size_t i = 0; i < result.nodes.size(); ++i)
      nodes[result.nodes[i]] = Rounded(s.mean_node_watts[i]);
    summary.push_back({{"scorer", s.scorer},
                       {"loads", std::move(loads)},
                       {"meanFinalWatts", Rounded(s.mean_total_watts)},
                       {"meanNodeWatts", std::move(nodes)}});
  }
  doc["summary"] = std::move(summary);
  if (result.consolidate) {
    ojson consolidation = ojson::array();
    for (const ConsolidationSummary& c : result.consolidation) {
      ojson loads = ojson::array();
      for (std::size_t l = 0; l < result.loads.size(); ++l) {
        loads.push_back({{"loadPercent", result.loads[l]},
                         {"meanWatts", Rounded(c.mean_watts[l])},
                         {"belowDefaultAllOnPercent", Rounded(c.below_default_on[l], 2)},
                         {"meanDrainedNodes", Rounded(c.mean_drained[l])}});
      }
      consolidation.push_back({{"scorer", c.scorer}, {"loads", std::move(loads)}});
    }
    ojson idle_off = ojson::array();
    for (std::size_t l = 0; l < result.loads.size(); ++l)
      idle_off.push_back({{"loadPercent", result.loads[l]},
                          {"meanWatts", Rounded(result.mean_bound_idle_off[l])}});
    doc["consolidation"] = {{"scorers", std::move(consolidation)},
                            {"lowerBoundIdleOff", std::move(idle_off)}};
  }
  ojson runs = ojson::array();
  for (const SeedRun& run : result.runs) {
    ojson scorers = ojson::array();
    for (const ScorerRun& s : run.scorers) {
      ojson loads = ojson::array();
      for (const LoadWatts& at : s.at_loads)
        loads.push_back({{"loadPercent", at.load_percent},
                         {"watts", Rounded(at.watts)},
                         {"unscheduled", at.unscheduled}});
      scorers.push_back({{"scorer", s.scorer},
                         {"finalWatts", Rounded(s.total_watts)},
                         {"placed", s.placed},
                         {"unscheduled", s.unscheduled},
                         {"hinted", s.hinted},
                         {"loads", std::move(loads)}});
    }
    ojson run_bound = ojson::array();
    for (const auto& b : run.bound) run_bound.push_back(Rounded(b));
    runs.push_back({{"seed", run.seed},
                    {"pods", run.pods},
                    {"lowerBoundWatts", std::move(run_bound)},
                    {"finalLoadPercent", Rounded(run.final_load_percent)},
                    {"scorers", std::move(scorers)}});
  }
  doc["runs"] = std::move(runs);
  return doc;
}

UnreachedLoads LoadsNotReached(const SimulationResult& result) {
  UnreachedLoads out;
  if (result.runs.empty()) return out;
  out.reached_percent = result.runs.front().final_load_percent;
  for (const SeedRun& run : result.runs)
    out.reached_percent = std::min(out.reached_percent, run.final_load_percent);
  for (std::size_t i = 0; i < result.loads.size(); ++i) {
    bool reached = false;
    for (const SeedRun& run : result.runs) {
      for (const ScorerRun& scorer : run.scorers)
        reached = reached || (i < scorer.at_loads.size() && scorer.at_loads[i].watts.has_value());
    }
    if (!reached) out.loads.push_back(result.loads[i]);
  }
  return out;
}

}  // namespace powerctl::simulate
