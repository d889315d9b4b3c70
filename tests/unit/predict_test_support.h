#pragma once
// Test doubles for the predictor tests: a scripted FakeHttpClient, a minimal socket HTTP/1.1
// client (so the wire format is proven over a real socket without depending on the libcurl
// client), and a throw-away model server — a /usr/bin/python3 standard-library script on
// 127.0.0.1, port 0 — that answers like TensorFlow Serving REST and the V2 protocol.
// Header-only because tests/unit builds only *_test.cpp.

#include "core/common/http_client.h"
#include "core/predict/predictor.h"
#include "tests/unit/predict_model_server.h"

#include <nlohmann/json.hpp>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

extern char** environ;

namespace powerctl::testsupport {

// The model both servers implement, so tests can compute the expected watts of any row.
inline double ReferenceWatts(const predict::ModelInputs& in) {
  // Inputs travel as float32 text and are read back as float64 by the servers.
  return 100.0 + 200.0 * double{in.cpu_fraction} + 10.0 * double{in.ambient} +
         5.0 * double{in.cpu1} + 5.0 * double{in.cpu2};
}

// "node-<i>", kept for the process (PredictionRow::node is a view).
inline std::string_view TestNodeName(std::size_t i) {
  static std::mutex mu;
  static std::deque<std::string> names;
  std::lock_guard lock(mu);
  while (names.size() <= i) names.push_back("node-" + std::to_string(names.size()));
  return names[i];
}

inline std::vector<predict::PredictionRow> MakeRows(std::size_t n,
                                                    const predict::ModelEndpoint& ep) {
  std::vector<predict::PredictionRow> rows(n);
  auto shared = std::make_shared<const predict::ModelEndpoint>(ep);
  for (std::size_t i = 0; i < n; ++i) {
    rows[i].node = TestNodeName(i);
    rows[i].model = shared;
    rows[i].inputs = {static_cast<float>(i % 11) / 10.0f, 0.5f, static_cast<float>(i % 7) / 7.0f,
                      0.25f};
  }
  return rows;
}

// Gives `row` an endpoint of its own: `edit` changes a copy of the one it has (rows share
// their endpoint, so editing in place would change every row's).
template <typename Edit>
void EditEndpoint(predict::PredictionRow& row, Edit edit) {
  predict::ModelEndpoint copy = row.endpoint();
  edit(copy);
  row.model = std::make_shared<const predict::ModelEndpoint>(std::move(copy));
}

// Answers every request with `handler`, recording the requests. Thread-safe.
class FakeHttpClient : public HttpClient {
 public:
  using Handler = std::function<Result<HttpClientResponse>(const HttpClientRequest&)>;
  explicit FakeHttpClient(Handler handler) : handler_(std::move(handler)) {}

  Result<HttpClientResponse> Do(const HttpClientRequest& request) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      requests_.push_back(request);
    }
    return handler_(request);
  }
  std::vector<HttpClientRequest> requests() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return requests_;
  }

 private:
  Handler handler_;
  mutable std::mutex mutex_;
  std::vector<HttpClientRequest> requests_;
};

inline HttpClientResponse JsonResponse(long status, std::string body) {
  return HttpClientResponse{status, std::move(body), {{"content-type", "application/json"}}};
}

// HTTP/1.1 over a plain socket, one connection per request ("Connection: close"); enough
// for loopback tests. Honours request.timeout for connect, send and receive together.
class SocketHttpClient : public HttpClient {
 public:
  Result<HttpClientResponse> Do(const HttpClientRequest& request) override {
    using Clock = std::chrono::steady_clock;
    const auto end = Clock::now() + request.timeout;
    auto fail = [&](const std::string& why) {
      return MakeError(ErrorCode::kNetwork, request.url + ": " + why);
    };
    // http://127.0.0.1:PORT/path
    const std::string prefix = "http://";
    if (request.url.rfind(prefix, 0) != 0) return fail("not an http:// URL");
    const std::size_t slash = request.url.find('/', prefix.size());
    const std::string authority = request.url.substr(prefix.size(), slash - prefix.size());
    const std::string path = slash == std::string::npos ? "/" : request.url.substr(slash);
    const std::size_t colon = authority.rfind(':');
    if (colon == std::string::npos) return fail("no port");
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(std::stoi(authority.substr(colon + 1))));
    if (::inet_pton(AF_INET, authority.substr(0, colon).c_str(), &addr.sin_addr) != 1) {
      return fail("only IPv4 literals are supported by the test client");
    }
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return fail("socket failed");
    struct Closer {
      int fd;
      ~Closer() { ::close(fd); }
    } closer{fd};
    auto wait = [&](short events) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now());
      if (left.count() <= 0) return false;
      pollfd p{fd, events, 0};
      return ::poll(&p, 1, static_cast<int>(left.count())) == 1;
    };
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      if (errno != EINPROGRESS) return fail("connection refused");
      if (!wait(POLLOUT)) return fail("timed out connecting");
      int err = 0;
      socklen_t len = sizeof err;
      ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
      if (err != 0) return fail("connection refused");
    }
    std::string wire = request.method + " " + path + " HTTP/1.1\r\nHost: " + authority +
                       "\r\nConnection: close\r\nContent-Type: " + request.content_type +
                       "\r\nContent-Length: " + std::to_string(request.body.size()) + "\r\n\r\n" +
                       request.body;
    for (std::size_t sent = 0; sent < wire.size();) {
      if (!wait(POLLOUT)) return fail("timed out sending");
      const ssize_t n = ::send(fd, wire.data() + sent, wire.size() - sent, MSG_NOSIGNAL);
      if (n < 0 && errno != EAGAIN) return fail("send failed");
      if (n > 0) sent += static_cast<std::size_t>(n);
    }
    std::string raw;
    char buffer[65536];
    for (;;) {
      if (!wait(POLLIN)) return fail("timed out waiting for the answer");
      const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
      if (n == 0) break;
      if (n < 0 && errno != EAGAIN) return fail("recv failed");
      if (n > 0) raw.append(buffer, static_cast<std::size_t>(n));
    }
    const std::size_t header_end = raw.find("\r\n\r\n");
    if (raw.rfind("HTTP/1.", 0) != 0 || header_end == std::string::npos) {
      return fail("malformed response");
    }
    HttpClientResponse response;
    response.status = std::stol(raw.substr(9, 3));
    response.body = raw.substr(header_end + 4);
    return response;
  }
};

// The clients the socket tests run with: the plain test client above, and the product's
// libcurl client, so both ends of the production path are exercised.
inline std::unique_ptr<HttpClient> MakeTestHttpClient(const std::string& kind) {
  if (kind == "curl") return MakeCurlHttpClient();
  return std::make_unique<SocketHttpClient>();
}

// A port nothing listens on (bound, then released).
inline int UnusedLoopbackPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

// The Python model server of predict_model_server.h, started on construction.
class ModelServer {
 public:
  ModelServer() { error_ = Start(); }
  ModelServer(const ModelServer&) = delete;
  ModelServer& operator=(const ModelServer&) = delete;
  ~ModelServer() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    std::error_code ignored;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ignored);
  }

  const std::string& error() const { return error_; }  // "" when running
  int port() const { return port_; }

  // How many POSTs the server answered, per path ("" = all paths).
  int Count(const std::string& path = "") {
    SocketHttpClient http;
    HttpClientRequest request;
    request.url = "http://127.0.0.1:" + std::to_string(port_) + "/count";
    auto response = http.Do(request);
    if (!response.ok()) return -1;
    auto counts = nlohmann::json::parse(response->body, nullptr, false);
    if (path.empty()) {
      int total = 0;
      for (const auto& [key, value] : counts.items()) total += value.get<int>();
      return total;
    }
    return counts.value(path, 0);
  }

 private:
  std::string Start() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "powerctl-model-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) return "mkdtemp failed";
    dir_ = pattern;
    const std::string script = (dir_ / "server.py").string();
    const std::string port_file = (dir_ / "port").string();
    const std::string log = (dir_ / "server.log").string();
    std::ofstream(script) << kModelServerScript;
    std::vector<char*> argv = {const_cast<char*>("/usr/bin/python3"),
                               const_cast<char*>(script.c_str()),
                               const_cast<char*>(port_file.c_str()), nullptr};
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    const int rc = posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) {
      pid_ = -1;
      return "cannot start /usr/bin/python3";
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
    while (std::chrono::steady_clock::now() < deadline) {
      if (std::ifstream in(port_file); in >> port_) return "";
      if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = -1;
        std::stringstream text;
        text << std::ifstream(log).rdbuf();
        return "the model server exited: " + text.str();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return "the model server did not start within 15s";
  }

  std::filesystem::path dir_;
  pid_t pid_ = -1;
  int port_ = 0;
  std::string error_;
};

}  // namespace powerctl::testsupport
