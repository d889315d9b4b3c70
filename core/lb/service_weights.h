#pragma once
// `powerctl lb weights SERVICE`: the Service's ready endpoints, their nodes' predicted watts
// now and after one more request's CPU (computed here, as `predict --source local` does),
// and the weights of weights.h. The lb-agent gathers the same way.

#include "core/common/result.h"
#include "core/config/config.h"
#include "core/lb/endpoints.h"
#include "core/lb/weights.h"
#include "core/predict/node_power.h"
#include "core/report/power_report.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace powerctl::lb {

inline constexpr const char* kCpuPerRequestAnnotation = "powerctl.io/cpu-per-request";
inline constexpr const char* kServiceWeightsKind = "ServiceWeights";

struct EndpointRow {
  ServiceEndpoint endpoint;
  std::string node;  // resolved node name; "" when none
  std::optional<predict::NodePower> power;
  EndpointWeight weight;
};

struct ServiceWeights {
  std::string namespace_;
  std::string service;
  std::string slice_api;        // discovery.k8s.io/v1 or v1beta1
  std::string cpu_per_request;  // as written
  std::string cpu_source;       // "annotation powerctl.io/cpu-per-request" or "lb.cpuPerRequest"
  double cpu_cores = 0;
  int not_ready = 0;
  std::string answered_by;       // how the predictions were made
  std::string prediction_error;  // set when no prediction could be made at all
  std::vector<EndpointRow> endpoints;
  telemetry::SteadyTime now{};

  bool complete() const;  // every endpoint has a prediction
};

// kNotFound for a missing Service, kInvalidInput for a bad name or cpu-per-request. When the
// telemetry or model cannot answer at all, every endpoint gets the default weight and
// `prediction_error` says why: balancing never stops for want of predictions.
Result<ServiceWeights> ComputeServiceWeights(const std::string& namespace_,
                                             const std::string& service,
                                             const config::PowerctlConfig& config,
                                             const report::PredictDependencies& deps);

// The same for a Service object already read (the lb-agent has them from its watch).
Result<ServiceWeights> ComputeWeightsForService(const nlohmann::json& service,
                                                const config::PowerctlConfig& config,
                                                const report::PredictDependencies& deps);

// {"kind": "ServiceWeights", "service": ..., "endpoints": [...]} for -o json|yaml.
nlohmann::json ServiceWeightsToJson(const ServiceWeights& weights);

}  // namespace powerctl::lb
