#pragma once
// metrics.k8s.io/v1beta1 (metrics-server, or any adapter serving the same API through the
// aggregation layer): NodeMetrics and PodMetrics, with usage converted to cores and bytes.

#include "core/common/result.h"
#include "core/kube/client.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace powerctl::telemetry {

struct ResourceUsage {
  double cpu_cores = 0;
  double memory_bytes = 0;
};

struct NodeMetrics {
  std::string name;
  std::chrono::system_clock::time_point timestamp;  // the end of the measurement window
  std::chrono::milliseconds window{0};              // 0 when absent or unreadable
  ResourceUsage usage;
};

struct ContainerMetrics {
  std::string name;
  ResourceUsage usage;
};

struct PodMetrics {
  std::string namespace_;
  std::string name;
  std::chrono::system_clock::time_point timestamp;
  std::chrono::milliseconds window{0};
  std::vector<ContainerMetrics> containers;
  ResourceUsage Total() const;  // the sum over containers
};

// Decoders for one object; kApi naming the object and the field that is wrong.
Result<NodeMetrics> ParseNodeMetrics(const nlohmann::json& object);
Result<PodMetrics> ParsePodMetrics(const nlohmann::json& object);

// RFC 3339 as Kubernetes writes it ("2024-05-01T10:00:00Z", fractions and offsets allowed).
std::optional<std::chrono::system_clock::time_point> ParseRfc3339(std::string_view text);

class MetricsApiClient {
 public:
  explicit MetricsApiClient(kube::Client& client) : client_(client) {}

  // Objects that do not decode are left out, with their errors in `invalid` (if given) by
  // object name ("namespace/name" for pods, "" when nameless), so one odd node does not hide
  // the others.
  Result<std::vector<NodeMetrics>> ListNodeMetrics(const std::string& label_selector = "",
                                                   std::map<std::string, Error>* invalid = nullptr);
  Result<NodeMetrics> GetNodeMetrics(const std::string& node);
  // namespace_ "" lists pods of all namespaces.
  Result<std::vector<PodMetrics>> ListPodMetrics(const std::string& namespace_,
                                                 const std::string& label_selector = "",
                                                 std::map<std::string, Error>* invalid = nullptr);
  Result<PodMetrics> GetPodMetrics(const std::string& namespace_, const std::string& name);

 private:
  kube::Client& client_;
};

}  // namespace powerctl::telemetry
