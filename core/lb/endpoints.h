#pragma once
// A Service's ready endpoints and the node each one runs on, from its EndpointSlices
// (label kubernetes.io/service-name). discovery.k8s.io/v1 is served from 1.21; 1.20 has
// only v1beta1, where the node is `nodeName` when the (alpha) EndpointSliceNodeName gate
// set it, else the `kubernetes.io/hostname` topology key, which carries the node's
// kubernetes.io/hostname label (usually, not always, the node's name).

#include "core/common/result.h"
#include "core/kube/client.h"

#include <nlohmann/json_fwd.hpp>

#include <map>
#include <string>
#include <vector>

namespace powerctl::lb {

inline constexpr const char* kServiceNameLabel = "kubernetes.io/service-name";
inline constexpr const char* kHostnameKey = "kubernetes.io/hostname";

// A port of an EndpointSlice: the Service port of the same name (and protocol) is served on
// `port` at every endpoint of the slice.
struct EndpointPort {
  std::string name;  // "" for a Service's single unnamed port
  int port = 0;      // 0: the slice names no port (the Service port is used as is)
  std::string protocol = "TCP";
  bool operator==(const EndpointPort&) const = default;
};

struct ServiceEndpoint {
  std::string address;  // the first address (the API says they are fungible)
  std::string node;     // node name or, when `node_is_hostname`, a hostname label value
  bool node_is_hostname = false;
  std::string pod;                  // targetRef name when it is a Pod
  std::string slice;                // the EndpointSlice it came from
  std::vector<EndpointPort> ports;  // the slice's ports
};

struct SliceEndpoints {
  std::vector<ServiceEndpoint> ready;
  int not_ready = 0;  // endpoints left out because conditions.ready is false
};

// The ready endpoints of one EndpointSlice of `api_version` ("discovery.k8s.io/v1" or
// "discovery.k8s.io/v1beta1"). A missing `ready` condition counts as ready, as the API
// asks of consumers. kApi when the object is not a slice (endpoints not a list, ...).
Result<SliceEndpoints> ParseEndpointSlice(const nlohmann::json& slice,
                                          const std::string& api_version);

struct ServiceEndpoints {
  std::string api_version;             // the discovery API the slices were read with
  std::vector<ServiceEndpoint> ready;  // by address, each address once
  int not_ready = 0;
};

// Lists the Service's slices with discovery.k8s.io/v1 and falls back to v1beta1 when the
// server does not serve v1 (404), so 1.20 clusters work without a version probe.
Result<ServiceEndpoints> DiscoverEndpoints(kube::Client& kube, const std::string& namespace_,
                                           const std::string& service);

// The Node objects behind `endpoints` (by name, or by the kubernetes.io/hostname label), for
// NodeResolver: one GET per node for a few nodes, one List of every node past
// `list_threshold` distinct nodes. Nodes that do not exist are left out (NodeResolver then
// resolves their endpoints to "").
Result<std::vector<nlohmann::json>> FetchEndpointNodes(
    kube::Client& kube, const std::vector<ServiceEndpoint>& endpoints,
    std::size_t list_threshold = 20);

// Node names for endpoints, by name or through the kubernetes.io/hostname label of `nodes`
// (Node objects). Returns the node name, or "" when no node matches.
class NodeResolver {
 public:
  explicit NodeResolver(const std::vector<nlohmann::json>& nodes);
  std::string Resolve(const ServiceEndpoint& endpoint) const;

 private:
  std::map<std::string, std::string> by_name_;      // name -> name
  std::map<std::string, std::string> by_hostname_;  // label value -> name
};

}  // namespace powerctl::lb
