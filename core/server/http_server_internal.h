#pragma once
// Internals shared by http_server.cpp (acceptor, lifecycle), connection.cpp (one coroutine
// per connection) and tls_context.cpp. Not part of the API: only the server's sources include it.

#include "core/server/http_server.h"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/thread_pool.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <mutex>
#include <optional>

namespace powerctl::server::internal {

struct RouteEntry {
  std::string method;
  std::string path;
  HttpHandler handler;
  RouteThreads threads = RouteThreads::kIo;
};

// The route for the request, or null with `miss` set: 404 for an unknown path, 405 (with
// Allow) for a known path with another method. `matched` gets the route's path ("" when no
// path matched).
const RouteEntry* FindRoute(const std::vector<RouteEntry>& routes, const HttpRequest& request,
                            HttpResponse& miss, std::string& matched);

// Runs the route's handler; a throwing handler gives 500 with a generic message.
HttpResponse RunHandler(const RouteEntry& route, const HttpRequest& request);

// The method as a RequestRecord names it: one of kKnownMethods, else "other".
const char* RecordedMethod(std::string_view method);

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

// The open connections of one server and the limits on them (HttpServerLimits: pending,
// established, per peer). Thread-safe. A closer asks its connection (on the connection's
// strand) to close: idle ones always, busy ones only when `all`; a connection closed to make
// room is forgotten at once (its Unregister is then a no-op), so the room is there at once.
class ConnectionTable {
 public:
  using Closer = std::function<void(bool all)>;
  explicit ConnectionTable(const HttpServerLimits& limits) : limits_(limits) {}

  // A new connection from `peer` (an IP address), pending. Makes room by closing the
  // peer's longest-waiting idle or pending connection when the peer is at its limit, and
  // the oldest pending connection when the pending pool is full; nullopt when the peer's
  // connections are all busy.
  std::optional<std::uint64_t> Admit(const std::string& peer, Closer closer);
  // Pending -> established (busy). Closes the connection idle longest when the established
  // pool is full; false when every established connection is busy (close the newcomer).
  bool Establish(std::uint64_t id);
  // An established connection waits for its next request (idle) or serves one (busy).
  void SetIdle(std::uint64_t id, bool idle);
  void Unregister(std::uint64_t id);
  void CloseConnections(bool all);
  // True when no connection is left before the deadline.
  bool WaitNoConnections(std::chrono::steady_clock::time_point deadline);

  struct Counts {
    std::size_t pending = 0, established = 0, closed_for_room = 0;
  };
  Counts counts() const;

 private:
  enum class Stage { kPending, kIdle, kBusy };
  struct Entry {
    std::string peer;
    Stage stage = Stage::kPending;
    std::uint64_t since = 0;  // a tick of the table's clock: when the stage began
    Closer closer;
  };
  using Entries = std::map<std::uint64_t, Entry>;
  // The entry in `stages` with the oldest `since` (of `peer` when not empty), or end().
  Entries::iterator Oldest(std::initializer_list<Stage> stages, const std::string& peer);
  void Forget(Entries::iterator it);  // under mu_
  void Evict(Entries::iterator it);   // under mu_: closes the connection, then Forget

  const HttpServerLimits limits_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  Entries entries_;
  std::map<std::string, std::size_t> per_peer_;
  std::size_t pending_ = 0;
  std::size_t closed_for_room_ = 0;
  std::uint64_t next_id_ = 1;
  std::uint64_t tick_ = 0;  // orders stage changes; cheaper and stricter than a clock
};

// What every connection of one server shares; outlives the connections (shared_ptr).
class ServerState {
 public:
  explicit ServerState(const HttpServerLimits& l) : limits(l), connections(l) {}
  const HttpServerLimits limits;
  ConnectionTable connections;
  std::vector<RouteEntry> routes;  // immutable once the server started
  std::function<void(const RequestRecord&)> on_request;
  std::function<void(const std::string&, const std::string&)> on_tls_error;
  std::unique_ptr<TlsContextSource> tls;  // null = plain HTTP
  std::atomic<bool> draining{false};
  // RouteThreads::kWorker handlers: run here when set, at most worker_slots at once.
  std::optional<boost::asio::thread_pool::executor_type> workers;
  std::size_t worker_slots = 0;
  std::atomic<std::size_t> workers_busy{0};
};

// Takes over an accepted socket (whose executor is a strand) and serves it until it closes.
// A peer over its limits is closed at once.
void StartConnection(boost::asio::ip::tcp::socket socket, std::shared_ptr<ServerState> state);

// TLS 1.2+ server context from the options; errors name the file that is wrong.
Result<std::shared_ptr<boost::asio::ssl::context>> MakeServerTlsContext(const TlsOptions& tls);

// The CN of the peer's certificate when the handshake verified it, else "".
std::string VerifiedPeerCommonName(void* ssl_handle);

}  // namespace powerctl::server::internal
