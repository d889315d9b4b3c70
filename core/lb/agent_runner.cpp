#include "core/lb/agent_runner.h"

#include "core/common/http_client.h"
#include "core/lb/agent.h"
#include "core/lb/service_watch.h"
#include "core/server/metrics_registry.h"
#include "core/server/ops.h"
#include "core/server/stop_waiter.h"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace powerctl::lb {
namespace {

// Wakes the sync loop: a change (debounced) or a stop.
class Wakeup {
 public:
  void Changed() {
    {
      std::lock_guard lock(mu_);
      changed_ = true;
    }
    cv_.notify_all();
  }
  void Stop() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
  }
  // Waits for a change or `resync`; after a change, `debounce` more so that a burst of
  // events is one sync. False when stopping.
  bool Wait(std::chrono::milliseconds resync, std::chrono::milliseconds debounce) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, resync, [this] { return changed_ || stopping_; });
    if (changed_ && !stopping_) cv_.wait_for(lock, debounce, [this] { return stopping_; });
    changed_ = false;
    return !stopping_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool changed_ = false;
  bool stopping_ = false;
};

server::ReadyState Readiness(const LbAgent& agent, const ServiceWatch& watch) {
  server::ReadyState state;
  // Ready once the first sync ran: before that the agent has not looked at the Services.
  state.ready = agent.synced();
  if (!state.ready) {
    state.degraded.push_back(
        {"sync", watch.listed() ? "first sync in progress" : "waiting for the list of Services"});
  }
  if (std::string e = agent.last_error(); !e.empty()) {
    state.degraded.push_back({"rules", "programming failed, kube-proxy carries the traffic: " + e});
  }
  if (std::string e = watch.error(); !e.empty()) state.degraded.push_back({"watch", e});
  return state;
}

}  // namespace

Status RunLbAgent(const AgentRunOptions& options, Balancer& balancer) {
  auto log = options.log;
  server::StopWaiter stop(options.handle_signals, options.stop, [log](const std::string& signal) {
    if (log)
      log->warn(
          "{} ignored: powerctl.yaml is read at start (restart "
          "the agent to apply a change)",
          signal);
  });

  POWERCTL_TRY(transport, kube::MakeCurlTransport(options.cluster, options.transport));
  kube::ClientOptions client_options;
  client_options.log = log;
  client_options.connection_description = options.cluster.description;
  kube::Client kube(std::move(transport), client_options);
  std::unique_ptr<HttpClient> http = MakeCurlHttpClient();

  server::MetricsRegistry metrics;
  AgentDependencies deps;
  deps.predict.kube = &kube;
  deps.predict.http = http.get();
  deps.predict.log = log;
  deps.balancer = &balancer;
  deps.metrics = &metrics;
  LbAgent agent(options.node, options.config, deps);

  Wakeup wakeup;
  ServiceWatchOptions watch_options;
  watch_options.client = client_options;
  watch_options.restart_after = options.watch_restart;
  watch_options.on_change = [&wakeup] { wakeup.Changed(); };
  auto connection = options.cluster;
  auto transport_options = options.transport;
  ServiceWatch watch(
      [connection, transport_options] {
        return kube::MakeCurlTransport(connection, transport_options);
      },
      watch_options);

  server::HttpServerOptions ops_options = options.ops;
  // /metrics renders there, off the probes' I/O thread.
  if (ops_options.worker_threads < 1) ops_options.worker_threads = 1;
  ops_options.on_internal_error = [log](const std::string& what) {
    if (log) log->error("ops port: an exception escaped a server thread: {}", what);
  };
  POWERCTL_TRY(ops, server::HttpServer::Create(std::move(ops_options)));
  server::AddProbeRoutes(*ops, metrics, [&agent, &watch] { return Readiness(agent, watch); });
  ops->Route("GET", "/status", [&agent](const server::HttpRequest&) {
    // The status quotes nft's and the API server's words: never let their bytes fail it.
    return server::HttpResponse::Json(
        200,
        agent.StatusJson().dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  });
  POWERCTL_CHECK_OK(ops->Start());
  if (log) {
    log->info("lb-agent on node {}: mode {}, ops on {}, resync every {}ms", options.node,
              balancer.Mode(), ops->url(), options.resync.count());
  }
  if (options.on_listening) options.on_listening(ops->url());

  watch.Start();
  std::thread loop([&] {
    while (wakeup.Wait(options.resync, options.debounce)) {
      if (!watch.listed()) continue;  // nothing known yet: kube-proxy alone, as before we started
      agent.Sync(watch.Services());
    }
  });

  std::string reason = stop.Wait();
  if (log) log->info("lb-agent: {}: removing the rules, kube-proxy carries the traffic", reason);
  wakeup.Stop();
  loop.join();  // a sync in progress finishes first, so nothing is programmed after the removal
  watch.Stop();
  Status removed = agent.Shutdown();
  ops->Stop(std::chrono::milliseconds(1'000));
  if (!removed.ok()) {
    if (log) log->error("lb-agent: removing the rules failed: {}", removed.error().message);
    return WithContext(removed.error(), "removing the lb-agent's rules at exit");
  }
  return OkStatus();
}

}  // namespace powerctl::lb
