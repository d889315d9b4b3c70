#pragma once
// A small HTTP/1.1 server (Boost.Beast/Asio behind a pimpl): plain or TLS (1.2+), optional
// client certificates (mTLS), exact-path routes, keep-alive, limits against big bodies, huge
// headers and slow or idle clients, and a graceful drain. The extender runs two of these: the
// scheduler's (m)TLS port and the plain ops port.

#include "core/common/result.h"

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace powerctl::extender {

using Headers = std::vector<std::pair<std::string, std::string>>;

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string path;    // the target before '?', e.g. "/scheduler/filter"
  std::string query;   // after '?', undecoded; "" when absent
  Headers headers;     // as received (names keep their case)
  std::string body;
  std::string client_cn;  // the verified client certificate's CN (mTLS), else ""
  std::string remote;     // "ip:port" of the peer

  // The first header with this name (case-insensitive), or "".
  std::string Header(std::string_view name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  Headers headers;  // extra headers (Content-Type/Length and Connection are set by the server)
  // Work the handler leaves until the answer is on the wire (housekeeping the client need not
  // wait for). The server runs it after writing the response; other callers may run or drop
  // it.
  std::function<void()> after_send;

  static HttpResponse Text(int status, std::string body);
  static HttpResponse Json(int status, std::string body);
};

using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

struct TlsOptions {
  std::string cert_file;       // PEM certificate (chain) of the server
  std::string key_file;        // PEM private key
  std::string client_ca_file;  // "" = no client certificates; else required and verified
  // How often new connections look at the three files: when one changed (a renewed
  // certificate, a Secret volume updated by the kubelet) they are loaded again and used for
  // new handshakes; if they do not load (say the key is not written yet) the previous ones
  // stay in use. 0 = never reload.
  std::chrono::milliseconds reload_interval{2'000};
};

struct HttpServerLimits {
  std::size_t header_bytes = 16 * 1024;      // larger request heads get 431
  std::size_t body_bytes = 3 * 1024 * 1024;  // larger bodies get 413 (kube-apiserver's 3 MiB)
  // From a request's first byte to its last (head and body): slowloris guard. Also bounds the
  // TLS handshake.
  std::chrono::milliseconds read_timeout{10'000};
  std::chrono::milliseconds idle_timeout{60'000};   // keep-alive wait for the next request
  std::chrono::milliseconds write_timeout{10'000};  // writing one response
  std::size_t max_connections = 512;                // more are closed right after accept
};

// One line per answered request, for metrics and logs (never carries the body).
struct RequestRecord {
  std::string method;
  std::string path;  // the route's path, or "" when no route matched (keeps label sets small)
  int status = 0;
  std::chrono::microseconds duration{0};  // handler plus writing the response
};

struct HttpServerOptions {
  std::string host = "127.0.0.1";  // an IP address or "localhost"; "0.0.0.0" / "::" for all
  int port = 0;                    // 0 = any free port (see HttpServer::port())
  std::optional<TlsOptions> tls;   // absent = plain HTTP
  HttpServerLimits limits;
  int threads = 2;
  std::function<void(const RequestRecord&)> on_request;  // optional; called on server threads
  // Optional: a TLS handshake failed (no or untrusted client certificate, old protocol, not
  // TLS at all). Arguments: the peer "ip:port" and OpenSSL's reason. Called on server threads.
  std::function<void(const std::string& remote, const std::string& reason)> on_tls_error;
  // Optional: the TLS files changed on disk. `ok` says whether they were loaded (else the old
  // ones stay); `message` names the files and, on failure, what is wrong. Server threads.
  std::function<void(bool ok, const std::string& message)> on_tls_reload;
};

class HttpServer {
 public:
  // Checks the options and loads the TLS material (errors name the file); does not bind.
  static Result<std::unique_ptr<HttpServer>> Create(HttpServerOptions options);
  ~HttpServer();  // Stop(0) if still running
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Adds a route (before Start). A path with another method's route gets 405 with Allow.
  // Handlers may run concurrently on the server threads; a throwing handler yields 500.
  void Route(std::string method, std::string path, HttpHandler handler);

  // Binds, listens and starts the threads. kNetwork when the address cannot be bound.
  Status Start();

  int port() const;         // the bound port (after Start)
  std::string url() const;  // "https://127.0.0.1:8443" (after Start)

  // Stops accepting (new connections are refused; this waits for a free server thread),
  // closes idle connections, lets requests in flight finish and answer (with "Connection:
  // close") for up to `grace`, then closes everything and joins the threads (a handler that
  // never returns blocks this). Idempotent. Not callable from a handler.
  void Stop(std::chrono::milliseconds grace);

 private:
  struct Impl;
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace powerctl::extender
