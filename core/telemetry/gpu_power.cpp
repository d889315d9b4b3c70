#include "core/telemetry/gpu_power.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>

namespace powerctl::telemetry {
namespace {

struct GpuSourceName {
  GpuPowerSource source;
  std::string_view name;
};
constexpr std::array<GpuSourceName, 3> kGpuSourceNames = {{{GpuPowerSource::kNone, "none"},
                                                           {GpuPowerSource::kKepler, "kepler"},
                                                           {GpuPowerSource::kDcgm, "dcgm"}}};

}  // namespace

Result<GpuPowerSource> ParseGpuPowerSource(std::string_view text, std::string_view what) {
  for (const GpuSourceName& n : kGpuSourceNames) {
    if (n.name == text) return n.source;
  }
  return MakeError(ErrorCode::kInvalidInput,
                   fmt::format("{} \"{}\": must be one of none, kepler, dcgm", what, text));
}

std::string_view GpuPowerSourceName(GpuPowerSource source) {
  for (const GpuSourceName& n : kGpuSourceNames) {
    if (n.source == source) return n.name;
  }
  return "unknown";
}

Result<GpuPowerQuery> BuildGpuPowerQuery(GpuPowerSource source, const NodeMappingOptions& mapping,
                                         std::chrono::seconds window) {
  if (window.count() < 1) {
    return MakeError(ErrorCode::kInvalidInput, "the power averaging window must be at least 1s");
  }
  const std::string w = std::to_string(window.count()) + "s";
  GpuPowerQuery out;
  switch (source) {
    case GpuPowerSource::kNone:
      return MakeError(ErrorCode::kInvalidInput, "telemetry.gpuPowerSource is none");
    case GpuPowerSource::kKepler:
      out.mapping = mapping.WithNodeLabels({"node_name"});
      out.device_label = "gpu_uuid";
      // Its gauge per device, averaged: the same mean as rate() of kepler_node_gpu_joules_total
      // where scrapes are regular, without rate()'s extrapolation at the window's edges.
      out.promql = fmt::format("max by ({}, gpu_uuid) (avg_over_time(kepler_node_gpu_watts[{}]))",
                               out.mapping.GroupBy(), w);
      break;
    case GpuPowerSource::kDcgm:
      // Hostname until dcgm-exporter renamed it hostname; both read.
      out.mapping = mapping.WithNodeLabels({"Hostname", "hostname"});
      out.device_label = "UUID";
      // One gauge per device, or per device and pod with pod mapping (the device's value in
      // each): the highest per device, not the sum.
      out.promql = fmt::format("max by ({}, UUID) (avg_over_time(DCGM_FI_DEV_POWER_USAGE[{}]))",
                               out.mapping.GroupBy(), w);
      break;
  }
  return out;
}

Result<std::map<std::string, GpuPower>> FetchGpuPower(const PrometheusClient& prometheus,
                                                      const std::vector<NodeInfo>& nodes,
                                                      GpuPowerSource source,
                                                      std::chrono::seconds window,
                                                      const NodeMappingOptions& mapping) {
  POWERCTL_TRY(query, BuildGpuPowerQuery(source, mapping, window));
  NodeNameMapper mapper(nodes, query.mapping);
  // The highest reading of each device of each node (jobs, pods and instances collapse).
  std::vector<std::map<std::string, double>> devices(nodes.size());
  auto each = [&](PromSeries&& series) {
    std::optional<std::size_t> at = mapper.MapPosition(series.metric);
    if (!at || series.samples.empty()) return;
    const double v = series.samples.front().value;
    if (!(v >= 0)) return;  // NaN too: not a reading
    auto [it, added] = devices[*at].emplace(series.metric[query.device_label], v);
    if (!added) it->second = std::max(it->second, v);
  };
  POWERCTL_TRY(ignored,
               prometheus.Query(query.promql, std::nullopt,
                                query.mapping.LabelsRead({"job", query.device_label}), each));
  (void)ignored;
  std::map<std::string, GpuPower> out;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    GpuPower& g = out[nodes[i].name];
    if (devices[i].empty()) {
      g.missing_reason = fmt::format(
          "no {} GPU power series in Prometheus for this node over the "
          "last {}s",
          GpuPowerSourceName(source), window.count());
      continue;
    }
    double sum = 0;
    for (const auto& [uuid, watts] : devices[i]) sum += watts;
    g.watts = sum;
    g.devices = static_cast<int>(devices[i].size());
  }
  return out;
}

}  // namespace powerctl::telemetry
