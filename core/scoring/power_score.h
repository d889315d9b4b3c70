#pragma once
// The power component of a node's score: what it costs in watts to put the pod there
// (predict::PowerEstimate, computed for the pod's CPU), turned into 0..10.
//
// What the cost is (scoring.objective):
//   * fill (the default): the cheapest average watts per core of raising the node's load from
//     where it stands to the pod's level or any higher one: the slope of the node's lower
//     convex hull from its current load. Why: with every node on, the cheapest way to place a
//     total load (continuous relaxation) fills the hull segments of all nodes in order of
//     slope, and placing each pod where that slope is lowest does exactly that. The pod's own
//     watts are myopic: on a curve that rises steeply from idle (most modern servers), the
//     first pod on an efficient idle node looks expensive, so efficient nodes were never
//     started; near a jump at the top, the chord says so before the node reaches it.
//   * marginal: the watts the pod alone adds (after - before), kept for comparison.
// A pod without CPU has no fill cost: its own watts rank the nodes then.
//
//   * nodes with a prediction: by cost, not by rank: costs within scoring.tieTolerance (a
//     fraction, default 0.05) of the cheapest are ties and get 10; when all are within it,
//     all get 10 and kube-scheduler's own scores decide (so a homogeneous cluster is placed
//     as without powerctl). Above the ties: fill costs on a log scale that reaches 0 at twice
//     the cheapest (a point is 7 % of cost: the 0..10 protocol keeps its resolution where the
//     choice is made), marginal watts linearly from the cheapest to the highest. A negative
//     delta (a non-monotone model) counts as 0 W and says so.
//   * overcommitted nodes (usage + the pod's CPU > capacity): 0, with that reason, whether or
//     not the model answered; they do not widen the range of the others.
//   * nodes without a prediction: ScoringSettings.unknown_score, the NodePower error as the
//     reason; they do not affect the others either.
//
// Fixes to WAO's MinimizePower v1 plugin, whose scoring docs/reference/minimizepower.md
// describes ("CPU before and after", "Score and normalisation"; the fixes side by side in
// "The defects, and what powerctl does instead"):
//   * errors (telemetry, labels, model) were encoded as raw score -1 and NormalizeScore mapped
//     every negative raw score to 0, so a failed node looked like the worst node and a genuine
//     power decrease looked like a failure: here errors get unknown_score with their reason,
//     and negative deltas are clamped to 0 W (best), as WAO v2 does.
//   * only the first container was read, limits*0.85 standing in for a missing request: the
//     CPU comes from PodPowerCpuCores (all containers, init containers, sidecars, overhead).
//   * overcommit was another -1 -> 0 indistinguishable from an error: here it is 0 with its
//     own reason.
//   * inputs rounded to 0.1 zeroed the delta of small pods (predict/node_power does not
//     round); the delta was truncated to int64 watts and normalised with integer division on
//     0..100: here the exact double delta is used.
//   * all-equal deltas got 10 on the 0..100 scale (nearly worst): here they get 10 of 10.

#include "core/config/config.h"
#include "core/kube/pod_resources.h"
#include "core/predict/node_power.h"
#include "core/scoring/combine.h"

#include <optional>
#include <string>
#include <vector>

namespace powerctl::scoring {

struct PowerScore {
  Component component;                // name kPower, value 0..10, reason
  std::optional<double> delta_watts;  // as predicted (before clamping), when there is one
  bool known = false;                 // the value comes from a prediction or overcommit
};

// One result per element of `nodes`, in order; a node's reason is its delta ("+3.0 W").
// `summary`, when given, is set to the range the scores were spread over (e.g. "power: 3 nodes
// with a prediction add +2.0 W (score 10) to +12.0 W (score 0)"); left alone when no node
// has a prediction.
std::vector<PowerScore> ScorePower(const std::vector<predict::PowerEstimate>& nodes,
                                   const config::ScoringSettings& settings,
                                   std::string* summary = nullptr);

// The component values ScorePower gives the same nodes, without their reasons: for callers
// that score the same candidates for many pods and need only the numbers.
std::vector<double> PowerScoreValues(const std::vector<const predict::PowerEstimate*>& nodes,
                                     const config::ScoringSettings& settings);

// The CPU (cores) to predict the pod's power with: its effective request; for a pod that sets
// no CPU at all, the scheduler's scoring default (100m per container), noted in `note`.
double PodPowerCpuCores(const kube::PodResources& pod, std::string* note);

}  // namespace powerctl::scoring
