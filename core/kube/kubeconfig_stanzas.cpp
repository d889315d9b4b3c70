// Cluster and user stanzas of a kubeconfig: server and TLS settings, credentials and exec
// plugins, with files and base64 data decoded as kubectl does.

#include "core/kube/connection_internal.h"

#include <fmt/format.h>

#include <filesystem>
#include <optional>
#include <system_error>

namespace powerctl::kube::detail {
namespace {

namespace fs = std::filesystem;

// Standard base64 as Go's encoding/json decodes []byte: padding required, CR/LF skipped.
std::optional<std::string> Base64Decode(std::string_view text) {
  std::string out;
  unsigned buffer = 0;
  int bits = 0;
  std::size_t symbols = 0;
  std::size_t padding = 0;
  for (char c : text) {
    if (c == '\r' || c == '\n') continue;
    ++symbols;
    if (c == '=') {
      ++padding;
      continue;
    }
    int v = -1;
    if (c >= 'A' && c <= 'Z') v = c - 'A';
    if (c >= 'a' && c <= 'z') v = c - 'a' + 26;
    if (c >= '0' && c <= '9') v = c - '0' + 52;
    if (c == '+') v = 62;
    if (c == '/') v = 63;
    if (v < 0 || padding > 0) return std::nullopt;
    buffer = ((buffer << 6) | static_cast<unsigned>(v)) & 0xFFFFFF;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((buffer >> bits) & 0xFF);
    }
  }
  if (symbols % 4 != 0 || padding > 2) return std::nullopt;
  return out;
}

bool IsSet(const Json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && !it->is_null() && !(it->is_string() && it->empty()) &&
         !(it->is_structured() && it->empty());
}

std::string ResolvePath(const std::string& defined_in, const std::string& path) {
  if (path.empty() || fs::path(path).is_absolute()) return path;
  std::error_code ec;
  fs::path base = fs::absolute(fs::path(defined_in), ec).parent_path();
  return (base / path).lexically_normal().string();
}

// `key-data` (base64 PEM) or `key` (a file). kubectl refuses a stanza that sets both.
Result<std::string> DataOrFile(const Stanza& stanza, const std::string& key,
                               const std::string& where, FileReader read) {
  const std::string data_key = key + "-data";
  POWERCTL_TRY(data, GetString(stanza.body, data_key.c_str(), where));
  POWERCTL_TRY(file, GetString(stanza.body, key.c_str(), where));
  if (!data.empty() && !file.empty()) {
    return Invalid(fmt::format("{}: both {} and {} are set; keep one", where, data_key, key));
  }
  if (!data.empty()) {
    std::optional<std::string> decoded = Base64Decode(data);
    if (!decoded) return Invalid(fmt::format("{}: {} is not valid base64", where, data_key));
    return *decoded;
  }
  if (file.empty()) return std::string();
  Result<std::string> text = read(ResolvePath(stanza.file, file), kMaxPemBytes);
  if (!text.ok()) return Invalid(fmt::format("{}: {}: {}", where, key, text.error().message));
  return text;
}

Result<ExecConfig> ParseExec(const Stanza& stanza, const Json& body, const std::string& where) {
  if (!body.is_object()) return Invalid(where + ": exec must be a mapping");
  ExecConfig exec;
  POWERCTL_TRY(command, GetString(body, "command", where + ": exec"));
  POWERCTL_TRY(api_version, GetString(body, "apiVersion", where + ": exec"));
  POWERCTL_TRY(hint, GetString(body, "installHint", where + ": exec"));
  POWERCTL_TRY(mode, GetString(body, "interactiveMode", where + ": exec"));
  POWERCTL_TRY(provide, GetBool(body, "provideClusterInfo", where + ": exec"));
  if (command.empty()) return Invalid(where + ": exec.command is required");
  // client-go resolves a command containing a slash against the kubeconfig's directory and
  // leaves a bare name to the PATH lookup.
  exec.command =
      command.find('/') == std::string::npos ? command : ResolvePath(stanza.file, command);
  if (api_version == "client.authentication.k8s.io/v1alpha1") {
    return Invalid(where + ": exec.apiVersion client.authentication.k8s.io/v1alpha1 was removed " +
                   "in Kubernetes 1.24; use client.authentication.k8s.io/v1");
  }
  if (api_version != "client.authentication.k8s.io/v1" &&
      api_version != "client.authentication.k8s.io/v1beta1") {
    return Invalid(
        fmt::format("{}: exec.apiVersion must be client.authentication.k8s.io/v1 or "
                    "v1beta1, not \"{}\"",
                    where, api_version));
  }
  exec.api_version = api_version;
  // kubeconfig defaulting: v1beta1 may omit interactiveMode, v1 must set it.
  if (mode.empty() && api_version.ends_with("/v1")) {
    return Invalid(where +
                   ": exec.interactiveMode is required for client.authentication.k8s.io/v1 " +
                   "(Never, IfAvailable or Always)");
  }
  if (mode.empty()) mode = "IfAvailable";
  if (mode != "Never" && mode != "IfAvailable" && mode != "Always") {
    return Invalid(fmt::format(
        "{}: exec.interactiveMode must be Never, IfAvailable or Always, not \"{}\"", where, mode));
  }
  exec.interactive_mode = mode;
  exec.install_hint = hint;
  exec.provide_cluster_info = provide;
  if (auto args = body.find("args"); args != body.end() && !args->is_null()) {
    if (!args->is_array()) return Invalid(where + ": exec.args must be a list of strings");
    for (const Json& arg : *args) {
      if (!arg.is_string()) return Invalid(where + ": exec.args must be a list of strings");
      exec.args.push_back(arg.get<std::string>());
    }
  }
  if (auto env = body.find("env"); env != body.end() && !env->is_null()) {
    if (!env->is_array()) return Invalid(where + ": exec.env must be a list of {name, value}");
    for (const Json& var : *env) {
      if (!var.is_object()) return Invalid(where + ": exec.env must be a list of {name, value}");
      POWERCTL_TRY(var_name, GetString(var, "name", where + ": exec.env"));
      POWERCTL_TRY(value, GetString(var, "value", where + ": exec.env"));
      if (var_name.empty()) return Invalid(where + ": exec.env entries need a name");
      exec.env.emplace_back(var_name, value);
    }
  }
  return exec;
}

}  // namespace

Status ApplyCluster(const std::string& name, const Stanza& stanza, ClusterConnection& out,
                    FileReader read) {
  const std::string where = fmt::format("cluster \"{}\" in {}", name, stanza.file);
  POWERCTL_TRY(server, GetString(stanza.body, "server", where));
  if (server.empty()) return Invalid(where + ": server is required");
  POWERCTL_TRY(proxy, GetString(stanza.body, "proxy-url", where));
  if (!proxy.empty()) {
    return Invalid(where + ": proxy-url is not supported; set HTTPS_PROXY in the environment");
  }
  POWERCTL_TRY(tls_server_name, GetString(stanza.body, "tls-server-name", where));
  POWERCTL_TRY(insecure, GetBool(stanza.body, "insecure-skip-tls-verify", where));
  POWERCTL_TRY(ca, DataOrFile(stanza, "certificate-authority", where, read));
  // client-go's transport refuses this combination rather than silently ignoring the CA.
  if (insecure && !ca.empty()) {
    return Invalid(where +
                   ": insecure-skip-tls-verify cannot be combined with a certificate-authority");
  }
  out.server = server;
  out.tls_server_name = tls_server_name;
  out.insecure_skip_tls_verify = insecure;
  out.ca_pem = std::move(ca);
  return OkStatus();
}

Status ApplyUser(const std::string& name, const Stanza& stanza, ClusterConnection& out,
                 FileReader read) {
  const std::string where = fmt::format("user \"{}\" in {}", name, stanza.file);
  const Json& body = stanza.body;
  if (IsSet(body, "auth-provider")) {
    std::string provider;
    if (auto it = body.find("auth-provider"); it->is_object()) {
      auto provider_name = it->find("name");
      if (provider_name != it->end() && provider_name->is_string()) provider = *provider_name;
    }
    return Invalid(fmt::format(
        "{}: auth-provider \"{}\" is not supported (kubectl's built-in auth providers are "
        "deprecated, and gcp and azure were removed in 1.26); configure an exec credential plugin "
        "instead, e.g. kubelogin for OIDC or AKS, gke-gcloud-auth-plugin for GKE",
        where, provider));
  }
  if (IsSet(body, "username") || IsSet(body, "password")) {
    return Invalid(where + ": username/password (basic auth) is not supported; use a token, a " +
                   "client certificate or an exec credential plugin");
  }
  // Ignoring impersonation would silently act with the real user's rights.
  for (const char* key : {"as", "as-uid", "as-groups", "as-user-extra"}) {
    if (IsSet(body, key))
      return Invalid(fmt::format("{}: {} (impersonation) is not supported", where, key));
  }
  Credentials& creds = out.credentials;
  POWERCTL_TRY(token, GetString(body, "token", where));
  POWERCTL_TRY(token_file, GetString(body, "tokenFile", where));
  creds.token = std::move(token);
  if (!token_file.empty()) {
    creds.token_file = ResolvePath(stanza.file, token_file);
    // kubectl reads the file when it builds the client, so a missing one fails up front.
    Result<std::string> readable = read(creds.token_file, kMaxPemBytes);
    if (!readable.ok())
      return Invalid(fmt::format("{}: tokenFile: {}", where, readable.error().message));
  }
  POWERCTL_TRY(cert, DataOrFile(stanza, "client-certificate", where, read));
  POWERCTL_TRY(key, DataOrFile(stanza, "client-key", where, read));
  if (cert.empty() != key.empty()) {
    return Invalid(where + (cert.empty() ? ": client-key is set without client-certificate"
                                         : ": client-certificate is set without client-key"));
  }
  creds.client_cert_pem = std::move(cert);
  creds.client_key_pem = std::move(key);
  if (auto exec = body.find("exec"); exec != body.end() && !exec->is_null()) {
    POWERCTL_TRY(config, ParseExec(stanza, *exec, where));
    creds.exec = std::move(config);
  }
  return OkStatus();
}

}  // namespace powerctl::kube::detail
