#include "core/telemetry/kepler.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace powerctl::telemetry {

Result<std::vector<KeplerGenerations>> DetectKeplerGenerations(const PrometheusClient& prometheus,
                                                               const std::vector<NodeInfo>& nodes,
                                                               const NodeMappingOptions& mapping) {
  const NodeMappingOptions labels = mapping.WithNodeLabels({"node_name", "exported_instance"});
  NodeNameMapper mapper(nodes, labels);
  std::vector<KeplerGenerations> found(nodes.size());
  auto each = [&](PromSeries&& series) {
    auto at = mapper.MapPosition(series.metric);
    if (!at) return;
    if (series.metric["__name__"] == "kepler_node_cpu_joules_total") {
      found[*at].current = true;
    } else {
      found[*at].legacy = true;
    }
  };
  POWERCTL_TRY(ignored,
               prometheus.Query(fmt::format("count by ({}, __name__) ({{__name__=~\"kepler_node_"
                                            "cpu_joules_total|kepler_node_platform_joules_total|"
                                            "kepler_node_package_joules_total\"}})",
                                            labels.GroupBy()),
                                std::nullopt, labels.LabelsRead({"__name__"}), each));
  (void)ignored;
  return found;
}

Result<KeplerInventory> DetectKeplerInventory(const PrometheusClient& prometheus) {
  KeplerInventory found;
  std::set<std::string> current, legacy;
  auto each = [&](PromSeries&& series) {
    const std::string& name = series.metric["__name__"];
    const std::string& version = series.metric["version"];
    if (name == "kepler_build_info") {
      if (!version.empty()) current.insert(version);
      found.present.current = true;
    } else if (name == "kepler_exporter_build_info") {
      if (!version.empty()) legacy.insert(version);
      found.present.legacy = true;
    } else if (name == "kepler_node_cpu_joules_total") {
      found.present.current = true;
    } else if (!name.empty()) {
      found.present.legacy = true;
      if (series.metric["mode"] == "idle") found.legacy_idle_series = true;
    }
  };
  // Bounded: one series per (name, version, mode), whatever the number of nodes.
  POWERCTL_TRY(
      ignored,
      prometheus.Query(R"(count by (__name__, version, mode) ({__name__=~"kepler_build_info|)"
                       R"(kepler_exporter_build_info|kepler_node_cpu_joules_total|)"
                       R"(kepler_node_platform_joules_total|kepler_node_package_joules_total"}))",
                       std::nullopt, {"__name__", "version", "mode"}, each));
  (void)ignored;
  found.current_versions.assign(current.begin(), current.end());
  found.legacy_versions.assign(legacy.begin(), legacy.end());
  return found;
}

std::string KeplerGenerationHint(PowerSource source, const KeplerGenerations& found) {
  if (source == PowerSource::kKepler && !found.current && found.legacy) {
    return "Kepler 0.7-0.9 metrics are in Prometheus, not 0.10+ ones: set "
           "telemetry.powerSource (or --power-source) to kepler-0.7";
  }
  if (source == PowerSource::kKepler07 && !found.legacy && found.current) {
    return "Kepler 0.10+ metrics are in Prometheus, not 0.7-0.9 ones: set "
           "telemetry.powerSource (or --power-source) to kepler";
  }
  return "";
}

Result<std::map<std::string, std::vector<std::string>>> KeplerZonesByNode(
    const PrometheusClient& prometheus, const std::vector<NodeInfo>& nodes,
    const NodeMappingOptions& mapping) {
  const NodeMappingOptions with_node = mapping.WithNodeLabels({"node_name"});
  NodeNameMapper mapper(nodes, with_node);
  std::vector<std::set<std::string>> zones(nodes.size());
  auto each = [&](PromSeries&& series) {
    auto at = mapper.MapPosition(series.metric);
    if (at) zones[*at].insert(series.metric["zone"]);
  };
  POWERCTL_TRY(ignored, prometheus.Query(fmt::format("count by ({}, zone) "
                                                     "(kepler_node_cpu_joules_total)",
                                                     with_node.GroupBy()),
                                         std::nullopt, with_node.LabelsRead({"zone"}), each));
  (void)ignored;
  std::map<std::string, std::vector<std::string>> out;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (!zones[i].empty()) out[nodes[i].name].assign(zones[i].begin(), zones[i].end());
  }
  return out;
}

std::string DescribeKeplerZones(const std::vector<std::string>& zones) {
  std::vector<std::string> rapl, hwmon, left_out;
  for (const std::string& zone : zones) {
    if (zone == "package" || zone == "dram") {
      continue;  // below, package first
    } else if (KeplerZoneNeverSummed(zone)) {
      left_out.push_back(zone);
    } else {
      hwmon.push_back(zone);
    }
  }
  for (const char* zone : {"package", "dram"}) {
    if (std::find(zones.begin(), zones.end(), zone) != zones.end()) rapl.push_back(zone);
  }
  if (!rapl.empty()) return fmt::format("RAPL {}", fmt::join(rapl, "+"));
  if (hwmon.empty()) return "";
  std::string text = fmt::format("hwmon {}", fmt::join(hwmon, "+"));
  if (!left_out.empty()) text += fmt::format(" (left out: {})", fmt::join(left_out, ", "));
  return text;
}

}  // namespace powerctl::telemetry
