#include "core/lb/endpoints.h"

#include "core/common/json_fields.h"
#include "core/common/names.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <set>

namespace powerctl::lb {
namespace {

using json = nlohmann::json;

constexpr const char* kV1 = "discovery.k8s.io/v1";
constexpr const char* kV1beta1 = "discovery.k8s.io/v1beta1";

Error BadSlice(const std::string& name, const std::string& what) {
  return MakeError(ErrorCode::kApi, fmt::format("EndpointSlice \"{}\": {}", name, what));
}

// v1 moved the v1beta1 `topology` map to `deprecatedTopology` (and `nodeName` to GA).
ServiceEndpoint NodeOf(const json& endpoint, const std::string& api_version) {
  ServiceEndpoint out;
  out.node = StringField(endpoint, {"nodeName"});
  if (!out.node.empty()) return out;
  const char* topology = api_version == kV1 ? "deprecatedTopology" : "topology";
  out.node = StringField(endpoint, {topology, kHostnameKey});
  out.node_is_hostname = !out.node.empty();
  return out;
}

Result<std::vector<EndpointPort>> ParsePorts(const json& slice, const std::string& name) {
  std::vector<EndpointPort> out;
  const json* ports = FindField(slice, {"ports"});
  if (ports == nullptr || ports->is_null()) return out;
  if (!ports->is_array()) return BadSlice(name, "ports is not a list");
  for (const json& port : *ports) {
    if (!port.is_object()) return BadSlice(name, "a port is not an object");
    EndpointPort p;
    p.name = StringField(port, {"name"});
    std::string protocol = StringField(port, {"protocol"});
    if (!protocol.empty()) p.protocol = protocol;
    const json* number = FindField(port, {"port"});
    if (number != nullptr && !number->is_null()) {
      if (!number->is_number_integer() || number->get<long long>() < 1 ||
          number->get<long long>() > 65535) {
        return BadSlice(name, "port \"" + p.name + "\" is not a number in 1..65535");
      }
      p.port = number->get<int>();
    }
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace

Result<SliceEndpoints> ParseEndpointSlice(const json& slice, const std::string& api_version) {
  std::string name = StringField(slice, {"metadata", "name"});
  const json* endpoints = FindField(slice, {"endpoints"});
  SliceEndpoints out;
  POWERCTL_TRY(ports, ParsePorts(slice, name));
  // A slice without endpoints has `endpoints: null` or no key at all.
  if (endpoints == nullptr || endpoints->is_null()) return out;
  if (!endpoints->is_array()) return BadSlice(name, "endpoints is not a list");
  for (const json& endpoint : *endpoints) {
    if (!endpoint.is_object()) return BadSlice(name, "an endpoint is not an object");
    const json* addresses = FindField(endpoint, {"addresses"});
    if (addresses == nullptr || !addresses->is_array() || addresses->empty() ||
        !(*addresses)[0].is_string()) {
      return BadSlice(name, "an endpoint has no addresses");
    }
    const json* ready = FindField(endpoint, {"conditions", "ready"});
    if (ready != nullptr && ready->is_boolean() && !ready->get<bool>()) {
      ++out.not_ready;
      continue;
    }
    ServiceEndpoint e = NodeOf(endpoint, api_version);
    e.address = (*addresses)[0].get<std::string>();
    if (StringField(endpoint, {"targetRef", "kind"}) == "Pod") {
      e.pod = StringField(endpoint, {"targetRef", "name"});
    }
    e.slice = name;
    e.ports = ports;
    out.ready.push_back(std::move(e));
  }
  return out;
}

Result<ServiceEndpoints> DiscoverEndpoints(kube::Client& kube, const std::string& namespace_,
                                           const std::string& service) {
  kube::ListOptions options;
  options.label_selector = std::string(kServiceNameLabel) + "=" + service;
  ServiceEndpoints out;
  std::vector<json> slices;
  for (const char* api_version : {kV1, kV1beta1}) {
    auto listed = kube.List(
        fmt::format("/apis/{}/namespaces/{}/endpointslices", api_version, namespace_), options);
    if (listed.ok()) {
      out.api_version = api_version;
      slices = std::move(*listed);
      break;
    }
    // 404 on the collection: this version of the API is not served (v1 before 1.21).
    if (listed.error().code != ErrorCode::kNotFound || api_version == std::string(kV1beta1)) {
      return WithContext(listed.error(), "EndpointSlices of service " + namespace_ + "/" + service);
    }
  }
  std::set<std::string> seen;
  for (const json& slice : slices) {
    POWERCTL_TRY(parsed, ParseEndpointSlice(slice, out.api_version));
    out.not_ready += parsed.not_ready;
    // While a controller moves an endpoint between slices it may be listed in both.
    for (ServiceEndpoint& e : parsed.ready) {
      if (seen.insert(e.address).second) out.ready.push_back(std::move(e));
    }
  }
  return out;
}

Result<std::vector<json>> FetchEndpointNodes(kube::Client& kube,
                                             const std::vector<ServiceEndpoint>& endpoints,
                                             std::size_t list_threshold) {
  std::set<std::pair<std::string, bool>> wanted;  // (name or hostname, is hostname)
  for (const ServiceEndpoint& e : endpoints) {
    if (!e.node.empty()) wanted.emplace(e.node, e.node_is_hostname);
  }
  if (wanted.empty()) return std::vector<json>{};
  if (wanted.size() > list_threshold) return kube.List("/api/v1/nodes");
  std::vector<json> out;
  std::set<std::string> have;
  auto add = [&](json node) {
    if (have.insert(StringField(node, {"metadata", "name"})).second) out.push_back(std::move(node));
  };
  for (const auto& [value, is_hostname] : wanted) {
    // The values come from EndpointSlices anyone with edit rights in a namespace can write:
    // only a valid label value goes into a selector, only a valid name into a path.
    if (is_hostname && ValidateLabelValue(value).empty()) {
      kube::ListOptions options;
      options.label_selector = std::string(kHostnameKey) + "=" + value;
      POWERCTL_TRY(labelled, kube.List("/api/v1/nodes", options));
      if (!labelled.empty()) {
        for (json& node : labelled) add(std::move(node));
        continue;
      }
    }
    if (!ValidateDnsSubdomain(value).empty()) continue;
    auto node = kube.Get("/api/v1/nodes/" + value);
    if (node.ok()) {
      add(std::move(*node));
    } else if (node.error().code != ErrorCode::kNotFound) {
      return node.error();
    }
  }
  return out;
}

NodeResolver::NodeResolver(const std::vector<json>& nodes) {
  for (const json& node : nodes) {
    std::string name = StringField(node, {"metadata", "name"});
    if (name.empty()) continue;
    by_name_[name] = name;
    std::string hostname = StringField(node, {"metadata", "labels", kHostnameKey});
    if (!hostname.empty()) by_hostname_.emplace(hostname, name);
  }
}

std::string NodeResolver::Resolve(const ServiceEndpoint& endpoint) const {
  if (endpoint.node.empty()) return "";
  if (endpoint.node_is_hostname) {
    auto it = by_hostname_.find(endpoint.node);
    if (it != by_hostname_.end()) return it->second;
  }
  // A hostname label that no node carries: the name is the usual value.
  auto it = by_name_.find(endpoint.node);
  return it == by_name_.end() ? "" : it->second;
}

}  // namespace powerctl::lb
