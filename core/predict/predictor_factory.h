#pragma once
// Builds the predictor powerctl.yaml's predictor section selects. The built-in model is
// always registered as well, so rows routed to it (nodes of a builtin configuration) work
// whatever backend is configured.

#include "core/common/http_client.h"
#include "core/common/result.h"
#include "core/config/config.h"
#include "core/predict/predictor.h"

#include <chrono>
#include <memory>

namespace powerctl::predict {

class RoutingPredictor;

struct ConfiguredPredictor {
  std::unique_ptr<Predictor> predictor;
  RoutingPredictor* routing = nullptr;       // `predictor` itself, for FailingEndpoints()
  std::chrono::milliseconds deadline{1000};  // predictor.timeout
};

// kInvalidInput naming the predictor key for an unknown backend, request form or timeout.
// `http` is used by the REST backends and must outlive the predictor.
Result<ConfiguredPredictor> MakeConfiguredPredictor(const config::PredictorSettings& settings,
                                                    HttpClient& http);

}  // namespace powerctl::predict
