#include "core/telemetry/temperature_history.h"

#include "core/telemetry/sources.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace powerctl::telemetry {
namespace {

// node -> sensor name -> history of all its series
using Histories = std::map<std::string, std::map<std::string, SensorHistory>>;

std::string Selector(const config::SensorNames& sensors) {
  std::string alternatives;
  for (const auto* list : {&sensors.ambient, &sensors.cpu1, &sensors.cpu2}) {
    for (const std::string& name : *list) {
      alternatives += (alternatives.empty() ? "" : "|") + PromRegexLiteral(name);
    }
  }
  return std::string(kTemperatureMetric) + "{name=~\"" + alternatives + "\"}";
}

// Folds one query's series into `out` with `merge(history, value)`.
template <typename Merge>
void Fold(const QueryResult& result, const NodeNameMapper& mapper, Histories& out, Merge merge) {
  for (const PromSeries& series : result.series) {
    if (series.samples.empty() || std::isnan(series.samples.front().value)) continue;
    auto name = series.metric.find("name");
    if (name == series.metric.end()) continue;
    std::optional<std::string> node = mapper.Map(series.metric);
    if (!node) continue;
    auto [it, inserted] = out[*node].try_emplace(name->second);
    if (inserted) {
      it->second.sensor = name->second;
      it->second.min = std::numeric_limits<double>::infinity();
      it->second.max = -std::numeric_limits<double>::infinity();
    }
    merge(it->second, series.samples.front().value);
  }
}

void PickRole(const std::map<std::string, SensorHistory>* found,
              const std::vector<std::string>& names, const char* role,
              std::optional<SensorHistory>& slot, std::vector<std::string>& missing) {
  for (const std::string& name : names) {
    if (found == nullptr) break;
    auto it = found->find(name);
    // A sensor that only ever reported NaN has samples but no range.
    if (it != found->end() && it->second.samples > 0 && std::isfinite(it->second.min) &&
        std::isfinite(it->second.max) && it->second.min <= it->second.max) {
      slot = it->second;
      return;
    }
  }
  missing.push_back(
      fmt::format("no {} history (sensor name {})", role,
                  names.empty() ? "not configured" : fmt::format("{}", fmt::join(names, " or "))));
}

}  // namespace

Result<std::map<std::string, NodeTemperatureHistory>> FetchTemperatureHistory(
    const PrometheusClient& prometheus, const std::vector<NodeInfo>& nodes,
    const TemperatureHistoryOptions& options) {
  // Whole seconds: every Prometheus version reads "[604800s]".
  const std::string range = "[" + std::to_string(options.window.count()) + "s]";
  const std::string selector = Selector(options.sensors);
  POWERCTL_TRY(mins, prometheus.Query("min_over_time(" + selector + range + ")", options.at));
  POWERCTL_TRY(maxs, prometheus.Query("max_over_time(" + selector + range + ")", options.at));
  POWERCTL_TRY(counts, prometheus.Query("count_over_time(" + selector + range + ")", options.at));

  NodeNameMapper mapper(nodes, options.mapping);
  Histories found;
  Fold(counts, mapper, found, [](SensorHistory& h, double v) { h.samples += std::lround(v); });
  Fold(mins, mapper, found, [](SensorHistory& h, double v) { h.min = std::min(h.min, v); });
  Fold(maxs, mapper, found, [](SensorHistory& h, double v) { h.max = std::max(h.max, v); });

  std::map<std::string, NodeTemperatureHistory> out;
  for (const NodeInfo& node : nodes) {
    auto it = found.find(node.name);
    const auto* sensors = it == found.end() ? nullptr : &it->second;
    NodeTemperatureHistory& h = out[node.name];
    PickRole(sensors, options.sensors.ambient, "ambient", h.ambient, h.missing);
    PickRole(sensors, options.sensors.cpu1, "cpu1", h.cpu1, h.missing);
    PickRole(sensors, options.sensors.cpu2, "cpu2", h.cpu2, h.missing);
  }
  return out;
}

std::string WholeDegreeRange(const SensorHistory& history) {
  double low = std::floor(history.min);
  double high = std::max(std::ceil(history.max), low + 1);
  // + 0.0 turns ceil(-0.5) = -0 into 0.
  return fmt::format("{}:{}", low + 0.0, high + 0.0);
}

}  // namespace powerctl::telemetry
