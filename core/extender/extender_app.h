#pragma once
// `powerctl schedule-server` put together: the cluster cache (when a cluster is configured),
// telemetry sources and their caches, the predictor, the policy metric source, the scheduling
// core and the HTTP(S) server. Without a reachable cluster it still serves, answering from
// what requests carry (full Nodes mode), and /readyz names what is degraded.

#include "core/common/result.h"
#include "core/extender/schedule_server.h"
#include "core/kube/connection.h"
#include "core/kube/transport.h"
#include "core/manifests/config.h"

#include <spdlog/logger.h>

#include <memory>
#include <optional>

namespace powerctl::extender {

struct ExtenderAppOptions {
  ScheduleServerOptions server;
  manifests::PowerctlConfig config;
  std::optional<kube::ClusterConnection> cluster;  // nullopt: no cluster configured
  kube::TransportOptions transport;
  std::shared_ptr<spdlog::logger> log;
};

// Blocks until the server stops (signal or hooks.stop); `hooks.metrics`, `hooks.ready` and
// `hooks.add_ops_routes` are filled here, the others are passed through.
Status ServeExtender(const ExtenderAppOptions& options, ScheduleServerHooks hooks);

}  // namespace powerctl::extender
