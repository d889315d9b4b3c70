#pragma once
// What each node's power cost was in a decision, and why the chosen node won, for `score` and
// `explain pod`. A decision (answered by the extender, or recorded on the pod as an Event)
// carries the fill cost only in its power component's reason, as the power score writes it
// ("+30.0 W, 15.00 W/core to fill", scoring/power_score.h): it is read back from there, so
// recorded decisions of any replica show it without a field of their own.

#include "core/config/config.h"
#include "core/explain/score.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace powerctl::explain {

// The W/core of "..., 15.00 W/core to fill" in a power reason; nullopt when it has none.
std::optional<double> FillWattsPerCoreFromReason(std::string_view reason);

// What ranked the scored nodes (manifests::kObjective*): "fill" when their power reasons carry
// fill costs, "marginal" when they carry only watts (scoring.objective=marginal, or a pod
// without CPU), "" when no node has a power prediction.
std::string RankingObjective(const std::vector<NodeScore>& nodes);

// One line saying why `chosen` won against the cheapest other scored node, e.g.
//   "node-b won: cheapest to fill, 9.80 W/core vs 12.10 W/core on node-a (next best)"
// or a tie on power (costs within scoring.tieTolerance both score 10) that kube-scheduler's
// other scores broke, or that other scores outweighed a cheaper node. "" when `chosen` was
// not scored.
std::string WhyChosen(const std::vector<NodeScore>& nodes, const std::string& chosen);

}  // namespace powerctl::explain
