#pragma once
// doctor's "drained-nodes" check: the nodes `consolidate apply` drained and whether each still
// keeps its mark's promise (consolidate/marked_nodes.h says what drift is). With
// telemetry.modelAccuracy on, a drained node's measured power tells whether it is still on.

#include "core/common/http_client.h"
#include "core/config/config.h"
#include "core/kube/client.h"
#include "core/setup/doctor.h"

#include <chrono>

namespace powerctl::setup {

inline constexpr char kDrainedNodesCheckId[] = "drained-nodes";

// PASS "no node is drained" or "N drained, about W W saved once switched off"; WARN naming
// each node that drifted and what to run; WARN when the nodes cannot be read. With
// telemetry.modelAccuracy on, the drained nodes' measured watts are read in one Prometheus
// query through `http` (a libcurl client when null); when that fails the message says so and
// the kubelet's heartbeat alone judges whether a node is on.
CheckResult CheckDrainedNodes(kube::Client& client, std::chrono::system_clock::time_point now,
                              const config::PowerctlConfig& config, HttpClient* http = nullptr);

}  // namespace powerctl::setup
