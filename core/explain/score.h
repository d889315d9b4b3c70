#pragma once
// `powerctl score`: what the extender would answer for a pod right now, node by node:
// kube-scheduler's own checks (which decide whether the extender is asked about a node at
// all), the extender's gates (pod group, dontschedule), the predicted watts now and after,
// each score component and the final 0..10. Computed by the server's SchedulingCore.

#include "core/common/result.h"
#include "core/config/config.h"
#include "core/explain/extender_scoring.h"
#include "core/scoring/decision.h"
#include "core/scoring/node_fit.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace powerctl::explain {

struct ScoreRequest {
  std::optional<nlohmann::json> pod;  // a Pod manifest (--pod FILE); else a pod is made of:
  std::string cpu;                    // --cpu Q (required without a manifest)
  std::string memory;                 // --memory Q (optional)
  std::vector<std::string> nodes;     // empty = every node
  report::PredictSource source = report::PredictSource::kAuto;  // who computes
};

struct NodeScore {
  std::string node;
  std::vector<scoring::FitFailure> fit;  // kube-scheduler's checks that fail
  // The extender's filter verdict; nullopt when kube-scheduler would not ask (fit failed).
  std::optional<scoring::NodeDecision> gate;
  // The prioritize result; nullopt when the node did not get that far.
  std::optional<scoring::NodeDecision> scored;

  std::optional<double> DeltaWatts() const;
  // The power component of the prioritize result; null when there is none.
  const scoring::Component* Power() const;
  // The fill cost its power component carries (scoring.objective=fill); nullopt otherwise.
  std::optional<double> FillWattsPerCore() const;
};

struct ScoreReport {
  nlohmann::json pod;  // the pod that was scored
  std::string answered_by;
  std::vector<std::string> warnings;
  std::vector<std::string> notes;  // the decisions' notes (power range, policy, pod group)
  std::vector<NodeScore> nodes;    // best first: scored by score then delta, gated, not fitting
  // What ranked the nodes' power (fill or marginal, power_cost.h's RankingObjective); the
  // configured scoring.objective when no node has a prediction.
  std::string objective;
};

// The pod to score: the manifest (namespace "default" when it names none), or a one-container
// pod requesting `cpu` (and `memory`). kInvalidInput for bad quantities or a non-Pod manifest.
Result<nlohmann::json> PodToScore(const ScoreRequest& request);

// kInvalidInput for a bad request, kNotFound for a named node that does not exist.
Result<ScoreReport> ScorePod(const ScoreRequest& request, const config::PowerctlConfig& config,
                             const LocalScoringDeps& deps);

// Rows of the report (and explain's) from decisions: fit failures per node, filter and
// prioritize verdicts; in `order`, then sorted best first.
std::vector<NodeScore> RankNodes(const std::vector<std::string>& order,
                                 const std::map<std::string, std::vector<scoring::FitFailure>>& fit,
                                 const scoring::Decision& filter,
                                 const scoring::Decision& prioritize);

// The -o json|yaml document: {"kind":"PowerScore","pod":{...},"answeredBy":..,"objective":..,
// "nodes":[..]}; each node with "deltaWatts" and "fillWattsPerCore" (null when unknown).
nlohmann::json ScoreReportToJson(const ScoreReport& report);
// One node's row as JSON (shared with explain's document).
nlohmann::json NodeScoreToJson(const NodeScore& node);

}  // namespace powerctl::explain
