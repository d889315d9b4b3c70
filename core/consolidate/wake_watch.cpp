#include "core/consolidate/wake_watch.h"

#include "core/consolidate/wake_metrics.h"
#include "core/server/metrics_registry.h"
#include "core/server/ops.h"
#include "core/server/stop_waiter.h"

#include <algorithm>
#include <memory>
#include <mutex>

namespace powerctl::consolidate {
namespace {

// What /readyz says: ready once a pass went through, degraded while the last one failed.
class WatchHealth {
 public:
  void Passed() {
    std::lock_guard lock(mu_);
    passed_ = true;
    error_.clear();
  }
  void Failed(const std::string& why) {
    std::lock_guard lock(mu_);
    error_ = why;
  }
  server::ReadyState Ready() const {
    std::lock_guard lock(mu_);
    server::ReadyState state;
    state.ready = passed_;
    if (!error_.empty()) {
      state.degraded.push_back({"pass", error_});
    } else if (!passed_) {
      state.degraded.push_back({"pass", "first pass in progress"});
    }
    return state;
  }

 private:
  mutable std::mutex mu_;
  bool passed_ = false;
  std::string error_;
};

}  // namespace

Result<std::string> RunWakeWatch(kube::Client& client, const WakeWatchOptions& options) {
  POWERCTL_CHECK_OK(ValidateHook(options.request.on_wake, "--on-wake", "--hook-timeout"));
  if (options.interval < std::chrono::seconds(1)) {
    return MakeError(ErrorCode::kInvalidInput, "the interval between passes must be 1s or more");
  }
  // Before the port opens, so that a signal right after it is never lost.
  server::StopWaiter stop(options.handle_signals, options.stop);
  server::MetricsRegistry registry;
  WakeMetrics metrics(registry);
  WatchHealth health;
  std::unique_ptr<server::HttpServer> ops;
  if (options.ops) {
    server::HttpServerOptions ops_options = *options.ops;
    // /metrics renders there, off the probes' I/O thread.
    if (ops_options.worker_threads < 1) ops_options.worker_threads = 1;
    POWERCTL_TRY(created, server::HttpServer::Create(std::move(ops_options)));
    ops = std::move(created);
    server::AddProbeRoutes(*ops, registry, [&health] { return health.Ready(); });
    POWERCTL_CHECK_OK(ops->Start());
    if (options.on_listening) options.on_listening(ops->url());
  }
  for (;;) {
    const auto started = std::chrono::steady_clock::now();
    Result<WakeReport> report = WakeOnce(client, options.request, std::chrono::system_clock::now());
    if (report.ok()) {
      metrics.RecordPass(*report, std::chrono::system_clock::now());
      health.Passed();
    } else {
      metrics.RecordFailedPass();
      health.Failed(report.error().message);
    }
    if (options.on_pass) options.on_pass(report);
    const auto left = std::max(std::chrono::steady_clock::duration::zero(),
                               started + options.interval - std::chrono::steady_clock::now());
    if (std::optional<std::string> why =
            stop.WaitFor(std::chrono::duration_cast<std::chrono::milliseconds>(left))) {
      if (ops) ops->Stop(std::chrono::milliseconds(1'000));
      return *why;
    }
  }
}

}  // namespace powerctl::consolidate
