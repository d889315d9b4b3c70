// The acceptor, the threads and the server's lifecycle (Start, graceful Stop).
#include "core/server/http_server.h"

#include "core/server/http_server_internal.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <future>
#include <thread>

namespace powerctl::server {
namespace net = boost::asio;
using net::ip::tcp;

struct HttpServer::Impl {
  HttpServerOptions options;
  std::shared_ptr<internal::ServerState> state;
  std::unique_ptr<net::thread_pool> workers;  // RouteThreads::kWorker handlers, when configured
  std::unique_ptr<net::io_context> io;
  std::unique_ptr<tcp::acceptor> acceptor;
  std::optional<net::executor_work_guard<net::io_context::executor_type>> work;
  std::vector<std::thread> threads;
  int port = 0;
  bool running = false;

  net::awaitable<void> AcceptLoop() {
    for (;;) {
      auto [ec, socket] =
          co_await acceptor->async_accept(net::make_strand(*io), net::as_tuple(net::use_awaitable));
      if (ec == net::error::operation_aborted || !acceptor->is_open()) co_return;
      if (ec) {  // e.g. out of file descriptors: back off instead of spinning
        net::steady_timer timer(*io, std::chrono::milliseconds(50));
        co_await timer.async_wait(net::as_tuple(net::use_awaitable));
        continue;
      }
      internal::StartConnection(std::move(socket), state);
    }
  }

  // A server thread. An exception that escapes a handler of the event loop (a bug, or a
  // library throwing where it should report) must not end the process: it is reported, the
  // operation it interrupted is abandoned (its connection closes when it is next looked at),
  // and the thread goes back to serving.
  void RunThread() {
    for (;;) {
      try {
        io->run();
        return;
      } catch (const std::exception& e) {
        if (options.on_internal_error) options.on_internal_error(e.what());
      } catch (...) {
        if (options.on_internal_error) options.on_internal_error("unknown exception");
      }
    }
  }
};

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() {
  Stop(std::chrono::milliseconds(0));
}

Result<std::unique_ptr<HttpServer>> HttpServer::Create(HttpServerOptions options) {
  if (options.port < 0 || options.port > 65535)
    return MakeError(ErrorCode::kInvalidInput,
                     "listen port " + std::to_string(options.port) + ": must be 0..65535");
  // A request head (or trailer section) near 64 KiB would reach Beast's 16-bit field offsets.
  if (options.limits.header_bytes < 1024 || options.limits.header_bytes > kMaxHeaderBytes)
    return MakeError(ErrorCode::kInvalidInput,
                     "header limit " + std::to_string(options.limits.header_bytes) +
                         " bytes: must be 1024.." + std::to_string(kMaxHeaderBytes));
  if (options.threads < 1) options.threads = 1;
  if (options.worker_threads < 0) options.worker_threads = 0;
  auto impl = std::make_unique<Impl>();
  impl->state = std::make_shared<internal::ServerState>(options.limits);
  if (options.tls) {
    POWERCTL_TRY(tls, internal::TlsContextSource::Create(*options.tls, options.on_tls_reload));
    impl->state->tls = std::move(tls);
  }
  impl->state->on_request = options.on_request;
  impl->state->on_tls_error = options.on_tls_error;
  impl->options = std::move(options);
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

void HttpServer::Route(std::string method, std::string path, HttpHandler handler,
                       RouteThreads threads) {
  impl_->state->routes.push_back({std::move(method), std::move(path), std::move(handler), threads});
}

Status HttpServer::Start() {
  Impl& s = *impl_;
  if (s.running) return MakeError(ErrorCode::kInternal, "HTTP server already started");
  std::string where = s.options.host + ":" + std::to_string(s.options.port);
  boost::system::error_code ec;
  std::string host = s.options.host == "localhost" ? "127.0.0.1" : s.options.host;
  auto address = net::ip::make_address(host, ec);
  if (ec)
    return MakeError(ErrorCode::kInvalidInput,
                     "listen address " + where + ": host must be an IP address or localhost");
  s.io = std::make_unique<net::io_context>(s.options.threads);
  s.acceptor = std::make_unique<tcp::acceptor>(*s.io);
  tcp::endpoint endpoint(address, static_cast<unsigned short>(s.options.port));
  s.acceptor->open(endpoint.protocol(), ec);
  if (!ec) s.acceptor->set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) s.acceptor->bind(endpoint, ec);
  if (!ec) s.acceptor->listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    s.acceptor.reset();
    s.io.reset();
    return MakeError(ErrorCode::kNetwork, "cannot listen on " + where + ": " + ec.message());
  }
  s.port = s.acceptor->local_endpoint().port();
  s.state->draining = false;
  if (s.options.worker_threads > 0) {
    s.workers = std::make_unique<net::thread_pool>(s.options.worker_threads);
    s.state->workers.emplace(s.workers->get_executor());
    s.state->worker_slots = static_cast<std::size_t>(s.options.worker_threads);
  }
  s.work.emplace(s.io->get_executor());
  net::co_spawn(*s.io, s.AcceptLoop(), [](const std::exception_ptr&) {});
  for (int i = 0; i < s.options.threads; ++i) s.threads.emplace_back([&s] { s.RunThread(); });
  s.running = true;
  return OkStatus();
}

int HttpServer::port() const {
  return impl_->port;
}

std::string HttpServer::url() const {
  std::string host = impl_->options.host;
  if (host.find(':') != std::string::npos) host = "[" + host + "]";
  return (impl_->state->tls ? "https://" : "http://") + host + ":" + std::to_string(impl_->port);
}

void HttpServer::Stop(std::chrono::milliseconds grace) {
  Impl& s = *impl_;
  if (!s.running) return;
  s.running = false;
  s.state->draining = true;
  // Close the listening socket on its executor and wait, so new connections are refused
  // from here on.
  std::promise<void> closed;
  net::post(*s.io, [&] {
    boost::system::error_code ignored;
    s.acceptor->close(ignored);
    closed.set_value();
  });
  closed.get_future().wait();
  s.work.reset();
  internal::ConnectionTable& connections = s.state->connections;
  connections.CloseConnections(false);
  auto deadline = std::chrono::steady_clock::now() + grace;
  if (!connections.WaitNoConnections(deadline)) {
    connections.CloseConnections(true);
    connections.WaitNoConnections(std::chrono::steady_clock::now() +
                                  std::chrono::milliseconds(200));
  }
  // Handlers still on a worker finish first: their connections resume on the I/O threads.
  if (s.workers) s.workers->join();
  s.io->stop();
  for (std::thread& t : s.threads) t.join();
  s.threads.clear();
  s.state->workers.reset();
  s.workers.reset();
  s.acceptor.reset();
  s.io.reset();  // destroys what is left of the connections
}

}  // namespace powerctl::server
