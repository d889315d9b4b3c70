// Exec credential plugins (client.authentication.k8s.io), run the way client-go's
// plugin/pkg/client/auth/exec does, minus the interactive terminal.

#include "core/common/encoding.h"
#include "core/common/json_bounds.h"
#include "core/common/subprocess.h"
#include "core/kube/connection.h"
#include "core/kube/connection_internal.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <optional>
#include <string_view>

namespace powerctl::kube {
namespace {

using Json = nlohmann::json;

constexpr std::size_t kMaxStdoutBytes = 4 << 20;
constexpr std::size_t kStderrKeptBytes = 64 << 10;
constexpr std::size_t kStderrQuotedChars = 500;

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
                            exec.api_version, ExcerptForMessage(got, 80)));
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
  SubprocessRequest request;
  request.argv = std::move(argv);
  request.env = std::move(env_strings);
  request.timeout = timeout;
  request.max_stdout_bytes = kMaxStdoutBytes;
  request.stderr_kept_bytes = kStderrKeptBytes;
  if (path) request.program = *path;
  Result<SubprocessOutcome> ran =
      path ? RunSubprocess(request)
           : Result<SubprocessOutcome>(MakeError(ErrorCode::kNotFound, "not in PATH"));
  if (!ran.ok() && ran.error().code == ErrorCode::kNotFound) {
    return MakeError(ErrorCode::kNotFound,
                     fmt::format("exec plugin {}: executable not found{}", name, hint));
  }
  if (!ran.ok())
    return MakeError(ran.error().code,
                     fmt::format("exec plugin {}: {}", name, ran.error().message));
  const SubprocessOutcome& outcome = *ran;
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
