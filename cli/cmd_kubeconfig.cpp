// powerctl kubeconfig SERVICEACCOUNT: a kubeconfig with a fresh token of the ServiceAccount, for
// kube-scheduler and the extender run as processes out of the cluster.
#include "cli/app.h"
#include "cli/exit_codes.h"
#include "cli/kube_context.h"
#include "core/common/duration.h"
#include "core/manifests/output.h"
#include "core/setup/service_account_kubeconfig.h"

#include <fmt/format.h>

#include <chrono>
#include <memory>
#include <ostream>
#include <string>

namespace powerctl::cli {
namespace {

struct KubeconfigFlags {
  std::string service_account;
  std::string duration = "24h";
  std::string server;
  std::string file;
};

int RunKubeconfig(const Context& ctx, const KubeconfigFlags& flags) {
  auto duration = ParseDuration(flags.duration);
  if (!duration.ok()) return Fail(ctx, WithContext(duration.error(), "--duration"));
  auto seconds = std::chrono::duration_cast<std::chrono::seconds>(*duration);
  if (auto bounded = setup::CheckTokenDuration(seconds); !bounded.ok()) {
    return Fail(ctx, bounded.error());
  }
  if (!flags.server.empty() && flags.server.rfind("https://", 0) != 0 &&
      flags.server.rfind("http://", 0) != 0) {
    return Fail(ctx, MakeError(ErrorCode::kInvalidInput,
                               "--server \"" + flags.server + "\" must be an http(s):// URL"));
  }
  // The ServiceAccounts powerctl creates live in its namespace: -n, else powerctl.yaml's.
  std::string namespace_ = ctx.globals.namespace_;
  if (namespace_.empty()) {
    auto config = ctx.LoadConfig();
    if (!config.ok()) return Fail(ctx, config.error());
    namespace_ = config->namespace_;
  }
  auto connection = ResolveClusterConnection(ctx);
  if (!connection.ok()) return Fail(ctx, connection.error());
  auto client = ConnectToCluster(ctx, *connection);
  if (!client.ok()) return Fail(ctx, client.error());
  auto token =
      setup::RequestServiceAccountToken(**client, namespace_, flags.service_account, seconds);
  if (!token.ok()) return Fail(ctx, token.error());

  kube::ClusterConnection cluster = *connection;
  if (!flags.server.empty()) cluster.server = flags.server;
  std::string kubeconfig = setup::RenderServiceAccountKubeconfig(
      cluster, namespace_, flags.service_account, token->token);
  if (flags.file.empty() || flags.file == "-") {
    *ctx.out << kubeconfig;
    return kExitOk;
  }
  // The file holds a credential: 0600 from creation on, and never half-written.
  if (auto written = manifests::WriteFileAtomically(flags.file, kubeconfig, 0600); !written.ok()) {
    return Fail(ctx, written.error());
  }
  std::string expires = token->expiration.empty() ? "" : ", token expires " + token->expiration;
  ctx.Note(fmt::format("wrote {} for ServiceAccount {}/{} at {}{}", flags.file, namespace_,
                       flags.service_account, cluster.server, expires));
  return kExitOk;
}

}  // namespace

void RegisterKubeconfig(CLI::App& app, CommandEnv& env) {
  auto flags = std::make_shared<KubeconfigFlags>();
  CLI::App* cmd = app.add_subcommand(
      "kubeconfig", "Write a kubeconfig that acts as a ServiceAccount, with a fresh token");
  cmd->footer(
      "Asks the API server for a token of the ServiceAccount (the TokenRequest API,\n"
      "authentication.k8s.io/v1, Kubernetes 1.20 and newer) and writes a kubeconfig with it: the\n"
      "server and CA of your own connection (--kubeconfig, --context), or --server, one user with\n"
      "the token and one context, in the ServiceAccount's namespace, set as current. This is how\n"
      "kube-scheduler and the extender get their identities when they run out of the cluster.\n"
      "The namespace is -n, else powerctl.yaml's. --duration is 10m to 8760h (a year); the API\n"
      "server may shorten it (--service-account-max-token-expiration). Run it again before the\n"
      "token expires. Your own identity needs `create` on `serviceaccounts/token` in the\n"
      "namespace. With -f the file is replaced atomically and created 0600; else stdout.\n"
      "Exit codes: 0 written; 1 the ServiceAccount does not exist, RBAC forbids the token or the\n"
      "cluster cannot be reached; 2 bad flags.\n"
      "Examples:\n"
      "  powerctl kubeconfig powerctl-scheduler -n powerctl -f scheduler.kubeconfig\n"
      "  powerctl kubeconfig powerctl-extender --duration 8h --server https://10.0.0.1:6443 \\\n"
      "      -f extender.kubeconfig");
  cmd->add_option("serviceaccount", flags->service_account, "The ServiceAccount's name")
      ->required()
      ->type_name("SERVICEACCOUNT");
  cmd->add_option("--duration", flags->duration,
                  "How long the token lasts, 10m..8760h (default 24h)")
      ->type_name("DURATION");
  cmd->add_option("--server", flags->server,
                  "API server URL to write (default: the one you are connected to)")
      ->type_name("URL");
  cmd->add_option("-f,--file", flags->file, "Write the kubeconfig here (0600) instead of stdout")
      ->type_name("FILE");
  cmd->callback([&env, flags] { env.exit_code = RunKubeconfig(env.ctx, *flags); });
}

}  // namespace powerctl::cli
