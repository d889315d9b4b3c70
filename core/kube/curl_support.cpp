#include "core/kube/curl_support.h"

#include "core/common/json_bounds.h"

#include <algorithm>
#include <memory>
#include <string>

namespace powerctl::kube::curl {
namespace {

constexpr std::size_t kMaxErrorBody = 64 * 1024;

std::string StripSlashes(std::string s) {
  while (!s.empty() && s.back() == '/') s.pop_back();
  return s;
}

}  // namespace

Result<Target> MakeTarget(const ClusterConnection& connection) {
  Target target{StripSlashes(connection.server), StripSlashes(connection.server), "", ""};
  std::unique_ptr<CURLU, decltype(&curl_url_cleanup)> url(curl_url(), &curl_url_cleanup);
  Error invalid{ErrorCode::kInvalidInput, "invalid API server URL \"" + connection.server + "\""};
  if (!url || curl_url_set(url.get(), CURLUPART_URL, connection.server.c_str(), 0) != CURLUE_OK) {
    return invalid;
  }
  auto part = [&](CURLUPart which, unsigned flags) {
    char* value = nullptr;
    if (curl_url_get(url.get(), which, &value, flags) != CURLUE_OK) return std::string();
    std::string out(value);
    curl_free(value);
    return out;
  };
  std::string scheme = part(CURLUPART_SCHEME, 0);
  if (scheme != "https" && scheme != "http") return invalid;
  std::string host = part(CURLUPART_HOST, 0);
  std::string port = part(CURLUPART_PORT, CURLU_DEFAULT_PORT);
  if (connection.tls_server_name.empty() || host == connection.tls_server_name) return target;
  if (curl_url_set(url.get(), CURLUPART_HOST, connection.tls_server_name.c_str(), 0) != CURLUE_OK ||
      curl_url_set(url.get(), CURLUPART_PORT, port.c_str(), 0) != CURLUE_OK) {
    return MakeError(ErrorCode::kInvalidInput,
                     "invalid tls-server-name \"" + connection.tls_server_name + "\"");
  }
  target.base_url = StripSlashes(part(CURLUPART_URL, 0));
  target.connect_to = connection.tls_server_name + ":" + port + ":" + host + ":" + port;
  target.host_header = "Host: " + host + ":" + port;
  return target;
}

bool DeliverLine(StreamState& state, std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line.empty() || (*state.on_line)(line);
}

size_t StreamWrite(char* data, size_t size, size_t count, void* user) {
  auto& state = *static_cast<StreamState*>(user);
  size_t n = size * count;
  if (state.status == 0) curl_easy_getinfo(state.handle, CURLINFO_RESPONSE_CODE, &state.status);
  if (state.status != 200) {
    state.error_body.append(
        data, std::min(n, kMaxErrorBody - std::min(kMaxErrorBody, state.error_body.size())));
    return n;
  }
  state.buffer.append(data, n);
  size_t start = 0;
  for (size_t nl; (nl = state.buffer.find('\n', start)) != std::string::npos; start = nl + 1) {
    if (!DeliverLine(state, std::string_view(state.buffer).substr(start, nl - start))) {
      state.stopped = true;
      return 0;  // makes libcurl abort the transfer
    }
  }
  state.buffer.erase(0, start);
  // A line that never ends would grow without bound: once it is longer than any event the
  // handler accepts, hand it over as it is; the handler rejects it and stops the watch.
  if (state.buffer.size() > kKubeJsonLimits.max_bytes) {
    const bool more = DeliverLine(state, state.buffer);
    state.buffer.clear();
    if (!more) {
      state.stopped = true;
      return 0;
    }
  }
  return n;
}

}  // namespace powerctl::kube::curl
