// ResolveConnection: picks the kubeconfig context (or the pod's service account) and turns it
// into a ClusterConnection.

#include "core/kube/connection.h"

#include "core/kube/connection_internal.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <sys/stat.h>

#include <filesystem>

namespace powerctl::kube {
namespace {

namespace fs = std::filesystem;

using detail::ApplyCluster;
using detail::ApplyUser;
using detail::Env;
using detail::FromKubeconfig;
using detail::GetString;
using detail::Invalid;
using detail::kMaxPemBytes;
using detail::Kubeconfig;
using detail::KubeconfigPaths;
using detail::MergeFile;
using detail::ReadFileLimited;
using detail::Stanza;

constexpr std::size_t kMaxKubeconfigBytes = 8 << 20;  // what ParseYamlDocuments accepts
constexpr char kNoConfiguration[] =
    "no Kubernetes configuration: set --kubeconfig or KUBECONFIG, create ~/.kube/config, or run "
    "in a pod";

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

}  // namespace

Result<ClusterConnection> detail::FromKubeconfig(const ConnectionRequest& request,
                                                 const Kubeconfig& config, FileReader read) {
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
  POWERCTL_CHECK_OK(ApplyCluster(cluster_name, cluster->second, out, read));
  // kubectl connects anonymously when the context names no user or an undefined one.
  auto user = config.users.find(user_name);
  if (!user_name.empty() && user != config.users.end()) {
    POWERCTL_CHECK_OK(ApplyUser(user_name, user->second, out, read));
  }
  return out;
}

namespace {

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
