#pragma once
// Test doubles for the telemetry tests: a scripted HttpClient, a manual clock, and a tiny
// in-process HTTP/1.1 server (keep-alive, Content-Length bodies) for the libcurl client.
// Header-only because tests/unit builds only *_test.cpp.

#include "core/common/clock.h"
#include "core/common/http_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <chrono>
#include <ctime>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace powerctl::telemetry_test {

// Now as an RFC 3339 UTC timestamp, as NodeMetrics carry it (judged against telemetry.maxAge).
inline std::string NowRfc3339() {
  std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[32] = {};
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

// Answers every request with `handler` and records the requests. Thread-safe.
class FakeHttp : public HttpClient {
 public:
  using Handler = std::function<Result<HttpClientResponse>(const HttpClientRequest&)>;
  explicit FakeHttp(Handler handler) : handler_(std::move(handler)) {}

  Result<HttpClientResponse> Do(const HttpClientRequest& request) override {
    {
      std::lock_guard lock(mu_);
      requests_.push_back(request);
    }
    return handler_(request);
  }
  std::vector<HttpClientRequest> requests() const {
    std::lock_guard lock(mu_);
    return requests_;
  }

 private:
  Handler handler_;
  mutable std::mutex mu_;
  std::vector<HttpClientRequest> requests_;
};

inline HttpClientResponse Reply(long status, std::string body) {
  return HttpClientResponse{status, std::move(body), {}};
}

// A steady clock that moves only when told to. Thread-safe.
class ManualClock {
 public:
  std::chrono::steady_clock::time_point Now() const {
    std::lock_guard lock(mu_);
    return now_;
  }
  void Advance(std::chrono::milliseconds d) {
    std::lock_guard lock(mu_);
    now_ += d;
  }
  Clock AsClock() {
    Clock clock;
    clock.now = [this] { return Now(); };
    clock.sleep = [this](std::chrono::milliseconds d) { Advance(d); };
    return clock;
  }

 private:
  mutable std::mutex mu_;
  std::chrono::steady_clock::time_point now_{std::chrono::hours(1000)};
};

struct ServerRequest {
  std::string method;
  std::string target;                          // path and query
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
  int client_port = 0;
};

struct ServerResponse {
  int status = 200;
  std::string body;
  std::string content_type = "text/plain";
  std::chrono::milliseconds delay{0};  // before answering
};

// Serves `handler` on 127.0.0.1 (an ephemeral port), one thread per connection.
class LocalHttpServer {
 public:
  explicit LocalHttpServer(std::function<ServerResponse(const ServerRequest&)> handler)
      : handler_(std::move(handler)) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), len);
    ::listen(listen_fd_, 64);
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    acceptor_ = std::thread([this] { AcceptLoop(); });
  }
  ~LocalHttpServer() {
    stop_ = true;
    ::shutdown(listen_fd_, SHUT_RDWR);
    acceptor_.join();
    ::close(listen_fd_);
    std::lock_guard lock(mu_);
    for (std::thread& t : workers_) t.join();
  }
  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int connections() const { return connections_; }

 private:
  void AcceptLoop() {
    while (!stop_) {
      sockaddr_in peer{};
      socklen_t len = sizeof peer;
      int fd = ::accept(listen_fd_, reinterpret_cast<sockaddr*>(&peer), &len);
      if (fd < 0) {
        if (stop_) return;
        continue;
      }
      ++connections_;
      std::lock_guard lock(mu_);
      workers_.emplace_back([this, fd, port = ntohs(peer.sin_port)] { Serve(fd, port); });
    }
  }

  // Reads until `n` bytes are buffered; false when the peer closed or we are stopping.
  bool Fill(int fd, std::string& buffer, std::size_t n) {
    char chunk[65536];
    while (buffer.size() < n) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 50) == 0) {
        if (stop_) return false;
        continue;
      }
      ssize_t got = ::recv(fd, chunk, sizeof chunk, 0);
      if (got <= 0) return false;
      buffer.append(chunk, static_cast<std::size_t>(got));
    }
    return true;
  }

  void Serve(int fd, int client_port) {
    std::string buffer;
    for (;;) {
      std::size_t end;
      while ((end = buffer.find("\r\n\r\n")) == std::string::npos) {
        if (!Fill(fd, buffer, buffer.size() + 1)) return Close(fd);
      }
      ServerRequest request;
      request.client_port = client_port;
      std::string head = buffer.substr(0, end);
      buffer.erase(0, end + 4);
      std::size_t line_end = head.find("\r\n");
      std::string first = head.substr(0, line_end);
      std::size_t sp1 = first.find(' '), sp2 = first.rfind(' ');
      request.method = first.substr(0, sp1);
      request.target = first.substr(sp1 + 1, sp2 - sp1 - 1);
      for (std::size_t pos = line_end; pos != std::string::npos && pos < head.size();) {
        std::size_t next = head.find("\r\n", pos + 2);
        std::string line =
            head.substr(pos + 2, next == std::string::npos ? std::string::npos : next - pos - 2);
        std::size_t colon = line.find(':');
        if (colon != std::string::npos) {
          std::string name = line.substr(0, colon);
          for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
          request.headers[name] = line.substr(line.find_first_not_of(' ', colon + 1));
        }
        pos = next;
      }
      std::size_t length = request.headers.count("content-length")
                               ? std::stoul(request.headers["content-length"])
                               : 0;
      if (!Fill(fd, buffer, length)) return Close(fd);
      request.body = buffer.substr(0, length);
      buffer.erase(0, length);
      ServerResponse response = handler_(request);
      for (auto waited = std::chrono::milliseconds(0); waited < response.delay && !stop_;
           waited += std::chrono::milliseconds(10)) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      std::string out = "HTTP/1.1 " + std::to_string(response.status) +
                        " X\r\nContent-Type: " + response.content_type +
                        "\r\nContent-Length: " + std::to_string(response.body.size()) + "\r\n\r\n" +
                        response.body;
      if (::send(fd, out.data(), out.size(), MSG_NOSIGNAL) < 0) return Close(fd);
    }
  }
  void Close(int fd) { ::close(fd); }

  std::function<ServerResponse(const ServerRequest&)> handler_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> connections_{0};
  std::thread acceptor_;
  std::mutex mu_;
  std::vector<std::thread> workers_;
};

}  // namespace powerctl::telemetry_test
