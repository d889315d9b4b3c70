#pragma once
// The nftables text of powerctl's load-balancing table (pure: no I/O). One table of our own,
// `table ip powerctl-lb`, replaced whole in one transaction, so every apply is atomic and
// idempotent and never touches kube-proxy's tables. Its nat chains hook prerouting (traffic
// from pods and other hosts) and output (traffic from the node itself) at priority -101, one
// before kube-proxy's dstnat (-100): a connection DNATed here is not NATed again by kube-proxy,
// and a Service without a rule here falls through to kube-proxy unchanged.

#include "core/common/result.h"

#include <string>
#include <vector>

namespace powerctl::lb {

inline constexpr const char* kNftTableName = "powerctl-lb";
inline constexpr int kNftChainPriority = -101;  // kube-proxy's nat chains run at dstnat (-100)
inline constexpr int kMaxEndpointWeight = 100;

// One Service port to balance: traffic to cluster_ip:port/protocol goes to one of the
// endpoints, each chosen with probability weight / (sum of weights).
struct BalancedService {
  std::string namespace_name;
  std::string name;
  std::string cluster_ip;  // IPv4, dotted quad
  int port = 0;
  std::string protocol = "TCP";  // TCP or UDP, as in the Service spec

  struct Endpoint {
    std::string ip;  // IPv4
    int port = 0;    // the target port on the endpoint
    int weight = 0;  // 1..kMaxEndpointWeight
    bool operator==(const Endpoint&) const = default;
  };
  std::vector<Endpoint> endpoints;  // empty: no rule, kube-proxy answers as it does today
  bool operator==(const BalancedService&) const = default;
};

// "namespace/name:port/protocol": how logs, errors, comments and skipped ports name a port.
std::string PortLabel(const BalancedService& service);

// The canonical dotted quad of an IPv4 address, or "" when `text` is not one (only what
// inet_pton accepts: four decimal octets, no leading zeros, nothing else).
std::string CanonicalIpv4(const std::string& text);

// ErrorCode::kInvalidInput naming the Service and the first bad field: names that are not
// Kubernetes names, addresses that are not IPv4 dotted quads, ports outside 1..65535,
// protocols other than TCP/UDP, weights outside 1..100, an endpoint listed twice.
Status ValidateService(const BalancedService& service);

// The transaction replacing the table with one rule per Service port (validated first; two
// Services claiming the same address, port and protocol are an error). Services are written in
// the order given, endpoints too: the same input gives the same text.
Result<std::string> RenderNftRuleset(const std::vector<BalancedService>& services);

// The transaction removing the table; it succeeds whether or not the table exists.
std::string RenderNftRemoval();

}  // namespace powerctl::lb
