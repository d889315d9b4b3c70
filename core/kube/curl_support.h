#pragma once
// libcurl plumbing for curl_transport.cpp: handle ownership, the request target (with
// tls-server-name), write/header callbacks, line splitting for watches and error messages.
// Internal to the transport.

#include "core/common/result.h"
#include "core/kube/connection.h"

#include <curl/curl.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>

namespace powerctl::kube::curl {

struct HandleDeleter {
  void operator()(CURL* handle) const { curl_easy_cleanup(handle); }
};
using Handle = std::unique_ptr<CURL, HandleDeleter>;

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
// CURLOPT_WRITEFUNCTION appending to a std::string, up to kMaxResponseBodyBytes (then libcurl
// stops with CURLE_WRITE_ERROR).
size_t AppendBody(char* data, size_t size, size_t count, void* user);
// CURLOPT_HEADERFUNCTION filling a std::map with lower-cased names (repeats joined by ", ").
size_t CollectHeader(char* data, size_t size, size_t count, void* user);

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

// CURLOPT_XFERINFOFUNCTION whose data is an HttpRequest::cancel flag: non-zero (abort, as
// CURLE_ABORTED_BY_CALLBACK) once it is set. libcurl calls it often while data flows and about
// once a second while a watch is idle, so a cancel is noticed within a second either way.
int AbortIfCancelled(void* cancel, curl_off_t, curl_off_t, curl_off_t, curl_off_t);

// A failed transfer as a message naming the server: "cannot connect to
// https://127.0.0.1:6443: Connection refused". The client's retry logic looks for
// "Connection refused", "Connection reset" and "Empty reply from server".
std::string NetworkMessage(CURLcode code, CURL* handle, const char* error_buffer,
                           const std::string& server);

}  // namespace powerctl::kube::curl
