#pragma once
// The JSON form of NodePower: `powerctl predict -o json`, and the read-only document the
// extender serves on its ops port (GET /v1/predictions), which `predict` reads back when the
// extender answers. Times travel as ages in seconds, so clocks of the two sides never mix.
// Besides the watts, each node carries "fillWattsPerCore" and, for the built-in model, its
// form in "model": {"form": "curve", "curve": [11 watts]} or {"form": "exponent",
// "idleWatts", "maxWatts", "exponent"}, both with "temperatureFactor". "cpu" holds the
// measurement ("value"), the requests of pods not yet in the usage metrics
// ("unmeasuredRequestCores", "unmeasuredPods") and their sum ("usedCores"), which the
// fractions and the watts are computed from.

#include "core/common/result.h"
#include "core/predict/node_power.h"

#include <nlohmann/json.hpp>

#include <vector>

namespace powerctl::predict {

inline constexpr const char* kPredictionsPath = "/v1/predictions";
inline constexpr const char* kPredictionKind = "PowerPrediction";

nlohmann::json NodePowerToJson(const NodePower& power, telemetry::SteadyTime now);

// Reads what NodePowerToJson wrote (ages become times before `now`). Unknown keys are
// ignored; a wrong type or a missing node name is kApi naming the field, and the document
// as a whole is refused. Never throws.
Result<NodePower> NodePowerFromJson(const nlohmann::json& object, telemetry::SteadyTime now);

// {"kind": "PowerPrediction", "cpuAdded": cores, "nodes": [...]}.
nlohmann::json PredictionDocument(const std::vector<NodePower>& nodes, double cpu_added,
                                  telemetry::SteadyTime now);
struct PredictionDocumentContents {
  double cpu_added = 0;
  std::vector<NodePower> nodes;
};
Result<PredictionDocumentContents> ParsePredictionDocument(const nlohmann::json& document,
                                                           telemetry::SteadyTime now);

}  // namespace powerctl::predict
