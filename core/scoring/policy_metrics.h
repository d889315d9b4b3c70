#pragma once
// Where telemetry-policy metric values come from: a MetricSource answers "metric M for these
// nodes", and the Prometheus implementation runs an instant query of the metric's series and
// maps each series to a node (telemetry/node_mapping.h), with a TTL cache per metric.
//
// TAS read the custom metrics API (prometheus-adapter renaming node_X to X) and kept a metric's
// last value forever when a fetch failed (docs/reference/tas.md, "Where metrics come from" and
// "Differences that fix TAS defects"). Here values expire (`cache.expire_after`), after which the
// nodes get a reason instead of an old number.

#include "core/common/result.h"
#include "core/scoring/policies.h"
#include "core/telemetry/node_mapping.h"
#include "core/telemetry/prometheus_client.h"
#include "core/telemetry/ttl_cache.h"

#include <memory>
#include <set>
#include <string>
#include <vector>

namespace powerctl::scoring {

class MetricSource {
 public:
  virtual ~MetricSource() = default;
  // The value of `metric` for each of `nodes` (every node has an entry; a missing value has
  // a reason). An error when the source could not answer at all. Thread-safe.
  virtual Result<NodeMetricValues> Values(const std::string& metric,
                                          const std::vector<telemetry::NodeInfo>& nodes) = 0;
};

// Every metric in `metrics` for `nodes`; a metric whose source failed gets that error as the
// reason on every node, so callers see why rather than a missing entry.
MetricValues CollectMetricValues(MetricSource& source, const std::set<std::string>& metrics,
                                 const std::vector<telemetry::NodeInfo>& nodes);

struct PrometheusMetricOptions {
  // Prepended to a policy's metric name in the query: "node_" mirrors the prometheus-adapter
  // rule of TAS' docs (series node_health_metric is the policy metric health_metric).
  std::string metric_prefix;
  telemetry::NodeMappingOptions mapping;
  telemetry::TtlCacheOptions cache;
};

class PrometheusMetricSource : public MetricSource {
 public:
  // `prometheus` must outlive the source.
  PrometheusMetricSource(const telemetry::PrometheusClient& prometheus,
                         PrometheusMetricOptions options);

  Result<NodeMetricValues> Values(const std::string& metric,
                                  const std::vector<telemetry::NodeInfo>& nodes) override;

  // The PromQL for a metric: `{__name__="<prefix><metric>"}` (policy metric names may contain
  // '-', which is not valid in a bare PromQL metric name).
  std::string QueryFor(const std::string& metric) const;

 private:
  using Series = std::shared_ptr<const std::vector<telemetry::PromSeries>>;
  Result<Series> Fetch(const std::string& metric);

  const telemetry::PrometheusClient& prometheus_;
  PrometheusMetricOptions options_;
  telemetry::TtlCache<std::string, Series> cache_;
};

}  // namespace powerctl::scoring
