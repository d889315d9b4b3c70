#pragma once
// What every powerctl server's plain ops port shares (schedule-server, lb-agent, consolidate
// wake --watch): where it listens, what /readyz reports, and the probe and metrics routes.

#include "core/common/result.h"
#include "core/server/http_server.h"

#include <functional>
#include <string>
#include <vector>

namespace powerctl::server {

// What /readyz reports. Degraded dependencies are named even while the server stays ready
// (the extender then answers with neutral scores rather than rejecting pods).
struct ReadyState {
  struct Dependency {
    std::string name;    // "prometheus", "model tfserving-a:8500", ...
    std::string reason;  // one line, no secrets
  };
  bool ready = true;
  std::vector<Dependency> degraded;
};

// "HOST:PORT", "[::1]:PORT" or ":PORT" (all IPv4 interfaces); the port may be 0.
struct ListenAddress {
  std::string host;
  int port = 0;
};
Result<ListenAddress> ParseListenAddress(const std::string& text);

// 200 when ready else 503; JSON {"ready":bool,"degraded":[{"name":..,"reason":..}]}.
HttpResponse ReadyResponse(const ReadyState& state);

class MetricsRegistry;

// Adds GET /healthz (200 "ok" while the process serves), /readyz (ReadyResponse of `ready()`)
// and /metrics (`metrics` rendered, after `collect()` when given: gauges read at scrape time)
// to `server`, on its I/O threads. `metrics` must outlive the server.
void AddProbeRoutes(HttpServer& server, const MetricsRegistry& metrics,
                    std::function<ReadyState()> ready, std::function<void()> collect = {});

}  // namespace powerctl::server
