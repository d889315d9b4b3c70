#pragma once
// doctor's "lb-agent" check: the agent DaemonSet ready on every node it should run on, and
// each running agent's own account of its programming, read from its GET /status through the
// API server's pod proxy (the ops port is plain HTTP on the node; the CLI may be off-cluster).

#include "core/config/config.h"
#include "core/kube/client.h"
#include "core/setup/doctor.h"

#include <string>

namespace powerctl::setup {

inline constexpr char kLbAgentCheckId[] = "lb-agent";

// SKIP when the DaemonSet does not exist in the config's namespace: the agent is opt-in.
// FAIL when agents are not ready (naming their nodes), when an agent's last programming
// failed (kube-proxy carries that node's traffic) or a Service failed; WARN when Services
// are skipped or a status cannot be read; PASS "N nodes balancing M Services".
CheckResult CheckLbAgent(kube::Client& client, const config::PowerctlConfig& config);

// /api/v1/namespaces/NS/pods/POD:PORT/proxy/status
std::string LbAgentStatusPath(const std::string& ns, const std::string& pod, int port);

}  // namespace powerctl::setup
