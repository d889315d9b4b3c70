#pragma once
// `powerctl consolidate wake --watch`: a wake pass (wake_run.h) every interval until SIGTERM,
// SIGINT or a stop request, and optionally a plain ops port (/healthz, /readyz, /metrics)
// publishing what each pass found (wake_metrics.h). The wait between passes ends at once on a
// signal; a pass in progress (a hook included, up to its timeout) finishes first. A failed
// pass (the API server unreachable, a permission missing) is reported, counted and retried at
// the next interval: a watcher outlives the API server's restarts.

#include "core/common/result.h"
#include "core/consolidate/wake_run.h"
#include "core/server/http_server.h"

#include <chrono>
#include <functional>
#include <optional>
#include <stop_token>
#include <string>

namespace powerctl::kube {
class Client;
}

namespace powerctl::consolidate {

struct WakeWatchOptions {
  WakeRequest request;
  std::chrono::milliseconds interval{30'000};    // from the start of one pass to the next
  std::optional<server::HttpServerOptions> ops;  // absent: no ops port
  bool handle_signals = true;                    // SIGTERM/SIGINT end the watch (off in tests)
  std::stop_token stop;                          // requesting stop acts like SIGTERM
  // After each pass, on the caller's thread: its report, or why it failed.
  std::function<void(const Result<WakeReport>&)> on_pass;
  std::function<void(const std::string& ops_url)> on_listening;  // the ops port is serving
};

// Runs until a signal or `options.stop`, and returns what stopped it ("SIGTERM", "SIGINT",
// "stop requested"). kNetwork when the ops port cannot be bound; kInvalidInput for a request
// WakeOnce refuses (checked before the first pass) or an interval under one second.
Result<std::string> RunWakeWatch(kube::Client& client, const WakeWatchOptions& options);

}  // namespace powerctl::consolidate
