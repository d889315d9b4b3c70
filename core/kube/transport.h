#pragma once
// The HTTP boundary to the API server: an interface with a libcurl implementation
// (curl_transport.cpp) and fakes in tests.

#include "core/common/result.h"
#include "core/kube/connection.h"

#include <spdlog/logger.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>

namespace powerctl::kube {

struct HttpRequest {
  std::string method;  // GET, POST, PUT, PATCH, DELETE
  std::string path;    // "/api/v1/nodes?limit=500", appended to the server URL
  std::string body;
  std::string content_type;
  std::chrono::milliseconds timeout{30000};  // whole request; 0 = none (watches)
  // Set from another thread to abort the request: one not started yet fails at once, one in
  // flight (a watch idle for minutes too) within about a second. Must outlive the request.
  const std::atomic<bool>* cancel = nullptr;
};

struct HttpResponse {
  long status = 0;
  std::string body;
  std::map<std::string, std::string> headers;  // names lower-cased
};

class HttpTransport {
 public:
  virtual ~HttpTransport() = default;
  // One request. A transport-level failure (refused, TLS, timeout) is ErrorCode::kNetwork,
  // a request aborted by HttpRequest::cancel is ErrorCode::kInterrupted (IsCancelled); any
  // HTTP status is a successful Send.
  virtual Result<HttpResponse> Send(const HttpRequest& request) = 0;
  // A streaming GET (watch): `on_line` gets each newline-terminated line until it
  // returns false or the server ends the stream. Returns the HTTP status; on a
  // non-200 status the body is returned in `error_body`. Errors as for Send.
  virtual Result<long> Stream(const HttpRequest& request,
                              const std::function<bool(std::string_view)>& on_line,
                              std::string* error_body) = 0;
};

// The error of a request aborted by HttpRequest::cancel. Callers treat it as a requested stop:
// not a failure to report or retry.
inline Error CancelledError(const std::string& what) {
  return MakeError(ErrorCode::kInterrupted, what + " cancelled");
}
inline bool IsCancelled(const Error& error) {
  return error.code == ErrorCode::kInterrupted;
}

struct TransportOptions {
  std::shared_ptr<spdlog::logger> log;  // request lines at debug/trace; never bodies or credentials
  std::map<std::string, std::string> environment;  // for exec plugins
  std::chrono::milliseconds connect_timeout{10000};
};

// Connection reuse (one curl handle per transport, guarded by a mutex), TLS from the
// connection, bearer token / token file / client certificate / exec plugin credentials
// (cached until they expire, refreshed once on a 401).
Result<std::unique_ptr<HttpTransport>> MakeCurlTransport(const ClusterConnection& connection,
                                                         const TransportOptions& options);

}  // namespace powerctl::kube
