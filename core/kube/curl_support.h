#pragma once
// The API server's side of curl_transport.cpp, over the shared libcurl layer
// (core/common/curl_easy.h): the request target (with tls-server-name) and line splitting
// for watches. Internal to the transport.

#include "core/common/result.h"
#include "core/kube/connection.h"

#include <curl/curl.h>

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace powerctl::kube::curl {

// Where requests go. With tls-server-name the URL names that host, so that SNI and the
// certificate check use it (like Go's tls.Config.ServerName), and CURLOPT_CONNECT_TO sends
// the connection to the real address; the Host header keeps the real address.
struct Target {
  std::string display;      // the server as configured, for logs and messages
  std::string base_url;     // scheme://host:port[/prefix], no trailing '/'
  std::string connect_to;   // "" or CURLOPT_CONNECT_TO's "name:port:host:port"
  std::string host_header;  // "" or "Host: host:port"
};

// kInvalidInput for a server that is not an http(s) URL or a bad tls-server-name.
Result<Target> MakeTarget(const ClusterConnection& connection);

// The largest response body kept (lists are paged, so real ones stay far below): a server that
// sends more fails the request instead of exhausting memory.
inline constexpr std::size_t kMaxResponseBodyBytes = 64 << 20;

// The state of a Stream: lines go to on_line while the status is 200, else the body
// (capped) is kept as the error body.
struct StreamState {
  CURL* handle = nullptr;
  const std::function<bool(std::string_view)>* on_line = nullptr;
  std::string buffer;  // the incomplete last line
  std::string error_body;
  long status = 0;
  bool stopped = false;  // on_line returned false
};
// Delivers one line (without "\r\n"); empty lines are skipped. False: the handler stopped.
bool DeliverLine(StreamState& state, std::string_view line);
// CURLOPT_WRITEFUNCTION for a StreamState.
size_t StreamWrite(char* data, size_t size, size_t count, void* user);

}  // namespace powerctl::kube::curl
