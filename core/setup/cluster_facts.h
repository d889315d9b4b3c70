#pragma once
// What `powerctl init` can learn from a reachable cluster to choose its defaults: the
// Kubernetes version, whether metrics.k8s.io is served, and a Prometheus Service.

#include "core/config/config.h"
#include "core/kube/client.h"

#include <optional>
#include <string>
#include <vector>

namespace powerctl::setup {

struct ClusterFacts {
  std::string server_version;                 // "v1.29.3" as the API server says it
  std::optional<std::string> minor_version;   // "1.29" when powerctl supports it
  bool metrics_api = false;                   // metrics.k8s.io/v1beta1 is served
  std::optional<std::string> prometheus_url;  // http://NAME.NAMESPACE.svc:PORT
  std::vector<std::string> notes;             // what was found, in words, for the user
};

// kNetwork/kUnauthorized... when the API server cannot be asked for its version; the other
// facts are best effort (a forbidden list of Services only leaves prometheus_url empty).
Result<ClusterFacts> DetectClusterFacts(kube::Client& client);

// Sets the defaults the facts suggest on `config`, leaving the keys in `preset` (chosen by
// flags or the environment) alone: kubernetesVersion, and with no metrics.k8s.io but a
// Prometheus, telemetry.cpuSource prometheus; telemetry.prometheusUrl when one was found.
// Returns "key=value" for each key it set.
std::vector<std::string> ApplyClusterFacts(const ClusterFacts& facts,
                                           const std::vector<std::string>& preset,
                                           config::PowerctlConfig& config);

// A Prometheus Service's URL from a Service object, or nullopt when it has no usable port.
std::optional<std::string> PrometheusUrlFromService(const nlohmann::json& service);

}  // namespace powerctl::setup
