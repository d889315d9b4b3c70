#pragma once
// A raw HTTP/1.1 client for the server tests: plain sockets or OpenSSL, byte-exact requests,
// poll()-based timeouts, so tests can send what curl would not (slow bytes, huge headers,
// TLS 1.1, no client certificate).

#include "core/server/http_server.h"

#include <gtest/gtest.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

namespace powerctl::server::testing {

inline std::string FixturePath(const std::string& name) {
  return std::string(POWERCTL_SOURCE_DIR) + "/tests/fixtures/tls/" + name;
}

struct RawResponse {
  int status = 0;
  std::string head;  // status line and headers
  std::string body;
  bool HasHeader(const std::string& line) const { return head.find(line) != std::string::npos; }
};

struct TlsClientOptions {
  std::string ca_file;  // verify the server against this CA ("" = do not verify)
  std::string cert_file, key_file;
  int max_version = 0;  // e.g. TLS1_1_VERSION to offer an old protocol only
  int min_version = 0;
};

class RawClient {
 public:
  RawClient() = default;
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;
  ~RawClient() {
    if (ssl_ != nullptr) SSL_free(ssl_);
    if (ctx_ != nullptr) SSL_CTX_free(ctx_);
    if (fd_ >= 0) ::close(fd_);
  }

  // Connects to 127.0.0.1:port; false when refused.
  bool Connect(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  }

  // Connects and completes a TLS handshake; false when either fails.
  bool ConnectTls(int port, const TlsClientOptions& o) {
    if (!Connect(port)) return false;
    ctx_ = SSL_CTX_new(TLS_client_method());
    if (o.max_version != 0) {
      SSL_CTX_set_security_level(ctx_, 0);  // let OpenSSL 3 offer TLS 1.1 at all
      SSL_CTX_set_min_proto_version(ctx_, o.min_version != 0 ? o.min_version : TLS1_VERSION);
      SSL_CTX_set_max_proto_version(ctx_, o.max_version);
    }
    if (!o.ca_file.empty()) {
      SSL_CTX_load_verify_locations(ctx_, o.ca_file.c_str(), nullptr);
      SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER, nullptr);
    }
    if (!o.cert_file.empty()) {
      SSL_CTX_use_certificate_chain_file(ctx_, o.cert_file.c_str());
      SSL_CTX_use_PrivateKey_file(ctx_, o.key_file.c_str(), SSL_FILETYPE_PEM);
    }
    ssl_ = SSL_new(ctx_);
    SSL_set_fd(ssl_, fd_);
    timeval tv{5, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (SSL_connect(ssl_) != 1) {
      ERR_clear_error();
      return false;
    }
    // TLS 1.3 sends the server's verdict on the client certificate after the handshake:
    // a rejected client sees the alert (or EOF) on its first read.
    return true;
  }

  bool Send(const std::string& data) {
    std::size_t sent = 0;
    while (sent < data.size()) {
      long n = ssl_ != nullptr
                   ? SSL_write(ssl_, data.data() + sent, static_cast<int>(data.size() - sent))
                   : ::send(fd_, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return false;
      sent += static_cast<std::size_t>(n);
    }
    return true;
  }

  // Reads one response framed by Content-Length; nullopt on close, error or timeout.
  std::optional<RawResponse> Read(std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    std::size_t end;
    while ((end = buffer_.find("\r\n\r\n")) == std::string::npos) {
      if (!Fill(deadline)) return std::nullopt;
    }
    RawResponse r;
    r.head = buffer_.substr(0, end + 2);
    r.status = std::stoi(r.head.substr(9, 3));
    std::size_t length = 0;
    std::string lower = r.head;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (auto p = lower.find("content-length:"); p != std::string::npos)
      length = std::stoul(lower.substr(p + 15));
    buffer_.erase(0, end + 4);
    while (buffer_.size() < length) {
      if (!Fill(deadline)) return std::nullopt;
    }
    r.body = buffer_.substr(0, length);
    buffer_.erase(0, length);
    return r;
  }

  // True when the server closes the connection (EOF or reset) before the timeout.
  bool WaitClosed(std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      int state = ReadSome(deadline);
      if (state < 0) return true;    // closed
      if (state == 0) return false;  // timed out, still open
    }
  }

  std::optional<RawResponse> Exchange(const std::string& request) {
    if (!Send(request)) return std::nullopt;
    return Read();
  }

 private:
  bool Fill(std::chrono::steady_clock::time_point deadline) { return ReadSome(deadline) > 0; }

  // 1 = got bytes, 0 = timeout, -1 = closed or error.
  int ReadSome(std::chrono::steady_clock::time_point deadline) {
    char chunk[16384];
    for (;;) {
      if (ssl_ == nullptr || SSL_pending(ssl_) == 0) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) return 0;
        pollfd p{fd_, POLLIN, 0};
        int ready = ::poll(&p, 1, static_cast<int>(left.count()));
        if (ready == 0) return 0;
        if (ready < 0) return -1;
      }
      long n = ssl_ != nullptr ? SSL_read(ssl_, chunk, sizeof chunk)
                               : ::recv(fd_, chunk, sizeof chunk, 0);
      if (n > 0) {
        buffer_.append(chunk, static_cast<std::size_t>(n));
        return 1;
      }
      if (ssl_ != nullptr && SSL_get_error(ssl_, static_cast<int>(n)) == SSL_ERROR_WANT_READ)
        continue;  // a post-handshake message (session ticket) without application data
      ERR_clear_error();
      return -1;
    }
  }

  int fd_ = -1;
  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
  std::string buffer_;
};

inline std::string Get(const std::string& path, const std::string& extra = "") {
  return "GET " + path + " HTTP/1.1\r\nHost: localhost\r\n" + extra + "\r\n";
}

inline std::string Post(const std::string& path, const std::string& body,
                        const std::string& extra = "") {
  return "POST " + path + " HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n" +
         "Content-Length: " + std::to_string(body.size()) + "\r\n" + extra + "\r\n" + body;
}

// A started server with the given routes; fails the test when it cannot start.
inline std::unique_ptr<HttpServer> StartServer(HttpServerOptions options,
                                               const std::function<void(HttpServer&)>& routes) {
  auto server = HttpServer::Create(std::move(options));
  EXPECT_TRUE(server.ok()) << (server.ok() ? "" : server.error().message);
  if (!server.ok()) return nullptr;
  routes(**server);
  Status started = (*server)->Start();
  EXPECT_TRUE(started.ok()) << (started.ok() ? "" : started.error().message);
  return std::move(*server);
}

// Short timeouts and small limits, so tests of the limits run fast.
inline HttpServerOptions FastOptions() {
  HttpServerOptions o;
  o.limits.read_timeout = std::chrono::milliseconds(300);
  o.limits.idle_timeout = std::chrono::milliseconds(300);
  o.limits.body_bytes = 1024;
  o.limits.header_bytes = 2048;
  return o;
}

// POST|GET /echo and GET /throw (a handler that throws).
inline void EchoRoutes(HttpServer& s) {
  s.Route("POST", "/echo", [](const HttpRequest& r) {
    HttpResponse res = HttpResponse::Json(200, r.body);
    res.headers.emplace_back("X-Query", r.query);
    res.headers.emplace_back("X-Test", r.Header("x-test"));
    return res;
  });
  s.Route("GET", "/echo", [](const HttpRequest&) { return HttpResponse::Text(200, "get\n"); });
  s.Route("GET", "/throw", [](const HttpRequest&) -> HttpResponse {
    throw std::runtime_error("secret pod env value");
  });
}

}  // namespace powerctl::server::testing
