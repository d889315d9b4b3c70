// CPU usage sources: metrics.k8s.io NodeMetrics and PromQL over node_exporter.

#include "core/telemetry/sources.h"

#include <fmt/format.h>

#include <utility>

namespace powerctl::telemetry {
namespace {

constexpr char kMetricsApi[] = "metrics.k8s.io";

class MetricsApiCpuSource : public CpuSource {
 public:
  MetricsApiCpuSource(MetricsApiClient& client, TimeBase time)
      : client_(client), time_(std::move(time)) {}

  Result<std::map<std::string, Reading>> Fetch(const std::vector<NodeInfo>& nodes) override {
    std::map<std::string, Error> invalid;
    // One LIST for the cluster: metrics-server answers it from memory.
    POWERCTL_TRY(metrics, client_.ListNodeMetrics("", &invalid));
    std::map<std::string, const NodeMetrics*> by_name;
    for (const NodeMetrics& m : metrics) by_name[m.name] = &m;
    // One text each, shared by every node's reading.
    const SharedText source = kMetricsApi;
    const SharedText absent =
        "metrics.k8s.io has no NodeMetrics for this node (metrics-server reports nodes whose "
        "kubelet it could scrape)";
    std::map<std::string, Reading> out;
    for (const NodeInfo& node : nodes) {
      if (auto it = by_name.find(node.name); it != by_name.end()) {
        out[node.name] =
            CpuReading(it->second->usage.cpu_cores, time_.FromWall(it->second->timestamp), source);
      } else if (auto bad = invalid.find(node.name); bad != invalid.end()) {
        out[node.name] = MissingReading(bad->second.message, source);
      } else {
        out[node.name] = MissingReading(absent, source);
      }
    }
    return out;
  }

  std::string Describe() const override { return kMetricsApi; }

 private:
  MetricsApiClient& client_;
  TimeBase time_;
};

class PrometheusCpuSource : public CpuSource {
 public:
  PrometheusCpuSource(PrometheusClient& prometheus, PrometheusCpuOptions options, TimeBase time)
      : prometheus_(prometheus), options_(std::move(options)), time_(std::move(time)) {}

  Result<std::map<std::string, Reading>> Fetch(const std::vector<NodeInfo>& nodes) override {
    NodeNameMapper mapper(nodes, options_.mapping);
    const KeepLabels keep = options_.mapping.LabelsRead();  // a node's, nothing else
    // The timestamps first, then each usage series reduced to its node's reading as it is
    // decoded (one series per node; thousands of them are not held at once).
    std::vector<std::optional<WallTime>> sample_times(nodes.size());  // by position in `nodes`
    if (!options_.timestamp_query.empty()) {
      POWERCTL_CHECK_OK(
          prometheus_.Query(options_.timestamp_query, std::nullopt, keep, [&](PromSeries&& series) {
            auto node = mapper.MapPosition(series.metric);
            if (!node || series.samples.empty()) return;
            if (auto at = WallTimeFromSeconds(series.samples.front().value)) {
              sample_times[*node] = *at;
            }
          }));
    }
    std::vector<Reading> found(nodes.size());
    std::vector<int> series_per_node(nodes.size());
    const SharedText source = "Prometheus at " + prometheus_.url();  // shared by every node
    POWERCTL_CHECK_OK(
        prometheus_.Query(options_.query, std::nullopt, keep, [&](PromSeries&& series) {
          auto node = mapper.MapPosition(series.metric);
          if (!node || series.samples.empty()) return;
          const PromSample& sample = series.samples.front();
          WallTime at = sample_times[*node].value_or(sample.time);
          found[*node] = CpuReading(sample.value, time_.FromWall(at), source);
          ++series_per_node[*node];
        }));
    const SharedText no_series =
        "the CPU query returned no series for this node (series are matched to nodes by a node "
        "label, or by instance host = node name, InternalIP or Hostname)";
    std::map<std::string, Reading> out;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      Reading& reading = out[nodes[i].name];
      if (series_per_node[i] == 0) {
        reading = MissingReading(no_series, source);
      } else if (series_per_node[i] > 1) {
        // Two scrape jobs of the same exporter would be added up; better no number.
        reading = MissingReading("the CPU query returned " + std::to_string(series_per_node[i]) +
                                     " series for this node; it must return one per node",
                                 source);
      } else {
        reading = std::move(found[i]);
      }
    }
    return out;
  }

  std::string Describe() const override { return "Prometheus at " + prometheus_.url(); }

 private:
  PrometheusClient& prometheus_;
  PrometheusCpuOptions options_;
  TimeBase time_;
};

}  // namespace

std::unique_ptr<CpuSource> MakeMetricsApiCpuSource(MetricsApiClient& client, TimeBase time) {
  return std::make_unique<MetricsApiCpuSource>(client, std::move(time));
}

std::string DefaultCpuQuery(const NodeMappingOptions& mapping) {
  return fmt::format("sum by ({}) (rate(node_cpu_seconds_total{{mode!=\"idle\"}}[1m]))",
                     mapping.GroupBy());
}

std::string DefaultCpuTimestampQuery(const NodeMappingOptions& mapping) {
  return fmt::format("max by ({}) (timestamp(node_cpu_seconds_total{{mode=\"idle\"}}))",
                     mapping.GroupBy());
}

std::unique_ptr<CpuSource> MakePrometheusCpuSource(PrometheusClient& prometheus,
                                                   PrometheusCpuOptions options, TimeBase time) {
  return std::make_unique<PrometheusCpuSource>(prometheus, std::move(options), std::move(time));
}

}  // namespace powerctl::telemetry
