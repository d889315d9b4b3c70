#pragma once
// Each node's observed temperature range over a past window, from Prometheus:
// min_over_time / max_over_time / count_over_time of ipmi_temperature_celsius, one instant
// query each. `powerctl label nodes --from-prometheus` turns these into the ambient/cpu1/cpu2
// MIN:MAX labels of WAO's MinimizePower plugin.

#include "core/common/result.h"
#include "core/config/config.h"
#include "core/telemetry/node_mapping.h"
#include "core/telemetry/prometheus_client.h"

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace powerctl::telemetry {

struct SensorHistory {
  std::string sensor;  // the "name" label that was used, e.g. "Inlet Temp"
  double min = 0;      // degrees Celsius, as observed
  double max = 0;
  long samples = 0;  // samples in the window (all series of the sensor on the node)
};

struct NodeTemperatureHistory {
  std::optional<SensorHistory> ambient, cpu1, cpu2;
  std::vector<std::string> missing;  // one reason per role without history
};

struct TemperatureHistoryOptions {
  std::chrono::seconds window{std::chrono::hours(24 * 7)};
  config::SensorNames sensors;
  NodeMappingOptions mapping;
  std::optional<WallTime> at;  // end of the window; default: the server's now
};

// One entry for each of `nodes`. For each role the first configured sensor name that has
// history on the node wins (as PickSensors does for live readings); several series of that
// name (two scrape jobs, ids) are combined. An error means the queries failed.
Result<std::map<std::string, NodeTemperatureHistory>> FetchTemperatureHistory(
    const PrometheusClient& prometheus, const std::vector<NodeInfo>& nodes,
    const TemperatureHistoryOptions& options);

// The whole-degree range that contains the history: min rounded down, max rounded up, and
// max at least min + 1 so the range is never empty. "18:35".
std::string WholeDegreeRange(const SensorHistory& history);

}  // namespace powerctl::telemetry
