#pragma once
// An HttpTransport decorator for the cache's watches: it tells the cache when a watch stream
// begins (so the list before it has been delivered), whether requests succeed or fail (for
// readiness), refuses further requests once the cache is stopping, and passes the stop flag
// down as HttpRequest::cancel so that a request in flight (an idle watch) ends at once.

#include "core/common/result.h"
#include "core/kube/transport.h"

#include <atomic>
#include <functional>
#include <memory>
#include <string>

namespace powerctl::cluster {

struct WatchHooks {
  const std::atomic<bool>* stopping = nullptr;  // set once, when the cache stops; must outlive
  std::function<void()> on_stream_start;
  std::function<void()> on_success;
  std::function<void(const Error&)> on_failure;  // one line, no bodies; not for a cancel
};

std::unique_ptr<kube::HttpTransport> MakeWatchTransport(std::unique_ptr<kube::HttpTransport> inner,
                                                        WatchHooks hooks);

}  // namespace powerctl::cluster
