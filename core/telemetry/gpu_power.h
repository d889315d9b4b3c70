#pragma once
// Measured GPU power per node, as selected by powerctl.yaml's telemetry.gpuPowerSource, read
// from Prometheus as mean watts over a window and the number of devices seen:
//   kepler  Kepler 0.11.4+ with --experimental.gpu.enabled: kepler_node_gpu_watts, one series
//           per device (gpu_uuid), the node in node_name;
//   dcgm    NVIDIA's dcgm-exporter: DCGM_FI_DEV_POWER_USAGE (watts), one series per device
//           (UUID), the node in Hostname (hostname from its 2026 releases) when the DaemonSet
//           sets NODE_NAME. With pod mapping on, a device shared by pods appears once per pod
//           with the device's value, so each device counts once (its highest series).
// docs/reference/power-metrics.md#gpu-power says what each exporter publishes. What the
// scheduler does with GPU watts is not decided here: this is the reading only.

#include "core/common/result.h"
#include "core/telemetry/node_mapping.h"
#include "core/telemetry/prometheus_client.h"

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace powerctl::telemetry {

enum class GpuPowerSource { kNone, kKepler, kDcgm };

// "none", "kepler" or "dcgm"; anything else is kInvalidInput naming `what` and the choices.
Result<GpuPowerSource> ParseGpuPowerSource(std::string_view text, std::string_view what);
std::string_view GpuPowerSourceName(GpuPowerSource source);

struct GpuPowerQuery {
  std::string promql;  // mean watts per device over the window, one series per device
  NodeMappingOptions mapping;
  std::string device_label;  // the label naming the device: gpu_uuid or UUID
};

// kInvalidInput for kNone or a window under 1s.
Result<GpuPowerQuery> BuildGpuPowerQuery(GpuPowerSource source, const NodeMappingOptions& mapping,
                                         std::chrono::seconds window);

struct GpuPower {
  std::optional<double> watts;  // the node's devices summed
  int devices = 0;
  std::string missing_reason;
};

// Each of `nodes`' GPU power, one instant query. Devices map to nodes as power series do;
// a device seen by two scrape jobs (or once per pod) counts its highest value once. A node
// without a series gets the reason.
Result<std::map<std::string, GpuPower>> FetchGpuPower(const PrometheusClient& prometheus,
                                                      const std::vector<NodeInfo>& nodes,
                                                      GpuPowerSource source,
                                                      std::chrono::seconds window,
                                                      const NodeMappingOptions& mapping = {});

}  // namespace powerctl::telemetry
