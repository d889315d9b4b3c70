// Exec credential plugins (client.authentication.k8s.io), run the way client-go's
// plugin/pkg/client/auth/exec does, minus the interactive terminal.

#include "core/common/encoding.h"
#include "core/common/json_bounds.h"
#include "core/kube/connection.h"
#include "core/kube/connection_internal.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <optional>
#include <string_view>
#include <system_error>
#include <thread>

namespace powerctl::kube {
namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr std::size_t kMaxStdoutBytes = 4 << 20;
constexpr std::size_t kStderrKeptBytes = 64 << 10;
constexpr std::size_t kStderrQuotedChars = 500;

std::string SystemError(const char* what, int error) {
  return fmt::format("{}: {}", what, std::generic_category().message(error));
}

// The last ~500 characters of stderr, trimmed, not starting inside a UTF-8 sequence.
std::string StderrTail(const std::string& text) {
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return "";
  std::string trimmed = text.substr(first, text.find_last_not_of(" \t\r\n") - first + 1);
  if (trimmed.size() <= kStderrQuotedChars) return trimmed;
  std::size_t start = trimmed.size() - kStderrQuotedChars;
  while (start < trimmed.size() && (static_cast<unsigned char>(trimmed[start]) & 0xC0) == 0x80) {
    ++start;
  }
  return "..." + trimmed.substr(start);
}

// Go's LookPath over the caller's PATH; like Go (ErrDot) it will not run a program found
// through a relative PATH entry.
std::optional<std::string> FindExecutable(const std::string& command,
                                          const std::map<std::string, std::string>& environment) {
  if (command.find('/') != std::string::npos) return command;
  auto path = environment.find("PATH");
  if (path == environment.end()) return std::nullopt;
  std::string_view dirs = path->second;
  while (true) {
    const std::size_t colon = dirs.find(':');
    const std::string dir(dirs.substr(0, colon));
    if (!dir.empty() && dir.front() == '/') {
      const std::string candidate = dir + "/" + command;
      struct stat st {};
      if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
          ::access(candidate.c_str(), X_OK) == 0) {
        return candidate;
      }
    }
    if (colon == std::string_view::npos) return std::nullopt;
    dirs.remove_prefix(colon + 1);
  }
}

struct Outcome {
  std::string out;
  std::string err;
  int status = 0;
  bool reaped = false;
  bool timed_out = false;
  bool stdout_too_large = false;
};

void CloseAll(std::initializer_list<int> fds) {
  for (int fd : fds) {
    if (fd >= 0) ::close(fd);
  }
}

// Spawns `path` in its own process group (so a timeout can kill everything it started) with
// stdin on /dev/null, and collects both pipes with poll so neither can fill up and block it.
Result<Outcome> Spawn(const std::string& path, const std::vector<std::string>& argv_strings,
                      const std::vector<std::string>& env_strings,
                      std::chrono::milliseconds timeout) {
  int out_pipe[2] = {-1, -1};
  int err_pipe[2] = {-1, -1};
  // O_CLOEXEC everywhere: other threads may spawn concurrently and must not inherit these.
  const int devnull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (devnull < 0 || ::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0) {
    const int e = errno;
    CloseAll({devnull, out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]});
    return MakeError(ErrorCode::kIo, SystemError("cannot create pipes for exec plugin", e));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, devnull, STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t mask;
  sigemptyset(&mask);
  posix_spawnattr_setsigmask(&attr, &mask);
  // Ignored signals survive exec; a plugin must not inherit, say, our SIG_IGN for SIGPIPE.
  sigset_t defaults;
  sigemptyset(&defaults);
  for (int sig : {SIGPIPE, SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGCHLD}) sigaddset(&defaults, sig);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  std::vector<char*> argv;
  for (const std::string& arg : argv_strings) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const std::string& var : env_strings) envp.push_back(const_cast<char*>(var.c_str()));
  envp.push_back(nullptr);
  pid_t pid = -1;
  const int spawned = ::posix_spawn(&pid, path.c_str(), &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  CloseAll({devnull, out_pipe[1], err_pipe[1]});
  if (spawned != 0) {
    CloseAll({out_pipe[0], err_pipe[0]});
    return MakeError(spawned == ENOENT ? ErrorCode::kNotFound : ErrorCode::kIo,
                     SystemError("cannot run", spawned));
  }

  Outcome outcome;
  const Clock::time_point deadline = Clock::now() + timeout;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  while ((fds[0].fd >= 0 || fds[1].fd >= 0) && !outcome.timed_out) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      outcome.timed_out = true;
      break;
    }
    const int ready = ::poll(fds, 2, static_cast<int>(std::min<long long>(left.count(), 60000)));
    if (ready < 0 && errno != EINTR) break;
    for (int i = 0; i < 2 && ready > 0; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buffer[65536];
      const ssize_t n = ::read(fds[i].fd, buffer, sizeof buffer);
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n <= 0) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        continue;
      }
      std::string& sink = i == 0 ? outcome.out : outcome.err;
      sink.append(buffer, static_cast<std::size_t>(n));
      if (i == 1 && sink.size() > 2 * kStderrKeptBytes)
        sink.erase(0, sink.size() - kStderrKeptBytes);
      if (i == 0 && sink.size() > kMaxStdoutBytes) outcome.stdout_too_large = true;
    }
    if (outcome.stdout_too_large) break;
  }
  CloseAll({fds[0].fd, fds[1].fd});
  // Both pipes are closed, so the plugin is exiting; still bound the wait by the deadline.
  while (!outcome.timed_out && !outcome.stdout_too_large) {
    const pid_t done = ::waitpid(pid, &outcome.status, WNOHANG);
    if (done == pid || (done < 0 && errno == ECHILD)) {
      outcome.reaped = done == pid;
      return outcome;
    }
    if (done < 0 && errno != EINTR) break;
    if (Clock::now() >= deadline) outcome.timed_out = true;
    if (!outcome.timed_out) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ::kill(-pid, SIGKILL);
  while (::waitpid(pid, &outcome.status, 0) < 0 && errno == EINTR) {
  }
  return outcome;
}

// RFC 3339 as metav1.Time parses it: 2006-01-02T15:04:05[.frac](Z|+hh:mm|-hh:mm).
std::optional<std::chrono::system_clock::time_point> ParseRfc3339(std::string_view s) {
  std::size_t pos = 0;
  auto number = [&](std::size_t digits, int* value) {
    if (pos + digits > s.size()) return false;
    *value = 0;
    for (std::size_t k = 0; k < digits; ++k, ++pos) {
      if (s[pos] < '0' || s[pos] > '9') return false;
      *value = *value * 10 + (s[pos] - '0');
    }
    return true;
  };
  auto literal = [&](char c) { return pos < s.size() && s[pos++] == c; };
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, sec = 0;
  if (!number(4, &y) || !literal('-') || !number(2, &mo) || !literal('-') || !number(2, &d) ||
      !literal('T') || !number(2, &h) || !literal(':') || !number(2, &mi) || !literal(':') ||
      !number(2, &sec)) {
    return std::nullopt;
  }
  std::chrono::nanoseconds fraction{0};
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    std::size_t digits = 0;
    long long nanos = 0;
    for (; pos < s.size() && s[pos] >= '0' && s[pos] <= '9'; ++pos, ++digits) {
      if (digits < 9) nanos = nanos * 10 + (s[pos] - '0');
    }
    if (digits == 0) return std::nullopt;
    for (std::size_t k = digits; k < 9; ++k) nanos *= 10;
    fraction = std::chrono::nanoseconds(nanos);
  }
  int offset_minutes = 0;
  if (pos < s.size() && s[pos] == 'Z') {
    ++pos;
  } else if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) {
    const int sign = s[pos++] == '-' ? -1 : 1;
    int oh = 0, om = 0;
    if (!number(2, &oh) || !literal(':') || !number(2, &om) || oh > 23 || om > 59) {
      return std::nullopt;
    }
    offset_minutes = sign * (oh * 60 + om);
  } else {
    return std::nullopt;
  }
  const std::chrono::year_month_day date{std::chrono::year(y), std::chrono::month(mo),
                                         std::chrono::day(d)};
  if (pos != s.size() || !date.ok() || h > 23 || mi > 59 || sec > 59) return std::nullopt;
  // system_clock counts nanoseconds in 64 bits (years 1678 to 2262); a year outside that
  // overflowed the conversion below (found by kubeconfig_fuzzer). No plugin issues such times.
  if (y < 1900 || y > 2200) return std::nullopt;
  const auto utc = std::chrono::sys_days(date) + std::chrono::hours(h) + std::chrono::minutes(mi) +
                   std::chrono::seconds(sec) - std::chrono::minutes(offset_minutes) + fraction;
  return std::chrono::time_point_cast<std::chrono::system_clock::duration>(utc);
}

// Validates what the plugin printed. Messages never quote it: it holds the credential.
Result<ExecCredential> ParseCredential(const std::string& output, const ExecConfig& exec,
                                       const std::string& name) {
  auto fail = [&](const std::string& why) {
    return MakeError(ErrorCode::kInvalidInput, fmt::format("exec plugin {}: {}", name, why));
  };
  const Json doc = ParseJsonBounded(output);
  if (doc.is_discarded() || !doc.is_object())
    return fail("output is not an ExecCredential JSON object");
  auto field = [](const Json& object, const char* key) -> const Json* {
    auto it = object.find(key);
    return it == object.end() || it->is_null() ? nullptr : &*it;
  };
  const Json* kind = field(doc, "kind");
  if (kind == nullptr || !kind->is_string() || *kind != "ExecCredential") {
    return fail("output is not of kind ExecCredential");
  }
  const Json* version = field(doc, "apiVersion");
  const std::string got =
      version != nullptr && version->is_string() ? version->get<std::string>() : "";
  if (got != exec.api_version) {
    return fail(fmt::format("is configured to use API version {}, plugin returned version \"{}\"",
                            exec.api_version, got.substr(0, 80)));
  }
  const Json* status = field(doc, "status");
  if (status == nullptr || !status->is_object()) return fail("output has no status field");
  ExecCredential cred;
  for (auto [key, target] :
       {std::pair{"token", &cred.token}, std::pair{"clientCertificateData", &cred.client_cert_pem},
        std::pair{"clientKeyData", &cred.client_key_pem}}) {
    const Json* value = field(*status, key);
    if (value != nullptr && !value->is_string())
      return fail(fmt::format("status.{} must be a string", key));
    if (value != nullptr) *target = value->get<std::string>();
  }
  if (cred.token.empty() && cred.client_cert_pem.empty() && cred.client_key_pem.empty()) {
    return fail("returned neither a token nor a client certificate and key");
  }
  if (cred.client_cert_pem.empty() != cred.client_key_pem.empty()) {
    return fail("returned only a client certificate or key, not both");
  }
  if (const Json* expiry = field(*status, "expirationTimestamp")) {
    std::optional<std::chrono::system_clock::time_point> parsed;
    if (expiry->is_string()) parsed = ParseRfc3339(expiry->get<std::string>());
    if (!parsed) return fail("status.expirationTimestamp is not an RFC 3339 time");
    cred.expires = parsed;
  }
  return cred;
}

}  // namespace

Result<ExecCredential> detail::ParseExecCredential(const std::string& output,
                                                   const ExecConfig& exec,
                                                   const std::string& name) {
  return ParseCredential(output, exec, name);
}

Result<ExecCredential> RunExecPlugin(const ExecConfig& exec, const ClusterConnection& cluster,
                                     const std::map<std::string, std::string>& environment,
                                     std::chrono::milliseconds timeout) {
  const std::string name = exec.command.empty() ? "(no command)" : exec.command;
  auto invalid = [&](const std::string& why) {
    return MakeError(ErrorCode::kInvalidInput, fmt::format("exec plugin {}: {}", name, why));
  };
  if (exec.command.empty()) return invalid("command is required");
  const bool v1 = exec.api_version == "client.authentication.k8s.io/v1";
  if (!v1 && exec.api_version != "client.authentication.k8s.io/v1beta1") {
    return invalid(
        fmt::format("apiVersion must be client.authentication.k8s.io/v1 or v1beta1, not \"{}\"",
                    exec.api_version));
  }
  if (exec.interactive_mode.empty() && v1) {
    return invalid("interactiveMode is required for client.authentication.k8s.io/v1");
  }
  if (exec.interactive_mode == "Always") {
    return invalid(
        "exec plugin requires an interactive terminal (interactiveMode: Always), which "
        "powerctl does not provide; use a plugin or mode that works without one");
  }
  if (!exec.interactive_mode.empty() && exec.interactive_mode != "Never" &&
      exec.interactive_mode != "IfAvailable") {
    return invalid(fmt::format("unknown interactiveMode \"{}\"", exec.interactive_mode));
  }
  const std::string hint = exec.install_hint.empty() ? "" : "\n\n" + exec.install_hint;

  Json info = {{"kind", "ExecCredential"}, {"apiVersion", exec.api_version}};
  info["spec"] = {{"interactive", false}};
  if (exec.provide_cluster_info) {
    Json cluster_info = {{"server", cluster.server}};
    if (!cluster.tls_server_name.empty()) cluster_info["tls-server-name"] = cluster.tls_server_name;
    if (cluster.insecure_skip_tls_verify) cluster_info["insecure-skip-tls-verify"] = true;
    if (!cluster.ca_pem.empty())
      cluster_info["certificate-authority-data"] = Base64Encode(cluster.ca_pem);
    info["spec"]["cluster"] = std::move(cluster_info);
  }
  // Later entries win, as with Go's exec.Cmd: process environment, then exec.env.
  std::map<std::string, std::string> env = environment;
  for (const auto& [key, value] : exec.env) env[key] = value;
  env["KUBERNETES_EXEC_INFO"] = info.dump();
  std::vector<std::string> env_strings;
  for (const auto& [key, value] : env) env_strings.push_back(key + "=" + value);
  std::vector<std::string> argv = {exec.command};
  argv.insert(argv.end(), exec.args.begin(), exec.args.end());

  std::optional<std::string> path = FindExecutable(exec.command, environment);
  Result<Outcome> ran = path ? Spawn(*path, argv, env_strings, timeout)
                             : Result<Outcome>(MakeError(ErrorCode::kNotFound, "not in PATH"));
  if (!ran.ok() && ran.error().code == ErrorCode::kNotFound) {
    return MakeError(ErrorCode::kNotFound,
                     fmt::format("exec plugin {}: executable not found{}", name, hint));
  }
  if (!ran.ok())
    return MakeError(ran.error().code,
                     fmt::format("exec plugin {}: {}", name, ran.error().message));
  const Outcome& outcome = *ran;
  if (outcome.timed_out) {
    return MakeError(ErrorCode::kNetwork, fmt::format("exec plugin {} timed out after {:g}s", name,
                                                      static_cast<double>(timeout.count()) / 1000));
  }
  if (outcome.stdout_too_large) {
    return invalid(fmt::format("printed more than {} bytes", kMaxStdoutBytes));
  }
  const std::string tail = StderrTail(outcome.err);
  const std::string quoted = tail.empty() ? "" : ": " + tail;
  if (outcome.reaped && WIFSIGNALED(outcome.status)) {
    return MakeError(ErrorCode::kApi, fmt::format("exec plugin {} was killed by signal {}{}{}",
                                                  name, WTERMSIG(outcome.status), quoted, hint));
  }
  if (outcome.reaped && WIFEXITED(outcome.status) && WEXITSTATUS(outcome.status) != 0) {
    return MakeError(ErrorCode::kApi, fmt::format("exec plugin {} failed with exit code {}{}{}",
                                                  name, WEXITSTATUS(outcome.status), quoted, hint));
  }
  return ParseCredential(outcome.out, exec, name);
}

}  // namespace powerctl::kube
