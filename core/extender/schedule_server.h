#pragma once
// `powerctl schedule-server`: the scheduler's (m)TLS port (POST <prefix>/filter, /prioritize,
// /preempt -> ExtenderHandler) and the plain ops port (GET /healthz, /readyz, /metrics, plus
// routes the caller adds). RunScheduleServer is the only place that handles SIGTERM/SIGINT.

#include "core/common/result.h"
#include "core/extender/extender_handler.h"
#include "core/extender/tls_failure_log.h"
#include "core/server/http_server.h"
#include "core/server/metrics_registry.h"
#include "core/server/ops.h"

#include <spdlog/logger.h>

#include <chrono>
#include <functional>
#include <memory>
#include <stop_token>
#include <string>
#include <vector>

namespace powerctl::extender {

struct ScheduleServerOptions {
  server::HttpServerOptions main;  // kube-scheduler's port; main.tls absent = plain HTTP
  server::HttpServerOptions
      ops;  // probes and scraping; always plain HTTP; at least one worker thread
  bool allow_insecure = false;            // must be true to serve the main port without TLS
  std::string url_prefix = "/scheduler";  // "" serves /filter etc.
  std::chrono::milliseconds drain_timeout{10'000};
};

struct ScheduleServerEndpoints {
  std::string main_url;  // "https://127.0.0.1:8443"
  std::string ops_url;   // "http://127.0.0.1:8080"
  int main_port = 0;
  int ops_port = 0;
};

struct ScheduleServerHooks {
  std::function<server::ReadyState()> ready;   // null = always ready, nothing degraded
  server::MetricsRegistry* metrics = nullptr;  // null = a registry private to this run
  std::function<void()> collect_metrics;       // refreshes gauges just before /metrics renders
  // More read-only routes (before start). Add any that may take long, or whose work grows with
  // what the client sends, as RouteThreads::kWorker: probes must never wait for them.
  std::function<void(server::HttpServer& ops)> add_ops_routes;
  std::function<void(const ScheduleServerEndpoints&)> on_listening;  // both ports bound
  // Each rate-limited warning about failed TLS handshakes on the scheduler port; runs on an
  // I/O thread, so it must only queue (the extender turns it into an Event on its pod).
  std::function<void(const TlsWarning&)> on_tls_warning;
  std::shared_ptr<spdlog::logger> log;  // may be null
  bool handle_signals = true;           // SIGTERM/SIGINT stop the server (off in unit tests)
  std::stop_token stop;                 // requesting stop acts like SIGTERM
};

// kInvalidInput when the main port has no TLS and allow_insecure is false, or the prefix is bad.
Status ValidateScheduleServerOptions(const ScheduleServerOptions& options);

// "/scheduler/" -> "/scheduler", "scheduler" -> "/scheduler", "/" or "" -> "".
std::string NormalizeUrlPrefix(const std::string& prefix);

// Wraps a verb's handler: a Content-Type other than application/json gets 415 with a reason.
server::HttpHandler JsonOnly(server::HttpHandler handler);

// Starts both servers, logs where they listen, blocks until a signal or `hooks.stop`, then
// drains: /readyz turns 503, the main port stops accepting and finishes requests in flight
// within drain_timeout, then the ops port closes. kNetwork when a port cannot be bound.
Status RunScheduleServer(const ScheduleServerOptions& options, ExtenderHandler& handler,
                         const ScheduleServerHooks& hooks = {});

}  // namespace powerctl::extender
