#pragma once
// doctor's "model-accuracy" check: each node's predicted power now (the configured model at the
// CPU telemetry measures, as `predict --source local` computes it) against its measured power
// (telemetry.powerSource over telemetry.powerRateWindow). `explain pod` reads the same
// comparison for the node it explains.

#include "core/common/http_client.h"
#include "core/common/result.h"
#include "core/config/config.h"
#include "core/kube/client.h"
#include "core/predict/model_accuracy.h"
#include "core/setup/doctor.h"

#include <string>
#include <vector>

namespace powerctl::setup {

inline constexpr char kModelAccuracyCheckId[] = "model-accuracy";

// The model against measured power on `only` (every node when empty): the nodes from the API
// server, CPU and temperatures from the configured telemetry sources, watts from the
// configured model, measured power from Prometheus in one query. An error when a source, the
// model or Prometheus cannot be set up or fails as a whole.
Result<predict::ModelAccuracy> MeasureModelAccuracy(kube::Client& client, HttpClient& http,
                                                    const config::PowerctlConfig& config,
                                                    const std::vector<std::string>& only = {});

// The verdict on a comparison: FAIL when a node is telemetry.modelErrorFail per cent off or
// more, WARN at modelErrorWarn, naming the worst nodes and `powerctl calibrate NODE`; WARN
// when no node could be compared, with why; PASS with the mean error otherwise.
CheckResult JudgeModelAccuracy(const predict::ModelAccuracy& accuracy,
                               const config::PowerctlConfig& config);

// SKIP when telemetry.modelAccuracy is off; WARN when the comparison cannot be made.
CheckResult CheckModelAccuracy(kube::Client& client, HttpClient* http,
                               const config::PowerctlConfig& config);

}  // namespace powerctl::setup
