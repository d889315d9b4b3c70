#pragma once
// doctor's "gpu-power" check: each node's measured GPU power from telemetry.gpuPowerSource
// (Kepler 0.11.4+ or dcgm-exporter), so an admin sees where the watts of a GPU cluster are
// and that the exporter is read. SKIP when no GPU source is configured.

#include "core/common/http_client.h"
#include "core/config/config.h"
#include "core/kube/client.h"
#include "core/setup/doctor.h"

namespace powerctl::setup {

inline constexpr char kGpuPowerCheckId[] = "gpu-power";

// PASS naming the nodes with GPU watts (the largest first) and the devices; WARN when no node
// has a series (with what the exporter needs) or Prometheus fails. `http` reaches Prometheus
// (a libcurl client when null).
CheckResult CheckGpuPower(kube::Client& client, HttpClient* http,
                          const config::PowerctlConfig& config);

}  // namespace powerctl::setup
