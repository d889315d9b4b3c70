// One coroutine per connection: (TLS handshake), then requests in a keep-alive loop. Timeouts:
// idle_timeout while waiting for a request's first byte, read_timeout from there to the end of
// its body (slow clients are dropped), write_timeout per response. One write per response and
// TCP_NODELAY (the scheduler waits for every answer).
#include "core/extender/http_server_internal.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include <chrono>
#include <tuple>
#include <type_traits>

namespace powerctl::extender::internal {
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
        remote_(std::move(remote)) {}
  ~Connection() {
    if (id_ != 0) state_->Unregister(id_);
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
      beast::get_lowest_layer(stream_).expires_after(limits.read_timeout);
      auto [ec] = co_await stream_.async_handshake(net::ssl::stream_base::server, kNoThrow);
      if (ec) {  // wrong CA, no client cert, TLS < 1.2, timeout: just close
        if (state_->on_tls_error) state_->on_tls_error(remote_, ec.message());
        co_return;
      }
      client_cn_ = VerifiedPeerCommonName(stream_.native_handle());
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
      if (buffer_.size() == 0) {
        beast::get_lowest_layer(stream_).expires_after(limits.idle_timeout);
        auto [ec, n] = co_await stream_.async_read_some(buffer_.prepare(4096), kNoThrow);
        if (ec == net::error::operation_aborted && state_->draining && next_request_waiting()) {
          beast::get_lowest_layer(stream_).expires_after(limits.read_timeout);  // bytes are there
          std::tie(ec, n) = co_await stream_.async_read_some(buffer_.prepare(4096), kNoThrow);
        }
        if (ec) break;
        buffer_.commit(n);
      }
      busy_ = true;
      keep_alive = co_await Serve();
    }
    co_await Shutdown();
  }

 private:
  // Reads one request and answers it; false when the connection should close.
  net::awaitable<bool> Serve() {
    const HttpServerLimits& limits = state_->limits;
    beast::get_lowest_layer(stream_).expires_after(limits.read_timeout);
    http::request_parser<http::string_body> parser;
    parser.header_limit(static_cast<std::uint32_t>(limits.header_bytes));
    parser.body_limit(limits.body_bytes);
    auto [ec, n] = co_await http::async_read(stream_, buffer_, parser, kNoThrow);
    (void)n;
    if (ec == http::error::body_limit) {
      co_await Write(HttpResponse::Text(413, "request body too large\n"), false, 11);
      co_return false;
    }
    if (ec == http::error::header_limit) {
      co_await Write(HttpResponse::Text(431, "request header fields too large\n"), false, 11);
      co_return false;
    }
    if (ec == http::error::partial_message) {  // the client half-closed mid-request
      co_await Write(HttpResponse::Text(400, "request truncated: the body ended early\n"), false,
                     11);
      co_return false;
    }
    bool gone = ec == beast::error::timeout || ec == http::error::end_of_stream ||
                ec == net::error::eof || ec == net::ssl::error::stream_truncated ||
                ec.category() == net::error::get_system_category();
    if (ec && gone) co_return false;  // slow, gone or closed by Stop: nobody to answer
    if (ec) {
      co_await Write(HttpResponse::Text(400, "bad request\n"), false, 11);
      co_return false;
    }
    auto started = std::chrono::steady_clock::now();
    http::request<http::string_body> message = parser.release();
    bool keep_alive = message.keep_alive();
    HttpRequest request = Translate(message);
    std::string matched;
    bool bad_target = request.path.empty() || request.path[0] != '/';
    HttpResponse response = bad_target ? HttpResponse::Text(400, "bad request target\n")
                                       : Dispatch(state_->routes, request, matched);
    if (bad_target || state_->draining) keep_alive = false;  // draining: tell the client
    int status = response.status;
    std::function<void()> after_send = std::move(response.after_send);
    bool written = co_await Write(std::move(response), keep_alive, message.version());
    if (after_send) after_send();
    if (state_->on_request) {
      auto elapsed = std::chrono::steady_clock::now() - started;
      state_->on_request(
          RequestRecord{request.method, matched, status,
                        std::chrono::duration_cast<std::chrono::microseconds>(elapsed)});
    }
    bool again = written && keep_alive;
    co_return again;
  }

  HttpRequest Translate(http::request<http::string_body>& message) const {
    HttpRequest request;
    request.method = std::string(message.method_string());
    std::string_view target = message.target();
    std::size_t q = target.find('?');
    request.path = std::string(target.substr(0, q));
    if (q != std::string_view::npos) request.query = std::string(target.substr(q + 1));
    for (const auto& field : message)
      request.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
    request.body = std::move(message.body());  // up to body_bytes: move, not copy
    request.client_cn = client_cn_;
    request.remote = remote_;
    return request;
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
  beast::flat_buffer buffer_;
  bool busy_ = false;  // reading or answering a request (only touched on the strand)
};

template <typename Stream>
void Spawn(Stream stream, std::shared_ptr<ServerState> state, std::string remote,
           std::shared_ptr<void> keep_alive_with = nullptr) {
  auto executor = stream.get_executor();
  auto conn = std::make_shared<Connection<Stream>>(std::move(stream), state, std::move(remote),
                                                   std::move(keep_alive_with));
  auto id = state->Register([weak = std::weak_ptr<Connection<Stream>>(conn), executor](bool all) {
    net::post(executor, [weak, all] {
      if (auto c = weak.lock()) c->Close(all);
    });
  });
  if (!id) return;  // max_connections reached: the socket closes with `conn`
  conn->set_id(*id);
  // The completion handler owns the connection until the coroutine ends.
  net::co_spawn(executor, conn->Run(), [conn](const std::exception_ptr&) {});
}

}  // namespace

void StartConnection(tcp::socket socket, std::shared_ptr<ServerState> state) {
  error_code ec;
  socket.set_option(tcp::no_delay(true), ec);
  auto endpoint = socket.remote_endpoint(ec);
  std::string remote =
      ec ? "" : endpoint.address().to_string() + ":" + std::to_string(endpoint.port());
  if (state->tls) {
    // The connection keeps the context it started with, even if the files are reloaded.
    std::shared_ptr<net::ssl::context> tls = state->tls->Current();
    Spawn(TlsStream(std::move(socket), *tls), std::move(state), std::move(remote), tls);
  } else {
    Spawn(PlainStream(std::move(socket)), std::move(state), std::move(remote));
  }
}

}  // namespace powerctl::extender::internal
