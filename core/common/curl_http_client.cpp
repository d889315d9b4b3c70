// HttpClient over libcurl (core/common/curl_easy.h). Idle easy handles are pooled by
// scheme://host:port, each keeping its connection alive, so periodic queries of the same
// Prometheus or ipmi_exporter reuse TCP connections; concurrent requests take separate
// handles. The pool is small and drops the least recently used handle: scraping thousands of
// nodes must not hold thousands of idle sockets.
//
// Messages and logs name the URL without user:password@; bodies are never logged.

#include "core/common/curl_easy.h"
#include "core/common/http_client.h"

#include <algorithm>
#include <deque>
#include <iterator>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

namespace powerctl {
namespace {

constexpr std::size_t kMaxIdle = 32;

// scheme://[user@]host:port -> scheme://host:port, the pool key; the rest is dropped.
std::string Origin(const std::string& url, bool keep_path) {
  std::size_t scheme = url.find("://");
  std::size_t start = scheme == std::string::npos ? 0 : scheme + 3;
  std::size_t end = url.find_first_of("/?#", start);
  if (end == std::string::npos) end = url.size();
  std::size_t at = url.rfind('@', end);
  std::size_t host = at == std::string::npos || at < start ? start : at + 1;
  std::string out = url.substr(0, start) + url.substr(host, end - host);
  if (keep_path) out += url.substr(end, url.find_first_of("?#", end) - end);
  return out;
}

class CurlHttpClient : public HttpClient {
 public:
  explicit CurlHttpClient(std::size_t max_body_bytes) : max_body_bytes_(max_body_bytes) {}

  Result<HttpClientResponse> Do(const HttpClientRequest& request) override {
    const std::string where = Origin(request.url, /*keep_path=*/true);
    if (request.method != "GET" && request.method != "POST") {
      return MakeError(ErrorCode::kInternal, "unsupported HTTP method " + request.method);
    }
    const std::string origin = Origin(request.url, /*keep_path=*/false);
    POWERCTL_TRY(handle, Take(origin));
    HttpClientResponse response;
    if (request.expected_body_bytes > 0) {
      response.body.reserve(std::min(request.expected_body_bytes, max_body_bytes_));
    }
    curl::Request options;
    options.url = request.url;
    options.method = request.method;
    options.body = request.body;
    options.content_type = request.content_type;
    // At least 1 ms: 0 would mean no timeout at all.
    options.timeout = std::max(request.timeout, std::chrono::milliseconds(1));
    options.accept_compressed = true;  // exporters gzip on request
    {
      curl::Transfer transfer(handle.get(), options);
      transfer.KeepResponse(&response.body, max_body_bytes_, &response.headers);
      const CURLcode rc = transfer.Perform();
      // A handle whose transfer failed may hold a broken connection; it is not pooled.
      if (transfer.body_too_large()) {
        return MakeError(ErrorCode::kNetwork, "the response from " + where + " is larger than " +
                                                  std::to_string(max_body_bytes_) + " bytes");
      }
      if (rc != CURLE_OK) return transfer.NetworkError(rc, where);
      response.status = transfer.status();
    }
    Give(origin, std::move(handle));
    return response;
  }

 private:
  Result<curl::Handle> Take(const std::string& origin) {
    {
      std::lock_guard lock(mu_);
      for (auto it = idle_.rbegin(); it != idle_.rend(); ++it) {
        if (it->first != origin) continue;
        curl::Handle handle = std::move(it->second);
        idle_.erase(std::next(it).base());
        return handle;
      }
    }
    return curl::NewHandle();
  }

  void Give(const std::string& origin, curl::Handle handle) {
    std::lock_guard lock(mu_);
    idle_.emplace_back(origin, std::move(handle));
    if (idle_.size() > kMaxIdle) idle_.pop_front();  // the least recently used
  }

  const std::size_t max_body_bytes_;
  std::mutex mu_;                                          // guards idle_
  std::deque<std::pair<std::string, curl::Handle>> idle_;  // oldest first
};

}  // namespace

std::unique_ptr<HttpClient> MakeCurlHttpClient(std::size_t max_body_bytes) {
  return std::make_unique<CurlHttpClient>(max_body_bytes);
}

}  // namespace powerctl
