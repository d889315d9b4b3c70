#pragma once
// What every powerctl server's plain ops port shares (schedule-server and lb-agent): where it
// listens, and what /readyz reports.

#include "core/common/result.h"
#include "core/server/http_server.h"

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

}  // namespace powerctl::server
