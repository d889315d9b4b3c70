// Policy metric values from Prometheus: one instant query per metric, series mapped to nodes.

#include "core/scoring/policy_metrics.h"

#include <cmath>
#include <map>
#include <string>
#include <utility>

namespace powerctl::scoring {

MetricValues CollectMetricValues(MetricSource& source, const std::set<std::string>& metrics,
                                 const std::vector<telemetry::NodeInfo>& nodes) {
  MetricValues out;
  for (const std::string& metric : metrics) {
    Result<NodeMetricValues> values = source.Values(metric, nodes);
    if (values.ok()) {
      out[metric] = std::move(values).value();
      continue;
    }
    NodeMetricValues& failed = out[metric];
    for (const telemetry::NodeInfo& node : nodes) {
      failed[node.name] = MetricValue{std::nullopt, values.error().message};
    }
  }
  return out;
}

PrometheusMetricSource::PrometheusMetricSource(const telemetry::PrometheusClient& prometheus,
                                               PrometheusMetricOptions options)
    : prometheus_(prometheus),
      options_(std::move(options)),
      cache_([this](const std::string& metric) { return Fetch(metric); }, options_.cache) {}

std::string PrometheusMetricSource::QueryFor(const std::string& metric) const {
  // Metric names are ^[a-zA-Z0-9_-]+$ (validated when parsed), so no escaping is needed.
  return "{__name__=\"" + options_.metric_prefix + metric + "\"}";
}

Result<PrometheusMetricSource::Series> PrometheusMetricSource::Fetch(const std::string& metric) {
  Result<telemetry::QueryResult> result = prometheus_.Query(QueryFor(metric));
  if (!result.ok()) return WithContext(result.error(), "metric " + metric);
  if (result->result_type != "vector") {
    return MakeError(ErrorCode::kApi, "metric " + metric + ": Prometheus answered a " +
                                          result->result_type + ", not a vector");
  }
  return std::make_shared<const std::vector<telemetry::PromSeries>>(
      std::move(result.value().series));
}

Result<NodeMetricValues> PrometheusMetricSource::Values(
    const std::string& metric, const std::vector<telemetry::NodeInfo>& nodes) {
  POWERCTL_TRY(series, cache_.Get(metric));
  telemetry::NodeNameMapper mapper(nodes, options_.mapping);
  std::map<std::string, std::vector<double>> found;  // node -> values of its series
  for (const telemetry::PromSeries& s : *series) {
    if (s.samples.empty()) continue;
    std::optional<std::string> node = mapper.Map(s.metric);
    if (node) found[*node].push_back(s.samples.back().value);
  }
  std::string name = options_.metric_prefix + metric;
  NodeMetricValues out;
  for (const telemetry::NodeInfo& node : nodes) {
    MetricValue& value = out[node.name];
    auto it = found.find(node.name);
    if (it == found.end()) {
      value.reason = "Prometheus has no series of " + name + " for node " + node.name;
    } else if (it->second.size() > 1) {
      // Which one is meant cannot be told (e.g. per-CPU series): no value rather than a guess.
      value.reason = std::to_string(it->second.size()) + " series of " + name + " map to node " +
                     node.name + "; a policy metric needs one per node";
    } else if (!std::isfinite(it->second.front())) {
      value.reason = name + " is not a finite number on node " + node.name;
    } else {
      value.value = it->second.front();
    }
  }
  return out;
}

}  // namespace powerctl::scoring
