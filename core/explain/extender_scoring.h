#pragma once
// Who computes a decision for `score` and `explain`: the running extender (POST /v1/score on
// its ops port, through the API server's service proxy, so an admin off-cluster gets the
// server's own telemetry, policy metrics and model), or this process (local_scoring), or the
// extender when it answers and this process otherwise (--source auto|local|extender, as in
// `powerctl predict`).

#include "core/explain/local_scoring.h"
#include "core/report/power_report.h"

namespace powerctl::explain {

// The service proxy path of the extender's /v1/score.
std::string ExtenderScorePath(const config::PowerctlConfig& config);

// Asks the running extender. kNotFound when its Service does not exist, API errors as they
// come, kInvalidInput when its answer is not a ScoreResult.
Result<ComputedDecision> DecideByExtender(kube::Client& kube, const config::PowerctlConfig& config,
                                          const nlohmann::json& pod,
                                          const std::vector<std::string>& candidates);

// By `source`; with kAuto a failure of the extender falls back to local, with a warning
// saying why.
Result<ComputedDecision> Decide(report::PredictSource source, const nlohmann::json& pod,
                                const std::vector<std::string>& candidates,
                                const ClusterObjects& objects, const config::PowerctlConfig& config,
                                const LocalScoringDeps& deps);

}  // namespace powerctl::explain
