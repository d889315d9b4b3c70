#pragma once
// The per-node table `score` and `explain pod` share: kube-scheduler's checks, the extender's
// gate, watts, each score component and the final score, best first.

#include "core/explain/score.h"

#include <iosfwd>
#include <string>
#include <vector>

namespace powerctl::cli {

// `chosen`: the node the pod is bound to, marked "*" in the first column ("" for none).
// FILL (W/core) follows DELTA when the power score ranked by fill cost. Wide adds the watts
// before and after and every reason.
void PrintNodeScores(std::ostream& out, const std::vector<explain::NodeScore>& nodes, bool wide,
                     const std::string& chosen);
// "Not scored:" and one line per node that failed a check or a gate, with its reason.
void PrintNotScored(std::ostream& out, const std::vector<explain::NodeScore>& nodes);

}  // namespace powerctl::cli
