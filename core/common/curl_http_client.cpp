// HttpClient over libcurl. Idle easy handles are pooled by scheme://host:port, each keeping
// its connection alive, so periodic queries of the same Prometheus or ipmi_exporter reuse
// TCP connections; concurrent requests take separate handles. The pool is small and drops
// the least recently used handle: scraping thousands of nodes must not hold thousands of
// idle sockets.
//
// Messages and logs name the URL without user:password@; bodies are never logged.

#include "core/common/http_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <deque>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

namespace powerctl {
namespace {

constexpr std::size_t kMaxIdle = 32;

struct HandleDeleter {
  void operator()(CURL* handle) const { curl_easy_cleanup(handle); }
};
using Handle = std::unique_ptr<CURL, HandleDeleter>;

struct SlistDeleter {
  void operator()(curl_slist* list) const { curl_slist_free_all(list); }
};
using Slist = std::unique_ptr<curl_slist, SlistDeleter>;

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

struct Body {
  std::string* data;
  std::size_t limit;
  bool too_large = false;
};

size_t WriteBody(char* data, size_t size, size_t count, void* user) {
  auto* body = static_cast<Body*>(user);
  std::size_t n = size * count;
  if (body->data->size() + n > body->limit) {
    body->too_large = true;
    return 0;  // aborts the transfer with CURLE_WRITE_ERROR
  }
  body->data->append(data, n);
  return n;
}

// Header lines of the final response; a status line (after 100 Continue or a redirect
// that is not followed) starts over.
size_t WriteHeader(char* data, size_t size, size_t count, void* user) {
  auto* headers = static_cast<std::map<std::string, std::string>*>(user);
  std::string line(data, size * count);
  if (line.rfind("HTTP/", 0) == 0) {
    headers->clear();
    return size * count;
  }
  std::size_t colon = line.find(':');
  if (colon == std::string::npos) return size * count;
  std::string name = line.substr(0, colon);
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::size_t begin = line.find_first_not_of(" \t", colon + 1);
  std::size_t end = line.find_last_not_of(" \t\r\n");
  std::string value =
      begin == std::string::npos || end < begin ? "" : line.substr(begin, end - begin + 1);
  auto [it, inserted] = headers->emplace(name, value);
  if (!inserted) it->second += ", " + value;
  return size * count;
}

std::string FailureMessage(CURLcode rc, const char* error_buffer, const std::string& where,
                           long timeout_ms) {
  std::string detail = error_buffer[0] != '\0' ? error_buffer : curl_easy_strerror(rc);
  switch (rc) {
    case CURLE_COULDNT_CONNECT:
      return "cannot connect to " + where + ": " + detail;
    case CURLE_COULDNT_RESOLVE_HOST:
      return "cannot resolve the host of " + where + ": " + detail;
    case CURLE_OPERATION_TIMEDOUT:
      return "request to " + where + " timed out after " + std::to_string(timeout_ms) + "ms";
    default:
      return "request to " + where + " failed: " + detail;
  }
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
    Handle handle = Take(origin);
    if (!handle) return MakeError(ErrorCode::kInternal, "curl_easy_init failed");
    CURL* h = handle.get();
    char error_buffer[CURL_ERROR_SIZE] = "";
    HttpClientResponse response;
    if (request.expected_body_bytes > 0) {
      response.body.reserve(std::min(request.expected_body_bytes, max_body_bytes_));
    }
    Body body{&response.body, max_body_bytes_};
    Slist headers;
    auto add_header = [&headers](const std::string& line) {
      if (curl_slist* grown = curl_slist_append(headers.get(), line.c_str())) {
        headers.release();
        headers.reset(grown);
      }
    };
    curl_easy_setopt(h, CURLOPT_URL, request.url.c_str());
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, error_buffer);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);  // no SIGALRM: callers are multi-threaded
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_USERAGENT, "powerctl");
    long timeout_ms = std::max<long>(1, static_cast<long>(request.timeout.count()));
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");  // exporters gzip on request
    curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
    if (request.method == "GET") {
      curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    } else {
      curl_easy_setopt(h, CURLOPT_POST, 1L);
      curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE,
                       static_cast<curl_off_t>(request.body.size()));
      curl_easy_setopt(h, CURLOPT_POSTFIELDS, request.body.c_str());
    }
    add_header("Expect:");  // no 100-continue round trip
    if (!request.content_type.empty()) add_header("Content-Type: " + request.content_type);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers.get());
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, WriteBody);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &body);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, WriteHeader);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, &response.headers);
    CURLcode rc = curl_easy_perform(h);
    if (rc == CURLE_OK) curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &response.status);
    // The error buffer, header list and body die with this call: the handle must not keep
    // pointing at them. Resetting keeps the live connection.
    curl_easy_reset(h);
    if (rc != CURLE_OK) {
      // A handle whose transfer failed may hold a broken connection; do not pool it.
      if (body.too_large) {
        return MakeError(ErrorCode::kNetwork, "the response from " + where + " is larger than " +
                                                  std::to_string(max_body_bytes_) + " bytes");
      }
      return MakeError(ErrorCode::kNetwork, FailureMessage(rc, error_buffer, where, timeout_ms));
    }
    Give(origin, std::move(handle));
    return response;
  }

 private:
  Handle Take(const std::string& origin) {
    {
      std::lock_guard lock(mu_);
      for (auto it = idle_.rbegin(); it != idle_.rend(); ++it) {
        if (it->first != origin) continue;
        Handle handle = std::move(it->second);
        idle_.erase(std::next(it).base());
        return handle;
      }
    }
    return Handle(curl_easy_init());
  }

  void Give(const std::string& origin, Handle handle) {
    std::lock_guard lock(mu_);
    idle_.emplace_back(origin, std::move(handle));
    if (idle_.size() > kMaxIdle) idle_.pop_front();  // the least recently used
  }

  const std::size_t max_body_bytes_;
  std::mutex mu_;                                    // guards idle_
  std::deque<std::pair<std::string, Handle>> idle_;  // oldest first
};

}  // namespace

std::unique_ptr<HttpClient> MakeCurlHttpClient(std::size_t max_body_bytes) {
  // Thread-safe since curl 7.84 when no other thread is inside curl_global_init; a function
  // static runs it once, before the first handle.
  static const CURLcode global_init = curl_global_init(CURL_GLOBAL_DEFAULT);
  (void)global_init;
  return std::make_unique<CurlHttpClient>(max_body_bytes);
}

}  // namespace powerctl
