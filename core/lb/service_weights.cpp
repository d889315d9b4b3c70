#include "core/lb/service_weights.h"

#include "core/common/json_fields.h"
#include "core/common/names.h"
#include "core/kube/quantity.h"
#include "core/predict/node_power_json.h"

#include <fmt/format.h>

#include <map>
#include <set>

namespace powerctl::lb {
namespace {

using json = nlohmann::json;

// Failures of the prediction step that are the user's to fix, or bugs: reported, not hidden
// behind default weights.
bool IsFatal(ErrorCode code) {
  return code == ErrorCode::kInvalidInput || code == ErrorCode::kInterrupted ||
         code == ErrorCode::kInternal;
}

Result<json> GetService(kube::Client& kube, const std::string& ns, const std::string& name) {
  auto service = kube.Get(fmt::format("/api/v1/namespaces/{}/services/{}", ns, name));
  if (!service.ok() && service.error().code == ErrorCode::kNotFound) {
    return MakeError(ErrorCode::kNotFound, fmt::format("service \"{}/{}\" not found", ns, name));
  }
  return service;
}

Status ReadCpuPerRequest(const json& service, const config::PowerctlConfig& config,
                         ServiceWeights& out) {
  std::string annotation =
      StringField(service, {"metadata", "annotations", kCpuPerRequestAnnotation});
  out.cpu_per_request = annotation.empty() ? config.lb.cpu_per_request : annotation;
  out.cpu_source = annotation.empty() ? std::string("lb.cpuPerRequest")
                                      : std::string("annotation ") + kCpuPerRequestAnnotation;
  auto cores = kube::ParseCpuCores(out.cpu_per_request);
  if (!cores.ok() || !(*cores > 0) || *cores > 1e6) {
    return MakeError(ErrorCode::kInvalidInput,
                     fmt::format("service \"{}/{}\": {} \"{}\": not a positive CPU quantity (e.g. "
                                 "100m or 0.5)",
                                 out.namespace_, out.service, out.cpu_source, out.cpu_per_request));
  }
  out.cpu_cores = *cores;
  return OkStatus();
}

}  // namespace

bool ServiceWeights::complete() const {
  for (const EndpointRow& row : endpoints) {
    if (row.weight.basis == WeightBasis::kUnknown) return false;
  }
  return true;
}

Result<ServiceWeights> ComputeServiceWeights(const std::string& namespace_,
                                             const std::string& service,
                                             const config::PowerctlConfig& config,
                                             const report::PredictDependencies& deps) {
  if (deps.kube == nullptr || deps.http == nullptr) {
    return MakeError(ErrorCode::kInternal, "ComputeServiceWeights: missing dependencies");
  }
  if (std::string why = ValidateDnsLabel(service); !why.empty()) {
    return MakeError(ErrorCode::kInvalidInput, "service name \"" + service + "\": " + why);
  }
  if (std::string why = ValidateDnsLabel(namespace_); !why.empty()) {
    return MakeError(ErrorCode::kInvalidInput, "namespace \"" + namespace_ + "\": " + why);
  }
  POWERCTL_TRY(service_object, GetService(*deps.kube, namespace_, service));
  return ComputeWeightsForService(service_object, config, deps);
}

Result<ServiceWeights> ComputeWeightsForService(const json& service_object,
                                                const config::PowerctlConfig& config,
                                                const report::PredictDependencies& deps) {
  if (deps.kube == nullptr || deps.http == nullptr) {
    return MakeError(ErrorCode::kInternal, "ComputeWeightsForService: missing dependencies");
  }
  ServiceWeights out;
  out.namespace_ = StringField(service_object, {"metadata", "namespace"});
  out.service = StringField(service_object, {"metadata", "name"});
  out.now = deps.clock.now();
  if (Status cpu = ReadCpuPerRequest(service_object, config, out); !cpu.ok()) return cpu.error();
  POWERCTL_TRY(found, DiscoverEndpoints(*deps.kube, out.namespace_, out.service));
  out.slice_api = found.api_version;
  out.not_ready = found.not_ready;
  if (found.ready.empty()) return out;

  POWERCTL_TRY(nodes, FetchEndpointNodes(*deps.kube, found.ready));
  NodeResolver resolver(nodes);
  std::set<std::string> used;  // the nodes behind the endpoints
  for (ServiceEndpoint& e : found.ready) {
    EndpointRow row;
    row.node = resolver.Resolve(e);
    row.endpoint = std::move(e);
    if (!row.node.empty()) used.insert(row.node);
    out.endpoints.push_back(std::move(row));
  }
  std::vector<json> node_objects;
  for (json& node : nodes) {
    if (used.count(StringField(node, {"metadata", "name"})) > 0) {
      node_objects.push_back(std::move(node));
    }
  }

  std::map<std::string, predict::NodePower> powers;
  if (!node_objects.empty()) {
    auto report = report::PredictLocally(node_objects, out.cpu_cores, config, deps);
    if (!report.ok() && IsFatal(report.error().code)) return report.error();
    if (report.ok()) {
      out.answered_by = report->answered_by;
      out.now = report->now;
      for (predict::NodePower& p : report->nodes) powers[p.node] = std::move(p);
    } else {
      out.prediction_error = report.error().message;
    }
  }

  std::vector<EndpointPrediction> predictions;
  for (EndpointRow& row : out.endpoints) {
    EndpointPrediction p;
    if (row.node.empty()) {
      p.error = row.endpoint.node.empty() ? std::string("the endpoint names no node")
                                          : fmt::format("node \"{}\" not found", row.endpoint.node);
    } else if (auto it = powers.find(row.node); it != powers.end()) {
      row.power = it->second;
      p.watts_now = it->second.watts_now;
      p.watts_after = it->second.watts_after;
      p.saturated = it->second.overcommitted;
      p.error = it->second.error;
    } else {
      p.error = out.prediction_error.empty() ? "no prediction for the node"
                                             : "no predictions: " + out.prediction_error;
    }
    predictions.push_back(std::move(p));
  }
  std::vector<EndpointWeight> weights = ComputeWeights(predictions, config.lb.unknown_weight);
  for (std::size_t i = 0; i < weights.size(); ++i) out.endpoints[i].weight = weights[i];
  return out;
}

json ServiceWeightsToJson(const ServiceWeights& w) {
  json endpoints = json::array();
  for (const EndpointRow& row : w.endpoints) {
    json e = {{"address", row.endpoint.address},
              {"node", row.node.empty() ? json(nullptr) : json(row.node)},
              {"pod", row.endpoint.pod.empty() ? json(nullptr) : json(row.endpoint.pod)},
              {"endpointSlice", row.endpoint.slice},
              {"weight", row.weight.weight},
              {"basis", WeightBasisName(row.weight.basis)},
              {"deltaWatts", row.weight.delta_watts ? json(*row.weight.delta_watts) : json()},
              {"reason", row.weight.reason}};
    e["prediction"] = row.power ? predict::NodePowerToJson(*row.power, w.now) : json(nullptr);
    endpoints.push_back(std::move(e));
  }
  json out = {{"apiVersion", "powerctl.io/v1alpha1"},
              {"kind", kServiceWeightsKind},
              {"namespace", w.namespace_},
              {"service", w.service},
              {"endpointSliceApi", w.slice_api},
              {"cpuPerRequest",
               {{"value", w.cpu_per_request}, {"cores", w.cpu_cores}, {"source", w.cpu_source}}},
              {"notReadyEndpoints", w.not_ready},
              {"answeredBy", w.answered_by},
              {"endpoints", endpoints}};
  if (!w.prediction_error.empty()) out["predictionError"] = w.prediction_error;
  return out;
}

}  // namespace powerctl::lb
