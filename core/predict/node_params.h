#pragma once
// Per-node predictor settings read from the Node object: the built-in model's parameters from
// annotations, and which model serves the node from the `tensorflow/*` labels WAO's
// MinimizePower plugin reads or, for unlabelled nodes, from powerctl.yaml. Pure: callers pass
// the node's maps.

#include "core/common/result.h"
#include "core/config/config.h"
#include "core/predict/predictor.h"

#include <map>
#include <string>

namespace powerctl::predict {

// Built-in model annotations (numbers as plain decimal text, e.g. "135.5"), all under
// kPowerctlAnnotationPrefix.
inline constexpr const char* kPowerctlAnnotationPrefix = "powerctl.io/";
inline constexpr const char* kIdleWattsAnnotation = "powerctl.io/idle-watts";
inline constexpr const char* kMaxWattsAnnotation = "powerctl.io/max-watts";
inline constexpr const char* kCurveAnnotation = "powerctl.io/curve";
inline constexpr const char* kTemperatureFactorAnnotation = "powerctl.io/temperature-factor";
// The node's measured curve, "W0,W10,...,W100" (ParsePowerCurve): when present it replaces
// idle-watts, max-watts and curve.
inline constexpr const char* kPowerCurveAnnotation = "powerctl.io/power-curve";

// Model labels, exactly as WAO's MinimizePower plugin reads them
// (docs/reference/minimizepower.md, "Node labels").
inline constexpr const char* kModelHostLabel = "tensorflow/host";
inline constexpr const char* kModelPortLabel = "tensorflow/port";
inline constexpr const char* kModelNameLabel = "tensorflow/name";
inline constexpr const char* kModelVersionLabel = "tensorflow/version";
inline constexpr const char* kModelSignatureLabel = "tensorflow/signature";

// Missing annotations keep `defaults`. A present but malformed or out-of-range one is an
// error naming it, not a silent fallback: a typo must not give the node confident numbers
// from someone else's machine. The combination is checked too (max-watts > idle-watts).
Result<BuiltinParams> BuiltinParamsFromAnnotations(
    const std::map<std::string, std::string>& annotations, const BuiltinParams& defaults = {});

// The endpoint for a node's rows. The backend is always powerctl.yaml's predictor.backend
// (the labels say where the model is, not which protocol it speaks).
//  * builtin: no server, labels ignored.
//  * any tensorflow/* label present: tensorflow/host, /port and /name are all required;
//    /version and /signature are optional and, when absent, mean latest and the server's
//    default signature (the labels describe the node's model on their own, as for MinimizePower).
//    tensorflow/port is the port of the configured protocol (gRPC for tfserving-grpc).
//  * no labels: predictor.model.host, by default the Service that `powerctl generate model`
//    creates (<model>.<namespace>.svc), its gRPC or REST port, and predictor.model's name,
//    version and signature.
Result<ModelEndpoint> ModelEndpointForNode(const std::map<std::string, std::string>& labels,
                                           const config::PowerctlConfig& config);

}  // namespace powerctl::predict
