#pragma once
// Where and how to reach a Kubernetes API server, resolved exactly as kubectl does:
// --kubeconfig (one file) > $KUBECONFIG (merged list, first file wins per key) >
// ~/.kube/config > in-cluster service account.

#include "core/common/result.h"

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace powerctl::kube {

// users[].user.exec of a kubeconfig (client.authentication.k8s.io v1 / v1beta1).
struct ExecConfig {
  std::string api_version;
  std::string command;
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> env;
  bool provide_cluster_info = false;
  std::string interactive_mode;  // Never | IfAvailable | Always
  std::string install_hint;
};

struct Credentials {
  std::string token;       // bearer token (never logged)
  std::string token_file;  // re-read when it changes; wins over token
  std::string client_cert_pem;
  std::string client_key_pem;
  std::optional<ExecConfig> exec;
};

struct ClusterConnection {
  std::string server;  // https://host:port[/prefix]
  std::string tls_server_name;
  bool insecure_skip_tls_verify = false;
  std::string ca_pem;  // empty: system trust store
  Credentials credentials;
  std::string namespace_ = "default";  // the context's namespace
  std::string context_name;            // "" in cluster
  std::string user_name;
  // For messages: `context "kind-dev" of /root/.kube/config` or `in-cluster service account`.
  std::string description;
};

struct ConnectionRequest {
  std::string kubeconfig_flag;  // --kubeconfig
  std::string context_flag;     // --context
  // The process environment: KUBECONFIG, HOME, KUBERNETES_SERVICE_HOST/PORT, POD_NAMESPACE.
  std::map<std::string, std::string> environment;
  std::string service_account_dir = "/var/run/secrets/kubernetes.io/serviceaccount";
};

// Errors: kInvalidInput for unreadable/invalid kubeconfigs (naming file and key),
// kNotFound when nothing is configured at all.
Result<ClusterConnection> ResolveConnection(const ConnectionRequest& request);

// What an exec credential plugin returned.
struct ExecCredential {
  std::string token;
  std::string client_cert_pem;
  std::string client_key_pem;
  std::optional<std::chrono::system_clock::time_point> expires;
};

// Runs the plugin with KUBERNETES_EXEC_INFO set, a timeout, stdin closed (interactive mode
// is not supported by a non-interactive tool; IfAvailable works, Always fails clearly), and
// parses its ExecCredential. Errors name the command and quote its stderr (never stdout,
// which holds the credential).
Result<ExecCredential> RunExecPlugin(const ExecConfig& exec, const ClusterConnection& cluster,
                                     const std::map<std::string, std::string>& environment,
                                     std::chrono::milliseconds timeout = std::chrono::seconds(30));

}  // namespace powerctl::kube
