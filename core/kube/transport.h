#pragma once
// The HTTP boundary to the API server: an interface with a libcurl implementation
// (curl_transport.cpp) and fakes in tests.

#include "core/common/result.h"
#include "core/kube/connection.h"

#include <spdlog/logger.h>

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
};

struct HttpResponse {
  long status = 0;
  std::string body;
  std::map<std::string, std::string> headers;  // names lower-cased
};

class HttpTransport {
 public:
  virtual ~HttpTransport() = default;
  // One request. A transport-level failure (refused, TLS, timeout) is ErrorCode::kNetwork;
  // any HTTP status is a successful Send.
  virtual Result<HttpResponse> Send(const HttpRequest& request) = 0;
  // A streaming GET (watch): `on_line` gets each newline-terminated line until it
  // returns false or the server ends the stream. Returns the HTTP status; on a
  // non-200 status the body is returned in `error_body`.
  virtual Result<long> Stream(const HttpRequest& request,
                              const std::function<bool(std::string_view)>& on_line,
                              std::string* error_body) = 0;
};

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
