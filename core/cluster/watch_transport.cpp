// The cache's transport decorator: stop, sync and health signals around a real transport.

#include "core/cluster/watch_transport.h"

#include "core/kube/client.h"

#include <utility>

namespace powerctl::cluster {
namespace {

std::string PathOnly(const std::string& path) {
  return path.substr(0, path.find('?'));
}

class WatchTransport : public kube::HttpTransport {
 public:
  WatchTransport(std::unique_ptr<kube::HttpTransport> inner, WatchHooks hooks)
      : inner_(std::move(inner)), hooks_(std::move(hooks)) {}

  Result<kube::HttpResponse> Send(const kube::HttpRequest& request) override {
    if (Stopping()) return Stopped();
    Result<kube::HttpResponse> response = inner_->Send(WithCancel(request));
    if (!response.ok()) {
      // A cancel is the cache stopping, not the API server failing.
      if (!kube::IsCancelled(response.error())) hooks_.on_failure(response.error());
    } else if (response->status >= 400) {
      hooks_.on_failure(kube::ErrorFromResponse(request.method, PathOnly(request.path), *response));
    } else {
      hooks_.on_success();
    }
    return response;
  }

  Result<long> Stream(const kube::HttpRequest& request,
                      const std::function<bool(std::string_view)>& on_line,
                      std::string* error_body) override {
    if (Stopping()) return Stopped();
    hooks_.on_stream_start();
    bool first = true;
    auto guarded = [&](std::string_view line) {
      if (Stopping()) return false;
      if (first) hooks_.on_success();  // the stream is up: the API is reachable again
      first = false;
      return on_line(line);
    };
    Result<long> status = inner_->Stream(WithCancel(request), guarded, error_body);
    if (!status.ok()) {
      if (!kube::IsCancelled(status.error())) hooks_.on_failure(status.error());
    } else if (*status != 200 && *status != 410) {
      kube::HttpResponse response{*status, error_body != nullptr ? *error_body : "", {}};
      hooks_.on_failure(kube::ErrorFromResponse("GET", PathOnly(request.path), response));
    } else {
      hooks_.on_success();
    }
    return status;
  }

 private:
  // kInterrupted, like a cancel (kube::IsCancelled): the client ends without retrying.
  static Error Stopped() { return MakeError(ErrorCode::kInterrupted, "the cluster cache stopped"); }
  bool Stopping() const { return hooks_.stopping->load(); }
  kube::HttpRequest WithCancel(kube::HttpRequest request) const {
    request.cancel = hooks_.stopping;
    return request;
  }

  std::unique_ptr<kube::HttpTransport> inner_;
  WatchHooks hooks_;
};

}  // namespace

std::unique_ptr<kube::HttpTransport> MakeWatchTransport(std::unique_ptr<kube::HttpTransport> inner,
                                                        WatchHooks hooks) {
  return std::make_unique<WatchTransport>(std::move(inner), std::move(hooks));
}

}  // namespace powerctl::cluster
