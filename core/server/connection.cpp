// One coroutine per connection: (TLS handshake), then requests in a keep-alive loop. Timeouts:
// handshake_timeout for the TLS handshake or, on plain HTTP, the first whole request;
// idle_timeout while waiting for a later request's first byte, read_timeout from there to the
// end of its body (slow clients are dropped), write_timeout per response. One write per
// response and TCP_NODELAY (the scheduler waits for every answer). The connection table
// (ConnectionTable) decides who is let in and who is closed to make room.
#include "core/server/http_framing.h"
#include "core/server/http_server_internal.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include <algorithm>
#include <chrono>
#include <tuple>
#include <type_traits>

namespace powerctl::server::internal {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using boost::system::error_code;
using net::ip::tcp;
constexpr auto kNoThrow = net::as_tuple(net::use_awaitable);

using PlainStream = beast::tcp_stream;
using TlsStream = beast::ssl_stream<beast::tcp_stream>;

template <typename Stream>
class Connection {
 public:
  Connection(Stream stream, std::shared_ptr<ServerState> state, std::string remote,
             std::shared_ptr<void> tls_context)
      : tls_context_(std::move(tls_context)),
        stream_(std::move(stream)),
        state_(std::move(state)),
        remote_(std::move(remote)),
        buffer_(MakeReadBuffer(state_->limits)),
        pending_until_(std::chrono::steady_clock::now() + state_->limits.handshake_timeout) {}
  ~Connection() {
    if (id_ != 0) state_->connections.Unregister(id_);
  }
  void set_id(std::uint64_t id) { id_ = id; }

  // Runs on the connection's strand. Busy connections are left to finish (unless `all`). An
  // idle one has its pending read cancelled; Run() then still serves a request whose bytes
  // had already arrived (the client believes it delivered it) and closes otherwise.
  void Close(bool all) {
    error_code ignored;
    auto& socket = beast::get_lowest_layer(stream_).socket();
    if (all) {
      socket.close(ignored);
    } else if (!busy_) {
      socket.cancel(ignored);
    }
  }

  net::awaitable<void> Run() {
    const HttpServerLimits& limits = state_->limits;
    if constexpr (std::is_same_v<Stream, TlsStream>) {
      beast::get_lowest_layer(stream_).expires_at(pending_until_);
      auto [ec] = co_await stream_.async_handshake(net::ssl::stream_base::server, kNoThrow);
      if (ec) {  // wrong CA, no client cert, TLS < 1.2, timeout, closed for room: just close
        if (state_->on_tls_error) state_->on_tls_error(remote_, ec.message());
        co_return;
      }
      client_cn_ = VerifiedPeerCommonName(stream_.native_handle());
      if (!state_->connections.Establish(id_)) co_return;  // every established one is busy
      established_ = true;
    }
    bool keep_alive = true;
    auto& socket = beast::get_lowest_layer(stream_).socket();
    // While draining, a connection with nothing more to read ends; one whose next request has
    // already arrived (the client believes it delivered it) is still served, with
    // "Connection: close". Stop() cancels the idle read; see Close().
    auto next_request_waiting = [&] {
      error_code unread;
      return buffer_.size() > 0 || socket.available(unread) > 0;
    };
    while (keep_alive && (!state_->draining || next_request_waiting())) {
      busy_ = false;
      if (established_) state_->connections.SetIdle(id_, true);
      if (buffer_.size() == 0) {
        ExpiresAfter(limits.idle_timeout);
        auto [ec, n] = co_await stream_.async_read_some(buffer_.prepare(FirstRead()), kNoThrow);
        if (ec == net::error::operation_aborted && state_->draining && next_request_waiting()) {
          ExpiresAfter(limits.read_timeout);  // bytes are there
          std::tie(ec, n) =
              co_await stream_.async_read_some(buffer_.prepare(FirstRead()), kNoThrow);
        }
        if (ec) break;
        buffer_.commit(n);
      }
      busy_ = true;
      if (established_) state_->connections.SetIdle(id_, false);
      keep_alive = co_await Serve();
    }
    co_await Shutdown();
  }

 private:
  // Reads one request into `parser`: the head, then (what its framing fields allow) the body.
  // False when the connection should close, having answered what there was to answer.
  net::awaitable<bool> ReadRequest(RequestParser& parser) {
    auto [head_ec, head_n] = co_await http::async_read_header(stream_, buffer_, parser, kNoThrow);
    (void)head_n;
    if (head_ec) co_return co_await AnswerReadError(head_ec);
    Framing framing = CheckFraming(parser);
    if (framing.verdict == FramingVerdict::kRefuse) {
      co_await Write(std::move(*framing.refusal), false, parser.get().version());
      co_return false;
    }
    if (framing.verdict == FramingVerdict::kContinue) {
      auto [continue_ec, sent] = co_await net::async_write(
          stream_, net::buffer(kContinueLine, sizeof kContinueLine - 1), kNoThrow);
      (void)sent;
      if (continue_ec) co_return false;
    }
    auto [ec, n] = co_await http::async_read(stream_, buffer_, parser, kNoThrow);
    (void)n;
    if (ec) co_return co_await AnswerReadError(ec);
    co_return true;
  }

  // A failed read: its answer when someone is left to hear it; the connection closes.
  net::awaitable<bool> AnswerReadError(const boost::system::error_code& ec) {
    std::optional<HttpResponse> answer = ReadErrorResponse(ec);
    if (answer.has_value()) co_await Write(std::move(*answer), false, 11);
    co_return false;
  }

  // Reads one request and answers it; false when the connection should close.
  net::awaitable<bool> Serve() {
    const HttpServerLimits& limits = state_->limits;
    ExpiresAfter(limits.read_timeout);
    RequestParser parser;
    LimitParser(parser, limits);
    if (!co_await ReadRequest(parser)) co_return false;
    auto started = std::chrono::steady_clock::now();
    RequestMessage message = parser.release();
    bool keep_alive = message.keep_alive();
    if (!established_) {  // plain HTTP: a whole request proves the peer is a client
      if (!state_->connections.Establish(id_)) {
        co_await Write(HttpResponse::Text(503, "server busy: too many connections\n"), false,
                       message.version());
        co_return false;
      }
      established_ = true;
    }
    HttpRequest request = TranslateRequest(message, client_cn_, remote_);
    std::string matched;
    bool bad_target = request.path.empty() || request.path[0] != '/';
    // Not a conditional expression: GCC 12 miscompiles co_await inside ?: (the operands'
    // temporaries are destroyed too early).
    HttpResponse response;
    if (bad_target) {
      response = HttpResponse::Text(400, "bad request target\n");
    } else {
      response = co_await Answer(request, matched);
    }
    if (bad_target || state_->draining) keep_alive = false;  // draining: tell the client
    int status = response.status;
    std::function<void()> after_send = std::move(response.after_send);
    bool written = co_await Write(std::move(response), keep_alive, message.version());
    if (after_send) after_send();
    if (state_->on_request) {
      auto elapsed = std::chrono::steady_clock::now() - started;
      state_->on_request(
          RequestRecord{RecordedMethod(request.method), matched, status,
                        std::chrono::duration_cast<std::chrono::microseconds>(elapsed)});
    }
    bool again = written && keep_alive;
    co_return again;
  }

  // The route's answer: on this thread, or on a worker for RouteThreads::kWorker routes when
  // the server has workers (503 at once when they are all busy).
  net::awaitable<HttpResponse> Answer(const HttpRequest& request, std::string& matched) {
    HttpResponse miss;
    const RouteEntry* route = FindRoute(state_->routes, request, miss, matched);
    if (route == nullptr) co_return miss;
    if (route->threads == RouteThreads::kIo || !state_->workers)
      co_return RunHandler(*route, request);
    if (state_->workers_busy.fetch_add(1) >= state_->worker_slots) {
      state_->workers_busy.fetch_sub(1);
      HttpResponse busy = HttpResponse::Text(503,
                                             "busy: the server's workers are all answering "
                                             "other requests; try again\n");
      busy.headers.emplace_back("Retry-After", "1");
      co_return busy;
    }
    HttpResponse response = co_await net::co_spawn(
        *state_->workers,
        [route, &request]() -> net::awaitable<HttpResponse> {
          co_return RunHandler(*route, request);
        },
        net::use_awaitable);
    state_->workers_busy.fetch_sub(1);
    co_return response;
  }

  // How much the first read of a request asks for (the buffer is empty then).
  std::size_t FirstRead() const { return std::min<std::size_t>(4096, buffer_.max_size()); }

  // The next deadline: `timeout` from now, but never later than the end of the pending
  // period while the connection has not proved itself.
  void ExpiresAfter(std::chrono::milliseconds timeout) {
    auto at = std::chrono::steady_clock::now() + timeout;
    beast::get_lowest_layer(stream_).expires_at(established_ ? at : std::min(at, pending_until_));
  }

  net::awaitable<bool> Write(HttpResponse r, bool keep_alive, unsigned version) {
    http::response<http::string_body> res{static_cast<http::status>(r.status), version};
    res.set(http::field::content_type, r.content_type);
    for (const auto& [name, value] : r.headers) res.insert(name, value);
    res.body() = std::move(r.body);
    res.keep_alive(keep_alive);
    res.prepare_payload();
    beast::get_lowest_layer(stream_).expires_after(state_->limits.write_timeout);
    auto [ec, n] = co_await http::async_write(stream_, res, kNoThrow);
    (void)n;
    co_return !ec;
  }

  net::awaitable<void> Shutdown() {
    auto& lowest = beast::get_lowest_layer(stream_);
    if constexpr (std::is_same_v<Stream, TlsStream>) {
      if (lowest.socket().is_open()) {
        lowest.expires_after(std::chrono::milliseconds(500));
        co_await stream_.async_shutdown(kNoThrow);  // close_notify; the peer may not answer
      }
    }
    error_code ignored;
    lowest.socket().shutdown(tcp::socket::shutdown_both, ignored);
    lowest.socket().close(ignored);
  }

  std::shared_ptr<void> tls_context_;  // outlives stream_ (declared first, destroyed last)
  Stream stream_;
  std::shared_ptr<ServerState> state_;
  std::uint64_t id_ = 0;
  std::string remote_;
  std::string client_cn_;
  beast::flat_buffer buffer_;                                  // bounded: ReadBufferLimit
  const std::chrono::steady_clock::time_point pending_until_;  // accept + handshake_timeout
  bool established_ = false;  // through the handshake (TLS) or the first request (plain)
  bool busy_ = false;         // reading or answering a request (only touched on the strand)
};

template <typename Stream>
void Spawn(Stream stream, std::shared_ptr<ServerState> state, const std::string& peer,
           std::string remote, std::shared_ptr<void> keep_alive_with = nullptr) {
  auto executor = stream.get_executor();
  auto conn = std::make_shared<Connection<Stream>>(std::move(stream), state, std::move(remote),
                                                   std::move(keep_alive_with));
  auto id = state->connections.Admit(
      peer, [weak = std::weak_ptr<Connection<Stream>>(conn), executor](bool all) {
        net::post(executor, [weak, all] {
          if (auto c = weak.lock()) c->Close(all);
        });
      });
  if (!id) return;  // the peer's connections are all busy: the socket closes with `conn`
  conn->set_id(*id);
  // The completion handler owns the connection until the coroutine ends.
  net::co_spawn(executor, conn->Run(), [conn](const std::exception_ptr&) {});
}

}  // namespace

void StartConnection(tcp::socket socket, std::shared_ptr<ServerState> state) {
  error_code ec;
  socket.set_option(tcp::no_delay(true), ec);
  auto endpoint = socket.remote_endpoint(ec);
  std::string peer = ec ? "" : endpoint.address().to_string();
  std::string remote = ec ? "" : peer + ":" + std::to_string(endpoint.port());
  if (state->tls) {
    // The connection keeps the context it started with, even if the files are reloaded.
    std::shared_ptr<net::ssl::context> tls = state->tls->Current();
    Spawn(TlsStream(std::move(socket), *tls), std::move(state), peer, std::move(remote), tls);
  } else {
    Spawn(PlainStream(std::move(socket)), std::move(state), peer, std::move(remote));
  }
}

}  // namespace powerctl::server::internal
