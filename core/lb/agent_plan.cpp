#include "core/lb/agent_plan.h"

#include "core/common/json_fields.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace powerctl::lb {
namespace {

using json = nlohmann::json;

struct ServicePort {
  std::string name;
  int port = 0;
  std::string protocol = "TCP";
};

std::vector<ServicePort> PortsOf(const json& service) {
  std::vector<ServicePort> out;
  const json* ports = FindField(service, {"spec", "ports"});
  if (ports == nullptr || !ports->is_array()) return out;
  for (const json& port : *ports) {
    ServicePort p;
    p.name = StringField(port, {"name"});
    std::string protocol = StringField(port, {"protocol"});
    if (!protocol.empty()) p.protocol = protocol;
    const json* number = FindField(port, {"port"});
    if (number != nullptr && number->is_number_integer()) p.port = number->get<int>();
    out.push_back(std::move(p));
  }
  return out;
}

// The port the endpoint serves the Service port on, or 0 when its slice has no such port.
int TargetPort(const ServiceEndpoint& endpoint, const ServicePort& port) {
  for (const EndpointPort& p : endpoint.ports) {
    if (p.name == port.name && p.protocol == port.protocol) return p.port;
  }
  return 0;
}

}  // namespace

const char* ServiceStateName(ServiceState state) {
  switch (state) {
    case ServiceState::kBalanced:
      return "balanced";
    case ServiceState::kSkipped:
      return "skipped";
    case ServiceState::kFailed:
      return "failed";
  }
  return "unknown";
}

bool HasLoadBalancingAnnotation(const json& service) {
  const json* value = FindField(service, {"metadata", "annotations", kLoadBalancingAnnotation});
  return value != nullptr && value->is_string();
}

std::string LeftToKubeProxy(const json& service) {
  std::string value = StringField(service, {"metadata", "annotations", kLoadBalancingAnnotation});
  if (value != kPowerAwareValue) {
    return fmt::format("annotation {}: \"{}\" is not \"{}\"", kLoadBalancingAnnotation, value,
                       kPowerAwareValue);
  }
  std::string type = StringField(service, {"spec", "type"});
  if (type == "ExternalName") return "type ExternalName has no cluster IP";
  std::string cluster_ip = StringField(service, {"spec", "clusterIP"});
  if (cluster_ip.empty() || cluster_ip == "None") return "headless Service: no cluster IP";
  if (CanonicalIpv4(cluster_ip).empty()) {
    return fmt::format("cluster IP {} is not IPv4: the agent balances IPv4 only", cluster_ip);
  }
  if (StringField(service, {"spec", "sessionAffinity"}) == "ClientIP") {
    return "sessionAffinity ClientIP: a client must keep its endpoint, which a weighted pick per "
           "connection does not do";
  }
  if (StringField(service, {"spec", "internalTrafficPolicy"}) == "Local") {
    return "internalTrafficPolicy Local: traffic must stay on the client's node";
  }
  return "";
}

PlannedService SkippedService(const json& service, ServiceState state, std::string reason) {
  PlannedService out;
  out.namespace_ = StringField(service, {"metadata", "namespace"});
  out.name = StringField(service, {"metadata", "name"});
  out.state = state;
  out.reason = std::move(reason);
  return out;
}

PlannedService PlanService(const json& service, const ServiceWeights& weights) {
  PlannedService out = SkippedService(service, ServiceState::kSkipped, "");
  out.rows = weights.endpoints;
  std::string cluster_ip = StringField(service, {"spec", "clusterIP"});
  for (const ServicePort& port : PortsOf(service)) {
    std::string label = fmt::format("{}/{}", port.port, port.protocol);
    if (port.protocol != "TCP" && port.protocol != "UDP") {
      out.notes.push_back(label + ": only TCP and UDP are balanced");
      continue;
    }
    if (port.port < 1 || port.port > 65535) {
      out.notes.push_back(label + ": not a port number");
      continue;
    }
    BalancedService balanced;
    balanced.namespace_name = out.namespace_;
    balanced.name = out.name;
    balanced.cluster_ip = cluster_ip;
    balanced.port = port.port;
    balanced.protocol = port.protocol;
    for (const EndpointRow& row : weights.endpoints) {
      int target = TargetPort(row.endpoint, port);
      if (target == 0 || CanonicalIpv4(row.endpoint.address).empty()) continue;
      balanced.endpoints.push_back({row.endpoint.address, target, row.weight.weight});
    }
    if (balanced.endpoints.empty()) {
      out.notes.push_back(label + ": no ready IPv4 endpoint serves this port");
      continue;
    }
    out.ports.push_back(std::move(balanced));
  }
  if (!out.ports.empty()) {
    out.state = ServiceState::kBalanced;
    bool any_predicted = false;
    std::string first_reason;
    for (const EndpointRow& row : weights.endpoints) {
      if (row.weight.basis != WeightBasis::kUnknown) any_predicted = true;
      if (first_reason.empty()) first_reason = row.weight.reason;
    }
    if (!weights.prediction_error.empty()) {
      out.reason = "no predictions (" + weights.prediction_error + "): equal weights";
    } else if (!any_predicted) {
      out.reason = "no endpoint's node has a prediction (" + first_reason + "): equal weights";
    } else if (!weights.complete()) {
      out.reason = "some endpoints have no prediction: they get lb.unknownWeight";
    }
  } else if (weights.endpoints.empty()) {
    out.reason = "no ready endpoints";
  } else {
    out.reason = "no port can be balanced";
  }
  return out;
}

}  // namespace powerctl::lb
