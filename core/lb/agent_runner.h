#pragma once
// `powerctl lb-agent` put together: the ops server (/healthz, /readyz, /metrics, /status),
// the watches of annotated Services and their EndpointSlices, and the loop that syncs on a
// change (after a short debounce, so a rollout's burst of slice updates is one sync) and
// every resync interval (predictions move without any API change). On SIGTERM/SIGINT it
// removes everything it programmed, so kube-proxy alone carries the traffic again.

#include "core/common/result.h"
#include "core/config/config.h"
#include "core/kube/connection.h"
#include "core/kube/transport.h"
#include "core/lb/balancer.h"
#include "core/server/http_server.h"

#include <spdlog/logger.h>

#include <chrono>
#include <functional>
#include <memory>
#include <stop_token>
#include <string>

namespace powerctl::lb {

struct AgentRunOptions {
  std::string node;  // for logs and /status
  config::PowerctlConfig config;
  kube::ClusterConnection cluster;
  kube::TransportOptions transport;
  server::HttpServerOptions ops;  // plain HTTP
  std::chrono::milliseconds resync{30'000};
  std::chrono::milliseconds debounce{500};
  std::chrono::milliseconds watch_restart{5'000};
  std::shared_ptr<spdlog::logger> log;
  bool handle_signals = true;  // SIGTERM/SIGINT stop the agent (off in unit tests)
  std::stop_token stop;        // requesting stop acts like SIGTERM
  std::function<void(const std::string& ops_url)> on_listening;
};

// Runs until a signal or `stop`. kNetwork when the ops port cannot be bound. When removing
// the rules at exit fails, that error is returned (exit non-zero: the rules may remain).
Status RunLbAgent(const AgentRunOptions& options, Balancer& balancer);

}  // namespace powerctl::lb
