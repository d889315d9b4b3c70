#pragma once
// What the lb-agent does with one annotated Service (pure: no I/O): leave it to kube-proxy
// with the reason, or turn its ports and its endpoints' weights into BalancedServices for the
// balancer. Shared by the agent's sync and its /status.

#include "core/lb/nft_ruleset.h"
#include "core/lb/service_weights.h"

#include <nlohmann/json_fwd.hpp>

#include <string>
#include <vector>

namespace powerctl::lb {

inline constexpr const char* kLoadBalancingAnnotation = "powerctl.io/load-balancing";
inline constexpr const char* kPowerAwareValue = "power-aware";

// The Service carries the annotation (any value: a wrong value is reported, not ignored).
bool HasLoadBalancingAnnotation(const nlohmann::json& service);

// Why the agent must leave the Service to kube-proxy, or "" when it can balance it: an
// annotation value other than power-aware, no IPv4 cluster IP (headless, ExternalName,
// IPv6), sessionAffinity ClientIP (a client must keep its endpoint, which a random pick per
// connection does not), internalTrafficPolicy Local (traffic must stay on the client's node).
// externalTrafficPolicy Local is kept: it governs NodePort and load-balancer traffic, which
// the agent never touches (its rules match the cluster IP only).
std::string LeftToKubeProxy(const nlohmann::json& service);

enum class ServiceState {
  kBalanced,  // at least one port has rules
  kSkipped,   // left to kube-proxy on purpose (reason says why)
  kFailed,    // could not be worked out (weights or endpoints could not be read)
};
const char* ServiceStateName(ServiceState state);  // "balanced", "skipped", "failed"

struct PlannedService {
  std::string namespace_;
  std::string name;
  ServiceState state = ServiceState::kSkipped;
  std::string reason;                  // skipped/failed: why; balanced: a caveat or ""
  std::vector<BalancedService> ports;  // balanced ports, each with its weighted endpoints
  std::vector<std::string> notes;      // ports left to kube-proxy ("81/SCTP: ...")
  std::vector<EndpointRow> rows;       // the endpoints' nodes, predictions and weights
};

// The plan for a Service the agent may balance (LeftToKubeProxy returned "") from its
// endpoints' weights: one BalancedService per TCP/UDP port that has endpoints, the target
// port taken from the EndpointSlice port of the same name and protocol.
PlannedService PlanService(const nlohmann::json& service, const ServiceWeights& weights);

// A Service left to kube-proxy, or whose weights could not be computed.
PlannedService SkippedService(const nlohmann::json& service, ServiceState state,
                              std::string reason);

}  // namespace powerctl::lb
