#pragma once
// `powerctl schedule-server` put together: the cluster cache (when a cluster is configured),
// telemetry sources and their caches, the predictor, the policy metric source, the scheduling
// core and the HTTP(S) server. Without a reachable cluster it still serves, answering from
// what requests carry (full Nodes mode), and /readyz names what is degraded. With a cluster,
// the replicas elect a leader on a Lease; every replica answers kube-scheduler and is ready,
// the leader alone writes to the cluster.

#include "core/cluster/lease.h"
#include "core/common/result.h"
#include "core/config/config.h"
#include "core/extender/schedule_server.h"
#include "core/kube/connection.h"
#include "core/kube/transport.h"

#include <spdlog/logger.h>

#include <memory>
#include <optional>

namespace powerctl::extender {

// Which Lease the replicas compete for: only its holder writes to the cluster (node labels of
// deschedule and labeling policies, pod-group touches; core/extender/cluster_writer.h).
struct LeaderElectionSettings {
  std::string lease_name = cluster::kDefaultLeaseName;
  std::string lease_namespace;  // required when a cluster is configured
  std::string identity;         // "" = cluster::DefaultLeaseIdentity()
};

struct ExtenderAppOptions {
  ScheduleServerOptions server;
  LeaderElectionSettings election;
  config::PowerctlConfig config;
  std::optional<kube::ClusterConnection> cluster;  // nullopt: no cluster configured
  kube::TransportOptions transport;
  // Record each decision as an Event on its pod (decision_event_writer.h); needs a cluster.
  bool decision_events = true;
  // The extender's own pod ($POD_NAMESPACE, $POD_NAME from the downward API): failed TLS
  // handshakes on the scheduler port become Warning Events on it. Empty out of cluster.
  std::string pod_namespace, pod_name;
  std::shared_ptr<spdlog::logger> log;
};

// Blocks until the server stops (signal or hooks.stop); `hooks.metrics`, `hooks.ready` and
// `hooks.add_ops_routes` are filled here, the others are passed through.
Status ServeExtender(const ExtenderAppOptions& options, ScheduleServerHooks hooks);

}  // namespace powerctl::extender
