#pragma once
// An HttpTransport decorator for the cache's watches: it tells the cache when a watch stream
// begins (so the list before it has been delivered), whether requests succeed or fail (for
// readiness), and refuses further requests once the cache is stopping.

#include "core/common/result.h"
#include "core/kube/transport.h"

#include <functional>
#include <memory>
#include <string>

namespace powerctl::cluster {

struct WatchHooks {
  std::function<bool()> stopping;
  std::function<void()> on_stream_start;
  std::function<void()> on_success;
  std::function<void(const Error&)> on_failure;  // one line, no bodies of requests
};

std::unique_ptr<kube::HttpTransport> MakeWatchTransport(std::unique_ptr<kube::HttpTransport> inner,
                                                        WatchHooks hooks);

}  // namespace powerctl::cluster
