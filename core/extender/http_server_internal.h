#pragma once
// Internals shared by http_server.cpp (acceptor, lifecycle), connection.cpp (one coroutine
// per connection) and tls_context.cpp. Not part of the API: only the server's sources include it.

#include "core/extender/http_server.h"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>

namespace powerctl::extender::internal {

struct RouteEntry {
  std::string method;
  std::string path;
  HttpHandler handler;
};

// Finds the route for the request: 404 for an unknown path, 405 (with Allow) for a known path
// with another method; a throwing handler gives 500 with a generic message. `matched` gets the
// route's path ("" when none matched).
HttpResponse Dispatch(const std::vector<RouteEntry>& routes, const HttpRequest& request,
                      std::string& matched);

// The server's TLS context, loaded again when its files change on disk. Thread-safe; the
// files are looked at, at most once per reload_interval, by whoever asks for the context.
class TlsContextSource {
 public:
  using Context = std::shared_ptr<boost::asio::ssl::context>;
  // Loads the files (errors name the one that is wrong).
  static Result<std::unique_ptr<TlsContextSource>> Create(
      TlsOptions options, std::function<void(bool, const std::string&)> on_reload);
  // The newest context that loaded; never null.
  Context Current();

 private:
  TlsContextSource(TlsOptions options, Context context, std::string stamp,
                   std::function<void(bool, const std::string&)> on_reload);
  const TlsOptions options_;
  const std::function<void(bool, const std::string&)> on_reload_;
  std::mutex mu_;
  Context context_;
  std::string stamp_;  // identity of the files (inode, size, mtime) as last seen
  std::chrono::steady_clock::time_point next_check_;
};

// What every connection of one server shares; outlives the connections (shared_ptr).
class ServerState {
 public:
  HttpServerLimits limits;
  std::vector<RouteEntry> routes;  // immutable once the server started
  std::function<void(const RequestRecord&)> on_request;
  std::function<void(const std::string&, const std::string&)> on_tls_error;
  std::unique_ptr<TlsContextSource> tls;  // null = plain HTTP
  std::atomic<bool> draining{false};

  // A closer asks its connection (on the connection's strand) to close: idle ones always,
  // busy ones only when `all`. Register returns nullopt when max_connections are open.
  using Closer = std::function<void(bool all)>;
  std::optional<std::uint64_t> Register(Closer closer);
  void Unregister(std::uint64_t id);
  void CloseConnections(bool all);
  // True when no connection is left before the deadline.
  bool WaitNoConnections(std::chrono::steady_clock::time_point deadline);

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::uint64_t, Closer> closers_;
  std::uint64_t next_id_ = 1;
};

// Takes over an accepted socket (whose executor is a strand) and serves it until it closes.
void StartConnection(boost::asio::ip::tcp::socket socket, std::shared_ptr<ServerState> state);

// TLS 1.2+ server context from the options; errors name the file that is wrong.
Result<std::shared_ptr<boost::asio::ssl::context>> MakeServerTlsContext(const TlsOptions& tls);

// The CN of the peer's certificate when the handshake verified it, else "".
std::string VerifiedPeerCommonName(void* ssl_handle);

}  // namespace powerctl::extender::internal
