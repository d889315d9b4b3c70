#pragma once
// What powerctl knows of Kepler beyond one query: which of its two generations Prometheus
// holds (0.10 and later, or 0.7 to 0.9: they share no metric name), and which energy zones
// each node reports, RAPL's or hwmon's (docs/reference/power-metrics.md#kepler-010-and-later).

#include "core/common/result.h"
#include "core/telemetry/node_mapping.h"
#include "core/telemetry/power_sources.h"
#include "core/telemetry/prometheus_client.h"

#include <map>
#include <string>
#include <vector>

namespace powerctl::telemetry {

struct KeplerGenerations {
  bool current = false;  // 0.10+: kepler_node_cpu_joules_total
  bool legacy = false;   // 0.7-0.9: kepler_node_platform_joules_total, kepler_node_package_...
};

// Which generation's node energy series each of `nodes` has (by position), in one instant
// query: 0.10+ series name their node in node_name, 0.7-0.9 ones in (exported_)instance.
Result<std::vector<KeplerGenerations>> DetectKeplerGenerations(const PrometheusClient& prometheus,
                                                               const std::vector<NodeInfo>& nodes,
                                                               const NodeMappingOptions& mapping);

// Which Kepler runs, cluster-wide: each generation's build versions (kepler_build_info,
// kepler_exporter_build_info) and whether its node energy series are there at all, and, for
// 0.7-0.9, whether any idle-mode series is (0.8+ export them only with
// --expose-estimated-idle-power). One instant query.
struct KeplerInventory {
  KeplerGenerations present;
  std::vector<std::string> current_versions, legacy_versions;  // "v0.11.4", sorted
  bool legacy_idle_series = false;
};
Result<KeplerInventory> DetectKeplerInventory(const PrometheusClient& prometheus);

// Why `source` may have found nothing when the other generation's metrics are there: "" when
// `source` is not a Kepler one or its own generation is present; else a sentence naming the
// source to use ("Kepler 0.7-0.9 metrics are in Prometheus, not 0.10+: set
// telemetry.powerSource to kepler-0.7").
std::string KeplerGenerationHint(PowerSource source, const KeplerGenerations& found);

// The zones of kepler_node_cpu_joules_total each of `nodes` reports, by node name, sorted.
Result<std::map<std::string, std::vector<std::string>>> KeplerZonesByNode(
    const PrometheusClient& prometheus, const std::vector<NodeInfo>& nodes,
    const NodeMappingOptions& mapping);

// What the `kepler` source sums for a node with these zones: "RAPL package+dram" where the
// RAPL zones are there, else "hwmon platform_sensor_power1 (left out: gpu)"; "" for none.
std::string DescribeKeplerZones(const std::vector<std::string>& zones);

}  // namespace powerctl::telemetry
