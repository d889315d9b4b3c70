#include "core/kube/connection.h"

#include "core/common/yaml.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <set>
#include <string_view>
#include <system_error>

namespace powerctl::kube {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

constexpr std::size_t kMaxKubeconfigBytes = 8 << 20;  // what ParseYamlDocuments accepts
constexpr std::size_t kMaxPemBytes = 1 << 20;
constexpr char kNoConfiguration[] =
    "no Kubernetes configuration: set --kubeconfig or KUBECONFIG, create ~/.kube/config, or run "
    "in a pod";

Error Invalid(std::string message) {
  return MakeError(ErrorCode::kInvalidInput, std::move(message));
}

std::string Env(const ConnectionRequest& request, const std::string& name) {
  auto it = request.environment.find(name);
  return it == request.environment.end() ? std::string() : it->second;
}

// ENOENT is kNotFound so that missing KUBECONFIG entries can be skipped, as kubectl does.
Result<std::string> ReadFileLimited(const std::string& path, std::size_t max_bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int e = errno;
    return MakeError(e == ENOENT ? ErrorCode::kNotFound : ErrorCode::kIo,
                     fmt::format("cannot read {}: {}", path, std::generic_category().message(e)));
  }
  std::string data;
  char buffer[65536];
  while (true) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int e = errno;
      ::close(fd);
      return MakeError(ErrorCode::kIo,
                       fmt::format("cannot read {}: {}", path, std::generic_category().message(e)));
    }
    if (n == 0) break;
    data.append(buffer, static_cast<std::size_t>(n));
    if (data.size() > max_bytes) {
      ::close(fd);
      return Invalid(fmt::format("{} is larger than {} bytes", path, max_bytes));
    }
  }
  ::close(fd);
  return data;
}

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

// Absent and null read as "", as Go leaves the field at its zero value.
Result<std::string> GetString(const Json& object, const char* key, const std::string& where) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return std::string();
  if (!it->is_string()) return Invalid(fmt::format("{}: {} must be a string", where, key));
  return it->get<std::string>();
}

Result<bool> GetBool(const Json& object, const char* key, const std::string& where) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return false;
  if (!it->is_boolean()) return Invalid(fmt::format("{}: {} must be true or false", where, key));
  return it->get<bool>();
}

bool IsSet(const Json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && !it->is_null() && !(it->is_string() && it->empty()) &&
         !(it->is_structured() && it->empty());
}

// A cluster, user or context and the file that defined it (relative paths resolve there).
struct Stanza {
  Json body;
  std::string file;
};

struct Kubeconfig {
  std::vector<std::string> files;  // read, in precedence order
  std::map<std::string, Stanza> clusters;
  std::map<std::string, Stanza> users;
  std::map<std::string, Stanza> contexts;
  std::string current_context;
  std::string current_context_file;

  bool Empty() const {
    return clusters.empty() && users.empty() && contexts.empty() && current_context.empty();
  }
};

// Merges one file: the first file to define a name keeps it, like client-go's loader.
Status MergeFile(const std::string& path, std::string_view text, Kubeconfig& config) {
  Result<std::vector<Json>> docs = ParseYamlDocuments(text, path);
  if (!docs.ok()) return Invalid(docs.error().message);
  config.files.push_back(path);
  if (docs->empty()) return OkStatus();
  const Json& root = docs->front();
  if (!root.is_object()) return Invalid(path + ": a kubeconfig must be a mapping");
  struct List {
    const char* key;
    const char* item;
    std::map<std::string, Stanza> Kubeconfig::*target;
  };
  static constexpr List kLists[] = {{"clusters", "cluster", &Kubeconfig::clusters},
                                    {"users", "user", &Kubeconfig::users},
                                    {"contexts", "context", &Kubeconfig::contexts}};
  for (const List& list : kLists) {
    auto it = root.find(list.key);
    if (it == root.end() || it->is_null()) continue;
    if (!it->is_array()) return Invalid(fmt::format("{}: {} must be a list", path, list.key));
    std::set<std::string> seen;
    for (std::size_t i = 0; i < it->size(); ++i) {
      const Json& entry = (*it)[i];
      const std::string where = fmt::format("{}: {}[{}]", path, list.key, i);
      if (!entry.is_object())
        return Invalid(where + ": must be a mapping with name and " + list.item);
      POWERCTL_TRY(name, GetString(entry, "name", where));
      if (!seen.insert(name).second) {
        return Invalid(fmt::format("{}: duplicate {} name \"{}\"", path, list.item, name));
      }
      auto body = entry.find(list.item);
      Json value = (body == entry.end() || body->is_null()) ? Json::object() : *body;
      if (!value.is_object())
        return Invalid(fmt::format("{}: {} must be a mapping", where, list.item));
      (config.*list.target).try_emplace(name, Stanza{std::move(value), path});
    }
  }
  POWERCTL_TRY(current, GetString(root, "current-context", path));
  if (config.current_context.empty() && !current.empty()) {
    config.current_context = current;
    config.current_context_file = path;
  }
  return OkStatus();
}

// --kubeconfig alone; else every $KUBECONFIG entry (deduplicated); else ~/.kube/config.
std::vector<std::string> KubeconfigPaths(const ConnectionRequest& request) {
  if (!request.kubeconfig_flag.empty()) return {request.kubeconfig_flag};
  const std::string list = Env(request, "KUBECONFIG");
  std::vector<std::string> paths;
  if (!list.empty()) {
    std::size_t start = 0;
    while (start <= list.size()) {
      std::size_t end = std::min(list.find(':', start), list.size());
      std::string path = list.substr(start, end - start);
      if (!path.empty() && std::find(paths.begin(), paths.end(), path) == paths.end()) {
        paths.push_back(std::move(path));
      }
      start = end + 1;
    }
    return paths;
  }
  const std::string home = Env(request, "HOME");
  if (!home.empty()) paths.push_back((fs::path(home) / ".kube" / "config").string());
  return paths;
}

std::string ResolvePath(const std::string& defined_in, const std::string& path) {
  if (path.empty() || fs::path(path).is_absolute()) return path;
  std::error_code ec;
  fs::path base = fs::absolute(fs::path(defined_in), ec).parent_path();
  return (base / path).lexically_normal().string();
}

// `key-data` (base64 PEM) or `key` (a file). kubectl refuses a stanza that sets both.
Result<std::string> DataOrFile(const Stanza& stanza, const std::string& key,
                               const std::string& where) {
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
  Result<std::string> text = ReadFileLimited(ResolvePath(stanza.file, file), kMaxPemBytes);
  if (!text.ok()) return Invalid(fmt::format("{}: {}: {}", where, key, text.error().message));
  return text;
}

Status ApplyCluster(const std::string& name, const Stanza& stanza, ClusterConnection& out) {
  const std::string where = fmt::format("cluster \"{}\" in {}", name, stanza.file);
  POWERCTL_TRY(server, GetString(stanza.body, "server", where));
  if (server.empty()) return Invalid(where + ": server is required");
  POWERCTL_TRY(proxy, GetString(stanza.body, "proxy-url", where));
  if (!proxy.empty()) {
    return Invalid(where + ": proxy-url is not supported; set HTTPS_PROXY in the environment");
  }
  POWERCTL_TRY(tls_server_name, GetString(stanza.body, "tls-server-name", where));
  POWERCTL_TRY(insecure, GetBool(stanza.body, "insecure-skip-tls-verify", where));
  POWERCTL_TRY(ca, DataOrFile(stanza, "certificate-authority", where));
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

Status ApplyUser(const std::string& name, const Stanza& stanza, ClusterConnection& out) {
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
    Result<std::string> readable = ReadFileLimited(creds.token_file, kMaxPemBytes);
    if (!readable.ok())
      return Invalid(fmt::format("{}: tokenFile: {}", where, readable.error().message));
  }
  POWERCTL_TRY(cert, DataOrFile(stanza, "client-certificate", where));
  POWERCTL_TRY(key, DataOrFile(stanza, "client-key", where));
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

Result<std::string> SelectContext(const ConnectionRequest& request, const Kubeconfig& config) {
  std::vector<std::string> names;
  for (const auto& entry : config.contexts) names.push_back(entry.first);
  const std::string available = names.empty()
                                    ? "no contexts are defined"
                                    : fmt::format("available contexts: {}", fmt::join(names, ", "));
  const std::string files = fmt::format("{}", fmt::join(config.files, ", "));
  if (!request.context_flag.empty()) {
    if (config.contexts.count(request.context_flag) != 0) return request.context_flag;
    return Invalid(fmt::format("context \"{}\" (from --context) is not defined in {}; {}",
                               request.context_flag, files, available));
  }
  if (config.current_context.empty()) {
    return Invalid(fmt::format(
        "no current-context is set in {}: pass --context or run `kubectl config use-context NAME` "
        "({})",
        files, available));
  }
  if (config.contexts.count(config.current_context) == 0) {
    return Invalid(fmt::format(
        "current-context \"{}\" (set in {}) is not defined in {}: pass --context or run `kubectl "
        "config use-context NAME` ({})",
        config.current_context, config.current_context_file, files, available));
  }
  return config.current_context;
}

Result<ClusterConnection> FromKubeconfig(const ConnectionRequest& request,
                                         const Kubeconfig& config) {
  POWERCTL_TRY(context_name, SelectContext(request, config));
  const Stanza& context = config.contexts.at(context_name);
  ClusterConnection out;
  out.context_name = context_name;
  out.description = fmt::format("context \"{}\" of {}", context_name, context.file);
  const std::string where = out.description;
  POWERCTL_TRY(cluster_name, GetString(context.body, "cluster", where));
  POWERCTL_TRY(user_name, GetString(context.body, "user", where));
  POWERCTL_TRY(namespace_name, GetString(context.body, "namespace", where));
  if (!namespace_name.empty()) out.namespace_ = namespace_name;
  out.user_name = user_name;
  if (cluster_name.empty()) return Invalid(where + ": cluster is not set");
  auto cluster = config.clusters.find(cluster_name);
  if (cluster == config.clusters.end()) {
    return Invalid(fmt::format("{}: cluster \"{}\" is not defined in {}", where, cluster_name,
                               fmt::join(config.files, ", ")));
  }
  POWERCTL_CHECK_OK(ApplyCluster(cluster_name, cluster->second, out));
  // kubectl connects anonymously when the context names no user or an undefined one.
  auto user = config.users.find(user_name);
  if (!user_name.empty() && user != config.users.end()) {
    POWERCTL_CHECK_OK(ApplyUser(user_name, user->second, out));
  }
  return out;
}

// client-go's InClusterConfig plus the namespace lookup of its in-cluster client config.
Result<ClusterConnection> InCluster(const ConnectionRequest& request, const std::string& host,
                                    const std::string& port) {
  const fs::path dir(request.service_account_dir);
  ClusterConnection out;
  const bool ipv6 = host.find(':') != std::string::npos;
  out.server = fmt::format("https://{}{}{}:{}", ipv6 ? "[" : "", host, ipv6 ? "]" : "", port);
  out.credentials.token_file = (dir / "token").string();
  Result<std::string> token = ReadFileLimited(out.credentials.token_file, kMaxPemBytes);
  if (!token.ok())
    return MakeError(ErrorCode::kIo, "service account token: " + token.error().message);
  // Like client-go, an unreadable CA is not fatal: the system trust store is used instead.
  Result<std::string> ca = ReadFileLimited((dir / "ca.crt").string(), kMaxPemBytes);
  if (ca.ok()) out.ca_pem = std::move(ca).value();
  out.namespace_ = Env(request, "POD_NAMESPACE");
  if (out.namespace_.empty()) {
    Result<std::string> ns = ReadFileLimited((dir / "namespace").string(), 4096);
    if (ns.ok()) {
      const std::string& text = *ns;
      const std::size_t first = text.find_first_not_of(" \t\r\n");
      if (first != std::string::npos) {
        out.namespace_ = text.substr(first, text.find_last_not_of(" \t\r\n") - first + 1);
      }
    }
  }
  if (out.namespace_.empty()) out.namespace_ = "default";
  out.description = "in-cluster service account";
  return out;
}

}  // namespace

Result<ClusterConnection> ResolveConnection(const ConnectionRequest& request) {
  Kubeconfig config;
  std::vector<std::string> missing;
  for (const std::string& path : KubeconfigPaths(request)) {
    Result<std::string> text = ReadFileLimited(path, kMaxKubeconfigBytes);
    if (!text.ok() && text.error().code == ErrorCode::kNotFound) {
      if (!request.kubeconfig_flag.empty()) {
        return MakeError(ErrorCode::kNotFound,
                         fmt::format("kubeconfig {} (from --kubeconfig) does not exist", path));
      }
      missing.push_back(path);
      continue;
    }
    if (!text.ok()) return Invalid(text.error().message);
    POWERCTL_CHECK_OK(MergeFile(path, *text, config));
  }
  // kubectl falls back to the pod's service account only when no context is selected at all
  // (an unknown --context or current-context stays an error) and the token file exists.
  const std::string host = Env(request, "KUBERNETES_SERVICE_HOST");
  const std::string port = Env(request, "KUBERNETES_SERVICE_PORT");
  const std::string token = (fs::path(request.service_account_dir) / "token").string();
  const bool no_context = request.context_flag.empty() && config.current_context.empty();
  struct stat st {};
  const bool in_cluster =
      !host.empty() && !port.empty() && ::stat(token.c_str(), &st) == 0 && !S_ISDIR(st.st_mode);
  if (no_context && in_cluster) return InCluster(request, host, port);
  if (!config.Empty() || !request.context_flag.empty()) return FromKubeconfig(request, config);

  std::string detail;
  if (!host.empty() && !port.empty()) {
    detail = "KUBERNETES_SERVICE_HOST is set, but " + token + " does not exist";
  } else if (!config.files.empty()) {
    detail = fmt::format("{} define no clusters, users or contexts", fmt::join(config.files, ", "));
  } else if (!missing.empty()) {
    detail = fmt::format("not found: {}", fmt::join(missing, ", "));
  }
  return MakeError(ErrorCode::kNotFound, detail.empty()
                                             ? kNoConfiguration
                                             : fmt::format("{} ({})", kNoConfiguration, detail));
}

}  // namespace powerctl::kube
