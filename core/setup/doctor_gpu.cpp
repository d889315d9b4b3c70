#include "core/setup/doctor_gpu.h"

#include "core/common/duration.h"
#include "core/setup/doctor_prometheus.h"
#include "core/telemetry/gpu_power.h"

#include <fmt/format.h>

#include <algorithm>

namespace powerctl::setup {
namespace {

// How many nodes the message names before "and N more".
constexpr std::size_t kGpuNodesNamed = 3;

std::string WhatTheExporterNeeds(telemetry::GpuPowerSource source) {
  if (source == telemetry::GpuPowerSource::kKepler) {
    return "run Kepler 0.11.4 or later with --experimental.gpu.enabled on the GPU nodes, and "
           "check that Prometheus scrapes it (kepler_node_gpu_joules_total)";
  }
  return "check that Prometheus scrapes dcgm-exporter and that its DaemonSet sets NODE_NAME "
         "(the Hostname label names the node); DCGM_FI_DEV_POWER_USAGE must be collected";
}

}  // namespace

CheckResult CheckGpuPower(kube::Client& client, HttpClient* http,
                          const config::PowerctlConfig& config) {
  CheckResult r{kGpuPowerCheckId, "GPU power is measured", CheckStatus::kSkip, "", ""};
  auto source =
      telemetry::ParseGpuPowerSource(config.telemetry.gpu_power_source, "telemetry.gpuPowerSource");
  if (!source.ok() || *source == telemetry::GpuPowerSource::kNone) {
    r.message = "telemetry.gpuPowerSource is none: GPU power is not read";
    return r;
  }
  auto fail = [&](const std::string& why) {
    r.status = CheckStatus::kWarn;
    r.message = why;
    r.fix = WhatTheExporterNeeds(*source);
    return r;
  };
  auto window = ParseDuration(config.telemetry.power_rate_window);
  if (!window.ok()) return fail("telemetry.powerRateWindow: " + window.error().message);
  auto nodes = client.List("/api/v1/nodes");
  if (!nodes.ok()) return fail("cannot list the nodes: " + nodes.error().message);
  std::vector<telemetry::NodeInfo> infos;
  for (const auto& node : *nodes) infos.push_back(telemetry::NodeInfoFromJson(node));
  DoctorPrometheus prometheus(http, config);
  auto gpu = telemetry::FetchGpuPower(prometheus.client(), infos, *source,
                                      std::chrono::duration_cast<std::chrono::seconds>(*window));
  if (!gpu.ok()) return fail("cannot read GPU power: " + gpu.error().message);
  std::vector<std::pair<std::string, telemetry::GpuPower>> measured;
  for (const auto& [name, power] : *gpu) {
    if (power.watts) measured.emplace_back(name, power);
  }
  const std::string source_name(telemetry::GpuPowerSourceName(*source));
  if (measured.empty()) {
    return fail(fmt::format("no node has {} GPU power series in Prometheus", source_name));
  }
  std::sort(measured.begin(), measured.end(),
            [](const auto& a, const auto& b) { return *a.second.watts > *b.second.watts; });
  std::vector<std::string> named;
  for (std::size_t i = 0; i < measured.size() && i < kGpuNodesNamed; ++i) {
    const telemetry::GpuPower& p = measured[i].second;
    named.push_back(fmt::format("{} {:.0f} W ({} GPU{})", measured[i].first, *p.watts, p.devices,
                                p.devices == 1 ? "" : "s"));
  }
  std::string more = measured.size() > kGpuNodesNamed
                         ? fmt::format(" and {} more", measured.size() - kGpuNodesNamed)
                         : "";
  r.status = CheckStatus::kPass;
  r.message = fmt::format("{} GPU power on {} node{}: {}{}", source_name, measured.size(),
                          measured.size() == 1 ? "" : "s", fmt::join(named, ", "), more);
  return r;
}

}  // namespace powerctl::setup
