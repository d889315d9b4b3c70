#pragma once
// A plain HTTP(S) client boundary for Prometheus, ipmi_exporter and model servers (the
// Kubernetes API has its own transport in core/kube). libcurl in production, fakes in tests.

#include "core/common/result.h"

#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <string>

namespace powerctl {

struct HttpClientRequest {
  std::string method = "GET";  // GET or POST
  std::string url;             // absolute: http://host:port/path?query
  std::string body;
  std::string content_type;
  std::chrono::milliseconds timeout{2000};  // whole request, connect included
  // A hint, not a limit: room for this many response bytes is made up front. A body that
  // grows by appending is copied at each doubling and, at its peak, held twice over; a
  // caller repeating a large query knows about how large the answer will be.
  std::size_t expected_body_bytes = 0;
};

struct HttpClientResponse {
  long status = 0;
  std::string body;
  std::map<std::string, std::string> headers;  // names lower-cased
};

class HttpClient {
 public:
  virtual ~HttpClient() = default;
  // A transport failure (refused, timeout, DNS) is ErrorCode::kNetwork naming the URL;
  // any HTTP status is a successful call. Thread-safe.
  virtual Result<HttpClientResponse> Do(const HttpClientRequest& request) = 0;
};

// Keeps connections alive per host (a small pool of curl handles); bodies are capped at
// `max_body_bytes` (larger responses fail) so a misbehaving server cannot exhaust memory.
std::unique_ptr<HttpClient> MakeCurlHttpClient(std::size_t max_body_bytes = 64 << 20);

}  // namespace powerctl
