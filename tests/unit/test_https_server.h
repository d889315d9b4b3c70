#pragma once
// A throw-away HTTPS server for transport tests: a Python standard-library script (the
// test image has /usr/bin/python3) run as a child process on 127.0.0.1, port 0, with
// certificates from core/manifests/tls.h. Header-only because tests/unit builds *_test.cpp.

#include "core/manifests/tls.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace powerctl::testsupport {

// Routes: /echo (the request as JSON), /auth (401 unless the bearer token is the one in
// DIR/expected_token), /stream (3 events split across chunks, then a last line without a
// newline), /endless (an event every 50ms), /idle (a stream that stays silent for 30s, like an
// idle watch), /slow (answers after 3s), /status/N, /huge (a chunked body of 80 MiB, more
// than the transport keeps).
inline constexpr char kServerScript[] = R"py(
import http.server, json, os, ssl, sys, time

state_dir, name, require_client = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
REASONS = {401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 500: "InternalError"}

def status_body(code):
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "code": code, "reason": REASONS.get(code, ""), "message": "test status %d" % code}

class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, code, obj, extra=()):
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        for key, value in extra:
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def start_stream(self):
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def handle_any(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode() if length else ""
        path = self.path
        if path.startswith("/echo"):
            cert = self.connection.getpeercert() or {}
            cn = "".join(v for rdn in cert.get("subject", ()) for k, v in rdn if k == "commonName")
            self.reply(200, {"method": self.command, "path": path, "body": body,
                             "headers": {k.lower(): v for k, v in self.headers.items()},
                             "client_cn": cn, "client_port": self.client_address[1],
                             "sni": getattr(self.connection, "sni", None)},
                       [("X-Multi", "a"), ("X-Multi", "b")])
        elif path.startswith("/auth"):
            with open(os.path.join(state_dir, "expected_token")) as f:
                expected = f.read().strip()
            if self.headers.get("Authorization") == "Bearer " + expected:
                self.reply(200, {"ok": True})
            else:
                self.reply(401, status_body(401))
        elif path.startswith("/stream"):
            self.start_stream()
            for i in range(3):
                line = json.dumps({"type": "ADDED", "object": {"n": i}}).encode() + b"\n"
                self.chunk(line[:7])
                time.sleep(0.02)
                self.chunk(line[7:])
            self.chunk(b'{"type":"BOOKMARK"}')
            self.chunk(b"")
        elif path.startswith("/endless"):
            self.start_stream()
            try:
                i = 0
                while True:
                    self.chunk(json.dumps({"type": "ADDED", "object": {"n": i}}).encode() + b"\n")
                    i += 1
                    time.sleep(0.05)
            except OSError:
                self.close_connection = True
        elif path.startswith("/idle"):
            self.start_stream()
            time.sleep(30)
            self.close_connection = True
        elif path.startswith("/slow"):
            time.sleep(3)
            try:
                self.reply(200, {})
            except OSError:
                self.close_connection = True
        elif path.startswith("/huge"):
            self.start_stream()
            try:
                block = b"[" + b" " * (1 << 20)
                for _ in range(80):
                    self.chunk(block)
                self.chunk(b"")
            except OSError:
                self.close_connection = True
        elif path.startswith("/status/"):
            code = int(path.split("/")[2])
            self.reply(code, status_body(code))
        else:
            self.reply(404, status_body(404))

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = handle_any

class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass  # clients that hang up early are part of the tests

def remember_sni(sock, server_name, context):
    sock.sni = server_name

ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(os.path.join(state_dir, "server.crt"), os.path.join(state_dir, "server.key"))
ctx.sni_callback = remember_sni
if require_client:
    ctx.verify_mode = ssl.CERT_REQUIRED
    ctx.load_verify_locations(os.path.join(state_dir, "ca.crt"))
server = Server(("127.0.0.1", 0), Handler)
server.socket = ctx.wrap_socket(server.socket, server_side=True)
tmp = os.path.join(state_dir, name + ".port.tmp")
with open(tmp, "w") as f:
    f.write(str(server.server_address[1]))
os.rename(tmp, os.path.join(state_dir, name + ".port"))
server.serve_forever()
)py";

// An exec credential plugin printing "exec-N" for its N-th run (counted in
// $STATE_DIR/plugin_count).
inline constexpr char kPluginScript[] = R"sh(#!/bin/sh
n=$(cat "$STATE_DIR/plugin_count" 2>/dev/null || echo 0)
n=$((n + 1))
echo "$n" > "$STATE_DIR/plugin_count"
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"exec-%s"}}\n' "$n"
)sh";

// A port nothing listens on (bound, then released).
inline int UnusedPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

class HttpsServer {
 public:
  HttpsServer() = default;
  HttpsServer(const HttpsServer&) = delete;
  HttpsServer& operator=(const HttpsServer&) = delete;
  ~HttpsServer() { Stop(); }

  // "" on success, else why the server did not come up.
  std::string Start(const std::filesystem::path& dir, const std::string& name,
                    bool require_client_cert) {
    std::string script = (dir / "server.py").string();
    std::string log = (dir / (name + ".log")).string();
    std::string dir_arg = dir.string();
    std::string require = require_client_cert ? "1" : "0";
    std::vector<char*> argv = {
        const_cast<char*>("/usr/bin/python3"), script.data(),  dir_arg.data(),
        const_cast<char*>(name.c_str()),       require.data(), nullptr};
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    int rc = posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) {
      pid_ = -1;
      return "cannot start /usr/bin/python3";
    }
    std::filesystem::path port_file = dir / (name + ".port");
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
    while (std::chrono::steady_clock::now() < deadline) {
      if (std::ifstream in(port_file); in >> port_) return "";
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        std::ifstream in(log);
        std::stringstream text;
        text << in.rdbuf();
        return "the test server exited: " + text.str();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return "the test server did not start within 15s";
  }

  void Stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

  int port() const { return port_; }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
};

// What the transport tests share: a temporary directory, two sets of key material (the
// second only for its CA) and two servers, one of which requires a client certificate.
struct SuiteFiles {
  std::filesystem::path dir;
  manifests::KeyMaterial material;
  manifests::KeyMaterial other;
  HttpsServer tls;
  HttpsServer mtls;
  std::string error;  // set when setting up failed

  SuiteFiles() { error = Init(); }
  ~SuiteFiles() {
    tls.Stop();
    mtls.Stop();
    std::error_code ignored;
    if (!dir.empty()) std::filesystem::remove_all(dir, ignored);
  }

  void SetExpectedToken(const std::string& token) const {
    std::ofstream(dir / "expected_token") << token << "\n";
  }

 private:
  std::string Init() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "powerctl-curl-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) return "mkdtemp failed";
    dir = pattern;
    manifests::CertificateRequest request;
    request.server_dns_names = {"localhost", "apiserver.test"};  // no IP: see TlsServerName test
    request.client_common_name = "powerctl-test-user";
    Result<manifests::KeyMaterial> generated = manifests::GenerateKeyMaterial(request);
    Result<manifests::KeyMaterial> unrelated = manifests::GenerateKeyMaterial(request);
    if (!generated.ok()) return generated.error().message;
    if (!unrelated.ok()) return unrelated.error().message;
    material = *generated;
    other = *unrelated;
    std::ofstream(dir / "server.crt") << material.server_cert;
    std::ofstream(dir / "server.key") << material.server_key;
    std::ofstream(dir / "ca.crt") << material.ca_cert;
    std::ofstream(dir / "server.py") << kServerScript;
    std::ofstream(dir / "plugin.sh") << kPluginScript;
    ::chmod((dir / "plugin.sh").c_str(), 0755);
    SetExpectedToken("unset");
    if (std::string failed = tls.Start(dir, "tls", false); !failed.empty()) return failed;
    return mtls.Start(dir, "mtls", true);
  }
};

}  // namespace powerctl::testsupport
