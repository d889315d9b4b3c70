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

namespace powerctl::server {

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

// Where a route's handler runs. kIo: on the server's I/O threads, for cheap answers that must
// come even when everything else is busy (the probes; /metrics renders on a worker). kWorker:
// on the server's worker threads (HttpServerOptions::worker_threads), at most that many at
// once; a request that finds them all busy is answered 503 with Retry-After at once, and I/O
// threads never wait for a worker. Without worker threads kWorker handlers run on the I/O
// threads.
enum class RouteThreads { kIo, kWorker };

// The request methods a RequestRecord names; any other is recorded as "other".
inline constexpr const char* kKnownMethods[] = {"GET",     "HEAD",  "POST",    "PUT",  "DELETE",
                                                "OPTIONS", "PATCH", "CONNECT", "TRACE"};

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

// The largest HttpServerLimits::header_bytes HttpServer::Create accepts (a connection buffers
// at most twice that outside a body, well below the parser's 64 KiB field limit).
inline constexpr std::size_t kMaxHeaderBytes = 24 * 1024;

struct HttpServerLimits {
  // Larger request heads get 431. A chunk-size line (with its extensions) and the trailer
  // section of a chunked body get 431 too when they outgrow the read buffer: the server never
  // buffers more than twice header_bytes of a request outside its body.
  std::size_t header_bytes = 16 * 1024;
  std::size_t body_bytes = 3 * 1024 * 1024;  // larger bodies get 413 (kube-apiserver's 3 MiB)
  // From a request's first byte to its last (head and body): slowloris guard.
  std::chrono::milliseconds read_timeout{10'000};
  std::chrono::milliseconds idle_timeout{60'000};   // keep-alive wait for the next request
  std::chrono::milliseconds write_timeout{10'000};  // writing one response
  // A new connection is *pending* until it is through the TLS handshake or, on plain HTTP,
  // has sent its first whole request; both must happen within handshake_timeout of the
  // accept. Pending connections are a pool of their own: when it is full the oldest pending
  // one is closed to make room, so silent or half-open peers can neither fill the port nor
  // displace connections that have proved themselves.
  std::chrono::milliseconds handshake_timeout{5'000};
  std::size_t max_pending_connections = 128;
  // Established connections. At the limit the one idle longest is closed for a newcomer;
  // when all are busy the newcomer is closed (TLS) or answered 503 (plain HTTP).
  std::size_t max_connections = 512;
  // Pending and established connections from one IP address. A peer at its limit makes room
  // from its own idle or pending connections, never from another peer's.
  std::size_t max_connections_per_peer = 64;
};

// One line per answered request, for metrics and logs (never carries the body).
struct RequestRecord {
  std::string method;  // one of kKnownMethods, or "other": never the client's raw token
  std::string path;    // the route's path, or "" when no route matched (keeps label sets small)
  int status = 0;
  std::chrono::microseconds duration{0};  // handler plus writing the response
};

struct HttpServerOptions {
  std::string host = "127.0.0.1";  // an IP address or "localhost"; "0.0.0.0" / "::" for all
  int port = 0;                    // 0 = any free port (see HttpServer::port())
  std::optional<TlsOptions> tls;   // absent = plain HTTP
  HttpServerLimits limits;
  int threads = 2;
  int worker_threads = 0;  // for RouteThreads::kWorker routes; 0 = they run on `threads`
  std::function<void(const RequestRecord&)> on_request;  // optional; called on server threads
  // Optional: a TLS handshake failed (no or untrusted client certificate, old protocol, not
  // TLS at all). Arguments: the peer "ip:port" and OpenSSL's reason. Called on server threads.
  std::function<void(const std::string& remote, const std::string& reason)> on_tls_error;
  // Optional: the TLS files changed on disk. `ok` says whether they were loaded (else the old
  // ones stay); `message` names the files and, on failure, what is wrong. Server threads.
  std::function<void(bool ok, const std::string& message)> on_tls_reload;
  // Optional: an exception escaped a server thread's event loop (a bug: the server goes on,
  // the connection it belonged to is closed). The argument is what() of the exception.
  std::function<void(const std::string& what)> on_internal_error;
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
  void Route(std::string method, std::string path, HttpHandler handler,
             RouteThreads threads = RouteThreads::kIo);

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

}  // namespace powerctl::server
