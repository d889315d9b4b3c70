#pragma once
// The libcurl layer under both HTTP clients: HttpClient (curl_http_client.cpp) and the API
// server's transport (core/kube/curl_transport.cpp). It holds what both need exactly once:
// the process's curl_global_init, handle ownership, the options of a request (method and body,
// headers, timeouts, TLS, cancellation), the body cap, header collection, and a failed
// transfer as a kNetwork error naming the server.

#include "core/common/result.h"

#include <curl/curl.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace powerctl::curl {

struct HandleDeleter {
  void operator()(CURL* handle) const { curl_easy_cleanup(handle); }
};
using Handle = std::unique_ptr<CURL, HandleDeleter>;

// Runs curl_global_init on the first call, the only one in the process: it must come before
// any other libcurl call and is not safe while other threads are inside libcurl, so every
// handle is made by NewHandle. kInternal when libcurl cannot be initialised.
Status GlobalInit();
// A new easy handle (after GlobalInit).
Result<Handle> NewHandle();

// Owns a curl_slist; libcurl only borrows lists, so they must outlive the transfer.
class Slist {
 public:
  Slist() = default;
  Slist(const Slist&) = delete;
  Slist& operator=(const Slist&) = delete;
  ~Slist() { curl_slist_free_all(list_); }
  void Add(const std::string& item) {
    if (curl_slist* grown = curl_slist_append(list_, item.c_str())) list_ = grown;
  }
  curl_slist* get() const { return list_; }

 private:
  curl_slist* list_ = nullptr;
};

// TLS of a request. The defaults are libcurl's: the system's CAs, no client certificate.
// The PEM text is copied into the handle, so it need not outlive the Transfer.
struct TlsOptions {
  bool insecure_skip_verify = false;
  std::string_view ca_pem;    // set: only this CA is trusted, not the system store
  std::string_view cert_pem;  // with key_pem: a client certificate
  std::string_view key_pem;
};

struct Request {
  std::string url;             // absolute: scheme://host:port/path?query
  std::string method = "GET";  // GET sends no body; POST, PUT and PATCH always send one
  std::string_view body;       // borrowed until the transfer ends
  std::string content_type;
  std::vector<std::string> headers;              // more "Name: value" lines
  std::chrono::milliseconds timeout{0};          // the whole transfer; 0: none
  std::chrono::milliseconds connect_timeout{0};  // 0: libcurl's default
  bool accept_compressed = false;                // ask for any encoding libcurl decodes (gzip, ...)
  // Keepalive probes notice a dead peer on a connection idle for minutes (a watch), where a
  // low-speed limit would cut healthy idle connections.
  bool tcp_keepalive = false;
  std::string connect_to;  // "" or CURLOPT_CONNECT_TO's "name:port:host:port"
  TlsOptions tls;
  // Set from another thread to abort the transfer (CURLE_ABORTED_BY_CALLBACK) within about
  // a second, data flowing or not. Must outlive the transfer.
  const std::atomic<bool>* cancel = nullptr;
};

// A response body kept up to a cap: a server that sends more fails the transfer instead of
// exhausting memory.
struct CappedBody {
  std::string* data = nullptr;
  std::size_t max_bytes = 0;
  bool too_large = false;  // the transfer stopped at the cap
};
// CURLOPT_WRITEFUNCTION appending to a CappedBody; past the cap it refuses the write, which
// libcurl reports as CURLE_WRITE_ERROR.
size_t AppendCapped(char* data, size_t size, size_t count, void* capped_body);
// CURLOPT_HEADERFUNCTION filling a std::map with the final response's headers: names
// lower-cased, repeats joined by ", ", and a status line (after 100 Continue or a redirect
// that is not followed) starting over.
size_t CollectHeader(char* data, size_t size, size_t count, void* headers);
// CURLOPT_XFERINFOFUNCTION whose data is Request::cancel: non-zero (abort) once it is set.
// libcurl calls it often while data flows and about once a second while the connection is
// idle, so a cancel is noticed within a second either way.
int AbortIfCancelled(void* cancel, curl_off_t, curl_off_t, curl_off_t, curl_off_t);

// One request on a handle. Owns what libcurl borrows while it runs (header lists, the error
// buffer); when it ends the handle is reset, keeping its live connection for the next one.
class Transfer {
 public:
  Transfer(CURL* handle, const Request& request);
  ~Transfer();
  Transfer(const Transfer&) = delete;
  Transfer& operator=(const Transfer&) = delete;

  // Keeps the response's body (at most `max_body_bytes`: more fails the transfer and sets
  // body_too_large()) and headers. Without this, WriteTo says where the body goes.
  void KeepResponse(std::string* body, std::size_t max_body_bytes,
                    std::map<std::string, std::string>* headers);
  void WriteTo(curl_write_callback write, void* data);

  CURLcode Perform() { return curl_easy_perform(handle_); }
  long status() const;  // the HTTP status; 0 before a response
  bool body_too_large() const { return body_.too_large; }

  // A failed transfer as ErrorCode::kNetwork naming `where` (a URL without credentials):
  // "cannot connect to https://127.0.0.1:6443: Connection refused". The kube client's retry
  // logic looks for "Connection refused", "Connection reset" and "Empty reply from server".
  Error NetworkError(CURLcode code, const std::string& where) const;

 private:
  CURL* handle_;
  std::chrono::milliseconds timeout_;
  std::chrono::milliseconds connect_timeout_;
  Slist headers_;
  Slist connect_to_;
  CappedBody body_;
  char error_buffer_[CURL_ERROR_SIZE] = "";
};

}  // namespace powerctl::curl
