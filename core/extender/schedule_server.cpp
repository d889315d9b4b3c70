#include "core/extender/schedule_server.h"

#include "core/common/build_info.h"
#include "core/common/encoding.h"
#include "core/extender/tls_failure_log.h"
#include "core/server/stop_waiter.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <optional>

namespace powerctl::extender {
namespace {

const std::vector<double> kLatencyBuckets = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                             0.1,   0.25,   0.5,   1,    2.5,   5};

std::function<void(const server::RequestRecord&)> Recorder(server::MetricsRegistry& metrics,
                                                           const std::string& server,
                                                           std::shared_ptr<spdlog::logger> log) {
  auto& requests = metrics.Counter("powerctl_http_requests_total",
                                   "HTTP requests answered, by server, method, route and code",
                                   {"server", "method", "path", "code"});
  auto& latency = metrics.Histogram("powerctl_http_request_duration_seconds",
                                    "Time to answer an HTTP request (handler and write)",
                                    kLatencyBuckets, {"server", "path"});
  // Every label value comes from a fixed set: the method is one of kKnownMethods or "other",
  // the path a route's or "other", the code one the server or a handler chose.
  return [&requests, &latency, server, log](const server::RequestRecord& r) {
    std::string path = r.path.empty() ? "other" : r.path;
    requests.Inc({server, r.method, path, std::to_string(r.status)});
    double seconds = static_cast<double>(r.duration.count()) / 1e6;
    latency.Observe({server, path}, seconds);
    // Never the body: pods carry env values that may be secrets.
    if (log)
      log->debug("{} {} {} -> {} in {:.1f}ms", server, r.method, path, r.status, seconds * 1000);
  };
}

}  // namespace

std::string NormalizeUrlPrefix(const std::string& prefix) {
  std::string p = prefix;
  while (!p.empty() && p.back() == '/') p.pop_back();
  if (!p.empty() && p.front() != '/') p.insert(p.begin(), '/');
  return p;
}

Status ValidateScheduleServerOptions(const ScheduleServerOptions& options) {
  if (!options.main.tls && !options.allow_insecure)
    return MakeError(ErrorCode::kInvalidInput,
                     "refusing to serve kube-scheduler over plain HTTP: give --tls-cert and "
                     "--tls-key (and --client-ca for mTLS), or --insecure-http for tests");
  const std::string& prefix = options.url_prefix;
  if (prefix.find_first_of("?# \t\r\n") != std::string::npos ||
      prefix.find("//") != std::string::npos)
    return MakeError(ErrorCode::kInvalidInput,
                     "URL prefix \"" + prefix + "\": must be a plain path such as /scheduler");
  return OkStatus();
}

server::HttpHandler JsonOnly(server::HttpHandler handler) {
  return [handler = std::move(handler)](const server::HttpRequest& request) {
    // kube-scheduler always sends application/json; a missing header is let through for
    // hand-made requests, a different media type is a client mistake worth naming.
    std::string type = request.Header("Content-Type");
    std::string media = type.substr(0, type.find(';'));
    while (!media.empty() && (media.back() == ' ' || media.back() == '\t')) media.pop_back();
    media = AsciiLower(media);
    bool json = media.empty() || media == "application/json";
    if (!json)
      return server::HttpResponse::Text(415, "unsupported Content-Type \"" + media +
                                                 "\": extender requests are application/json\n");
    return handler(request);
  };
}

Status RunScheduleServer(const ScheduleServerOptions& options, ExtenderHandler& handler,
                         const ScheduleServerHooks& hooks) {
  POWERCTL_CHECK_OK(ValidateScheduleServerOptions(options));
  server::StopWaiter stop(
      hooks.handle_signals, hooks.stop, [log = hooks.log](const std::string& signal) {
        if (log)
          log->warn(
              "{} ignored: powerctl.yaml is read at start (restart the server to apply a "
              "change); the TLS files are reloaded when they change",
              signal);
      });
  server::MetricsRegistry own_metrics;
  server::MetricsRegistry& metrics = hooks.metrics ? *hooks.metrics : own_metrics;
  std::atomic<bool> draining{false};

  auto& internal_errors = metrics.Counter(
      "powerctl_http_internal_errors_total",
      "Exceptions that escaped a server thread's event loop (a bug; the server went on)",
      {"server"});
  auto on_internal_error = [&internal_errors, log = hooks.log](const char* server) {
    return [&internal_errors, log, server](const std::string& what) {
      internal_errors.Inc({server});
      if (log) log->error("{} port: an exception escaped a server thread: {}", server, what);
    };
  };
  server::HttpServerOptions main_options = options.main;
  main_options.on_request = Recorder(metrics, "scheduler", hooks.log);
  main_options.on_internal_error = on_internal_error("scheduler");
  auto& tls_errors =
      metrics.Counter("powerctl_tls_handshake_errors_total",
                      "TLS handshakes that failed on the scheduler port, by reason", {"reason"});
  // A warning at most once a minute: loud enough that certificates kube-scheduler cannot use
  // are seen (with ignorable: true it goes on without power scores), yet a scanner cannot
  // flood the log.
  TlsFailureLog tls_failure_log(hooks.log, std::chrono::seconds(60), hooks.on_tls_warning);
  main_options.on_tls_error = [&tls_errors, &tls_failure_log](const std::string& remote,
                                                              const std::string& reason) {
    tls_errors.Inc({std::string(tls_failure_log.Record(remote, reason))});
  };
  // Prometheus' convention for "which build runs here": `powerctl status` reads it from a
  // process extender, whose version no image tag tells.
  metrics
      .Gauge("powerctl_build_info", "The running powerctl build (always 1)", {"version", "commit"})
      .Set({GetBuildInfo().version, GetBuildInfo().git_commit}, 1);
  auto& tls_reloads = metrics.Counter("powerctl_tls_reloads_total",
                                      "TLS files reloaded from disk, by result", {"result"});
  main_options.on_tls_reload = [&tls_reloads, log = hooks.log](bool ok,
                                                               const std::string& message) {
    tls_reloads.Inc({ok ? "ok" : "error"});
    if (log && ok) log->info("{}", message);
    if (log && !ok) log->warn("{}", message);
  };
  POWERCTL_TRY(main, server::HttpServer::Create(main_options));
  std::string prefix = NormalizeUrlPrefix(options.url_prefix);
  main->Route("POST", prefix + "/filter",
              JsonOnly([&handler](const server::HttpRequest& r) { return handler.Filter(r); }));
  main->Route("POST", prefix + "/prioritize",
              JsonOnly([&handler](const server::HttpRequest& r) { return handler.Prioritize(r); }));
  main->Route("POST", prefix + "/preempt",
              JsonOnly([&handler](const server::HttpRequest& r) { return handler.Preempt(r); }));

  server::HttpServerOptions ops_options = options.ops;
  ops_options.tls.reset();
  ops_options.on_request = Recorder(metrics, "ops", hooks.log);
  ops_options.on_internal_error = on_internal_error("ops");
  // The probes run on the I/O thread; routes added as RouteThreads::kWorker (scores,
  // decisions, predictions) on workers of their own, so they never hold a probe up.
  if (ops_options.worker_threads < 1) ops_options.worker_threads = 2;
  POWERCTL_TRY(ops, server::HttpServer::Create(ops_options));
  server::AddProbeRoutes(
      *ops, metrics,
      [&hooks, &draining] {
        if (draining) return server::ReadyState{false, {{"server", "shutting down"}}};
        return hooks.ready ? hooks.ready() : server::ReadyState{};
      },
      hooks.collect_metrics);
  if (hooks.add_ops_routes) hooks.add_ops_routes(*ops);

  POWERCTL_CHECK_OK(main->Start());
  if (Status s = ops->Start(); !s.ok()) {
    main->Stop(std::chrono::milliseconds(0));
    return s.error();
  }
  ScheduleServerEndpoints endpoints{main->url(), ops->url(), main->port(), ops->port()};
  if (hooks.log) {
    const char* security = !options.main.tls                          ? "plain HTTP, insecure"
                           : options.main.tls->client_ca_file.empty() ? "TLS"
                                                                      : "mTLS";
    hooks.log->info("schedule-server listening on {}{} ({}), ops on {}", endpoints.main_url, prefix,
                    security, endpoints.ops_url);
  }
  if (hooks.on_listening) hooks.on_listening(endpoints);

  std::string reason = stop.Wait();
  if (hooks.log)
    hooks.log->info("{}: draining (up to {}ms)", reason, options.drain_timeout.count());
  draining = true;
  main->Stop(options.drain_timeout);
  ops->Stop(std::chrono::milliseconds(1000));
  if (hooks.log) hooks.log->info("schedule-server stopped");
  return OkStatus();
}

}  // namespace powerctl::extender
