#include "core/predict/node_params.h"

#include "core/common/encoding.h"
#include "core/config/names.h"
#include "core/predict/builtin_model.h"
#include "core/predict/http_batch.h"

#include <charconv>
#include <cmath>
#include <system_error>

namespace powerctl::predict {
namespace {

Error Invalid(std::string message) {
  return MakeError(ErrorCode::kInvalidInput, std::move(message));
}

// Reads annotation `key` into `field` when present; plain decimal only (no spaces, no hex,
// no "inf"), so what kubectl shows is exactly what the model uses.
Status ReadNumber(const std::map<std::string, std::string>& annotations, const char* key,
                  double& field) {
  auto it = annotations.find(key);
  if (it == annotations.end()) return OkStatus();
  const std::string& text = it->second;
  double value = 0;
  const char* first = text.data();
  const char* last = text.data() + text.size();
  auto [end, ec] = std::from_chars(first, last, value, std::chars_format::fixed);
  if (text.empty() || ec != std::errc() || end != last || !std::isfinite(value)) {
    return Invalid("annotation " + std::string(key) + "=\"" + text + "\": not a decimal number");
  }
  field = value;
  return OkStatus();
}

const std::string* Find(const std::map<std::string, std::string>& labels, const char* key) {
  auto it = labels.find(key);
  return it == labels.end() ? nullptr : &it->second;
}

Result<int> ParsePort(const std::string& text) {
  int port = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), port);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || port < 1 ||
      port > 65535) {
    return Invalid("label " + std::string(kModelPortLabel) + "=\"" + text +
                   "\": must be a port number 1-65535");
  }
  return port;
}

Result<ModelEndpoint> FromLabels(const std::map<std::string, std::string>& labels,
                                 ModelEndpoint endpoint) {
  const std::string* host = Find(labels, kModelHostLabel);
  const std::string* port = Find(labels, kModelPortLabel);
  const std::string* name = Find(labels, kModelNameLabel);
  if (host == nullptr || port == nullptr || name == nullptr) {
    return Invalid(
        "node has some tensorflow/* labels but not all of tensorflow/host, "
        "tensorflow/port and tensorflow/name");
  }
  if (!IsUrlSafeSegment(*host)) {
    return Invalid("label " + std::string(kModelHostLabel) + "=\"" + *host +
                   "\": not a host name or IPv4 address");
  }
  if (!IsUrlSafeSegment(*name)) {
    return Invalid("label " + std::string(kModelNameLabel) + "=\"" + *name +
                   "\": not a model name");
  }
  POWERCTL_TRY(port_number, ParsePort(*port));
  endpoint.host = *host;
  endpoint.port = port_number;
  endpoint.name = *name;
  if (const std::string* version = Find(labels, kModelVersionLabel);
      version != nullptr && !version->empty()) {
    // Unlike MinimizePower, which ignores a bad version and silently uses the latest model.
    if (!IsUrlSafeSegment(*version)) {
      return Invalid("label " + std::string(kModelVersionLabel) + "=\"" + *version +
                     "\": not a model version");
    }
    endpoint.version = *version;
  }
  if (const std::string* signature = Find(labels, kModelSignatureLabel); signature != nullptr) {
    endpoint.signature = *signature;
  }
  return endpoint;
}

}  // namespace

Result<BuiltinParams> BuiltinParamsFromAnnotations(
    const std::map<std::string, std::string>& annotations, const BuiltinParams& defaults) {
  BuiltinParams params = defaults;
  POWERCTL_CHECK_OK(ReadNumber(annotations, kIdleWattsAnnotation, params.idle_watts));
  POWERCTL_CHECK_OK(ReadNumber(annotations, kMaxWattsAnnotation, params.max_watts));
  POWERCTL_CHECK_OK(ReadNumber(annotations, kCurveAnnotation, params.curve));
  POWERCTL_CHECK_OK(
      ReadNumber(annotations, kTemperatureFactorAnnotation, params.temperature_factor));
  // A measured curve, when present, decides the shape and both ends.
  if (auto it = annotations.find(kPowerCurveAnnotation); it != annotations.end()) {
    auto curve = ParsePowerCurve(it->second);
    if (!curve.ok()) {
      return WithContext(curve.error(), "annotation " + std::string(kPowerCurveAnnotation) + "=\"" +
                                            ExcerptForMessage(it->second, 120) + "\"");
    }
    params = WithPowerCurve(params, *curve);
  }
  if (Status valid = ValidateBuiltinParams(params); !valid.ok()) {
    return WithContext(valid.error(), "annotations powerctl.io/*");
  }
  return params;
}

Result<ModelEndpoint> ModelEndpointForNode(const std::map<std::string, std::string>& labels,
                                           const config::PowerctlConfig& config) {
  const config::PredictorSettings& settings = config.predictor;
  ModelEndpoint endpoint;
  endpoint.backend = settings.backend;
  if (settings.backend == "builtin") return endpoint;
  if (settings.backend != "tfserving-grpc" && settings.backend != "tfserving-rest" &&
      settings.backend != "v2") {
    return Invalid("predictor.backend \"" + settings.backend +
                   "\": must be builtin, tfserving-grpc, tfserving-rest or v2");
  }
  for (const char* key : {kModelHostLabel, kModelPortLabel, kModelNameLabel, kModelVersionLabel,
                          kModelSignatureLabel}) {
    if (labels.count(key) != 0) return FromLabels(labels, endpoint);
  }
  endpoint.host = settings.model.host.empty()
                      ? config::NamesFor(config).model + "." + config.namespace_ + ".svc"
                      : settings.model.host;
  endpoint.port =
      settings.backend == "tfserving-grpc" ? settings.model.grpc_port : settings.model.rest_port;
  endpoint.name = settings.model.name;
  endpoint.version = settings.model.version;
  endpoint.signature = settings.model.signature;
  return endpoint;
}

}  // namespace powerctl::predict
