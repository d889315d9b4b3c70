#pragma once
// doctor's "drained-nodes" check: the nodes `consolidate apply` drained and whether each still
// keeps its mark's promise (consolidate/marked_nodes.h says what drift is).

#include "core/kube/client.h"
#include "core/setup/doctor.h"

#include <chrono>

namespace powerctl::setup {

inline constexpr char kDrainedNodesCheckId[] = "drained-nodes";

// PASS "no node is drained" or "N drained, about W W saved once switched off"; WARN naming
// each node that drifted and what to run; WARN when the nodes cannot be read.
CheckResult CheckDrainedNodes(kube::Client& client, std::chrono::system_clock::time_point now);

}  // namespace powerctl::setup
