#pragma once
// The power component of a node's score: how many watts the node is predicted to add if the
// pod lands there (predict::PowerEstimate, computed for the pod's CPU), turned into 0..10.
//
//   * nodes with a prediction: proportional to the delta, not by rank: the lowest delta
//     gets 10, the highest 0, linear in between; when all deltas are equal (within 1e-6 W)
//     they all get 10. A negative delta (a non-monotone model) counts as 0 W and says so.
//   * overcommitted nodes (usage + the pod's CPU > capacity): 0, with that reason, whether or
//     not the model answered; they do not widen the range of the others.
//   * nodes without a prediction: ScoringSettings.unknown_score, the NodePower error as the
//     reason; they do not affect the others either.
//
// Fixes to the seed's MinimizePower (shared/reference/wao.md), by section:
//   §1.3/§1.4/§1.8 errors were encoded as raw score -1 and NormalizeScore mapped every
//     negative raw score to 0, so a failed node looked like the worst node and a genuine
//     power decrease looked like a failure: here errors get unknown_score with their reason,
//     and negative deltas are clamped to 0 W (best), as WAO v2 does.
//   §1.5 step 3 only Containers[0] was read, limits*0.85 standing in for a missing request:
//     the CPU comes from PodPowerCpuCores (all containers, init containers, sidecars, overhead).
//   §1.5 step 4 overcommit was another -1 -> 0 indistinguishable from an error: here it is 0
//     with its own reason.
//   §1.6 inputs rounded to 0.1 zeroed the delta of small pods (predict/node_power does not
//     round); §1.8 the delta was truncated to int64 watts and normalised with integer division
//     on 0..100: here the exact double delta is used.
//   §1.8 all-equal deltas got 10 on the 0..100 scale (nearly worst): here they get 10 of 10.

#include "core/manifests/config.h"
#include "core/predict/node_power.h"
#include "core/scoring/combine.h"
#include "core/scoring/pod_resources.h"

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
                                   const manifests::ScoringSettings& settings,
                                   std::string* summary = nullptr);

// The CPU (cores) to predict the pod's power with: its effective request; for a pod that sets
// no CPU at all, the scheduler's scoring default (100m per container), noted in `note`.
double PodPowerCpuCores(const PodResources& pod, std::string* note);

}  // namespace powerctl::scoring
