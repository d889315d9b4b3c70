// powerctl schedule-server --listen HOST:PORT --tls-cert F --tls-key F [--client-ca F]
//   [--insecure-http] --ops-listen HOST:PORT [--url-prefix P] [--drain-timeout D]
//   [--lease-name N] [--lease-namespace NS] [--identity ID] [--decision-events=false]:
// the kube-scheduler extender. Runs until SIGTERM/SIGINT, then drains and exits 0.
#include "cli/app.h"
#include "cli/exit_codes.h"
#include "core/cluster/lease.h"
#include "core/common/duration.h"
#include "core/extender/extender_app.h"
#include "core/extender/extender_handler.h"
#include "core/extender/schedule_server.h"
#include "core/kube/connection.h"

#include <fmt/format.h>

namespace powerctl::cli {
namespace {

struct ScheduleServerFlags {
  std::string listen;      // "" = 0.0.0.0:<extender.port>
  std::string ops_listen;  // "" = 0.0.0.0:<extender.opsPort>
  std::string tls_cert;
  std::string tls_key;
  std::string client_ca;
  bool insecure_http = false;
  std::string url_prefix;  // "" = extender.urlPrefixPath
  bool url_prefix_set = false;
  std::string drain_timeout = "10s";
  int threads = 2;
  std::string lease_name = cluster::kDefaultLeaseName;
  std::string lease_namespace;  // "" = $POD_NAMESPACE, else the config's namespace
  std::string identity;         // "" = <hostname>_<pid>
  bool decision_events = true;
};

Error ServerUsage(std::string message) {
  return MakeError(ErrorCode::kInvalidInput, std::move(message));
}

Result<extender::ScheduleServerOptions> BuildServerOptions(const Context& ctx,
                                                           const ScheduleServerFlags& flags,
                                                           const config::PowerctlConfig& config) {
  const config::ExtenderSettings& ext = config.extender;
  extender::ScheduleServerOptions options;
  auto listen = server::ParseListenAddress(
      flags.listen.empty() ? fmt::format("0.0.0.0:{}", ext.port) : flags.listen);
  if (!listen.ok()) return WithContext(listen.error(), "--listen");
  auto ops = server::ParseListenAddress(
      flags.ops_listen.empty() ? fmt::format("0.0.0.0:{}", ext.ops_port) : flags.ops_listen);
  if (!ops.ok()) return WithContext(ops.error(), "--ops-listen");
  options.main.host = listen->host;
  options.main.port = listen->port;
  options.ops.host = ops->host;
  options.ops.port = ops->port;
  options.main.threads = flags.threads;
  options.ops.threads = 1;

  bool any_tls = !flags.tls_cert.empty() || !flags.tls_key.empty() || !flags.client_ca.empty();
  if (any_tls && flags.insecure_http)
    return ServerUsage("--insecure-http conflicts with --tls-cert/--tls-key/--client-ca");
  if (any_tls && (flags.tls_cert.empty() || flags.tls_key.empty()))
    return ServerUsage("--tls-cert and --tls-key go together (and --client-ca needs both)");
  if (any_tls) {
    options.main.tls = server::TlsOptions{flags.tls_cert, flags.tls_key, flags.client_ca};
    if (ext.tls_mode == "mtls" && flags.client_ca.empty())
      ctx.Warn("extender.tlsMode is mtls but no --client-ca was given: any client is accepted");
  }
  options.allow_insecure = flags.insecure_http;
  options.url_prefix = flags.url_prefix_set ? flags.url_prefix : ext.url_prefix_path;
  auto drain = ParseDuration(flags.drain_timeout);
  if (!drain.ok()) return WithContext(drain.error(), "--drain-timeout");
  options.drain_timeout = *drain;
  POWERCTL_CHECK_OK(extender::ValidateScheduleServerOptions(options));
  return options;
}

int RunScheduleServerCommand(const Context& ctx, const ScheduleServerFlags& flags) {
  auto config = ctx.LoadConfig();
  if (!config.ok()) return Fail(ctx, config.error());
  auto options = BuildServerOptions(ctx, flags, *config);
  if (!options.ok()) return Fail(ctx, options.error());
  // A server logs its requests and state changes by default (klog's V(2) convention).
  if (ctx.log->level() > spdlog::level::info) ctx.log->set_level(spdlog::level::info);
  extender::ExtenderAppOptions app;
  app.server = *options;
  app.election.lease_name = flags.lease_name;
  app.election.lease_namespace = flags.lease_namespace;
  // The downward API's POD_NAMESPACE and POD_NAME: where a replica runs (lease, own Events).
  app.pod_namespace = ctx.Env("POD_NAMESPACE");
  app.pod_name = ctx.Env("POD_NAME");
  if (app.election.lease_namespace.empty()) {
    app.election.lease_namespace =
        !app.pod_namespace.empty() ? app.pod_namespace : config->namespace_;
  }
  app.election.identity = flags.identity;
  app.decision_events = flags.decision_events;
  app.config = *config;
  app.log = ctx.log;
  app.transport.log = ctx.log;
  app.transport.environment = ctx.environment;
  // In the cluster: the ServiceAccount; outside: the kubeconfig. With neither the server still
  // answers from what requests carry, and /readyz says the cluster is missing.
  kube::ConnectionRequest connection;
  connection.kubeconfig_flag = ctx.globals.kubeconfig;
  connection.context_flag = ctx.globals.context;
  connection.environment = ctx.environment;
  if (auto resolved = kube::ResolveConnection(connection); resolved.ok()) {
    app.cluster = std::move(*resolved);
  } else if (resolved.error().code == ErrorCode::kNotFound) {
    ctx.Warn("no cluster configured (" + resolved.error().message +
             "): serving without the cluster cache");
  } else {
    return Fail(ctx, resolved.error());
  }
  extender::ScheduleServerHooks hooks;
  hooks.log = ctx.log;
  Status status = extender::ServeExtender(app, hooks);
  if (!status.ok()) return Fail(ctx, status.error());
  return kExitOk;
}

}  // namespace

void RegisterScheduleServer(CLI::App& app, CommandEnv& env) {
  auto flags = std::make_shared<ScheduleServerFlags>();
  CLI::App* cmd = app.add_subcommand("schedule-server", "Run the kube-scheduler extender server");
  cmd->footer(
      "Serves kube-scheduler on --listen (POST <url-prefix>/filter, /prioritize, /preempt) over\n"
      "TLS 1.2+; with --client-ca the scheduler must present a certificate signed by that CA.\n"
      "Plain HTTP only with --insecure-http (tests). The ops port (plain HTTP) serves /healthz,\n"
      "/readyz and /metrics. SIGTERM or SIGINT stops accepting, lets requests in flight finish\n"
      "within --drain-timeout, and exits 0; SIGHUP is logged and ignored (powerctl.yaml is\n"
      "read at start; the TLS files are reloaded when they change). Defaults come from\n"
      "powerctl.yaml (extender.port, extender.opsPort, extender.urlPrefixPath).\n"
      "Any number of replicas may run: all answer kube-scheduler, and the one holding the Lease\n"
      "--lease-name in --lease-namespace alone writes to the cluster (node labels of deschedule\n"
      "and labeling policies every telemetry.refreshInterval, and the powerctl.io/group-complete\n"
      "annotation on waiting pods of a complete pod group). SIGTERM releases the Lease.\n"
      "Every replica records its decisions in Events, batched per namespace (reason\n"
      "PowerDecisions, label powerctl.io/pod-<uid> for each pod, the decisions in annotation\n"
      "powerctl.io/decisions) for `powerctl explain` and `kubectl get events`;\n"
      "--decision-events=false turns that off.\n"
      "Examples:\n"
      "  powerctl schedule-server --tls-cert tls.crt --tls-key tls.key --client-ca ca.crt\n"
      "  powerctl schedule-server --insecure-http --listen 127.0.0.1:0 --ops-listen 127.0.0.1:0");
  cmd->add_option("--listen", flags->listen,
                  "Scheduler port address (default 0.0.0.0:<extender.port>)")
      ->type_name("HOST:PORT");
  cmd->add_option("--ops-listen", flags->ops_listen,
                  "Ops port address for probes and metrics (default 0.0.0.0:<extender.opsPort>)")
      ->type_name("HOST:PORT");
  cmd->add_option("--tls-cert", flags->tls_cert, "Server certificate (PEM)")->type_name("FILE");
  cmd->add_option("--tls-key", flags->tls_key, "Server private key (PEM)")->type_name("FILE");
  cmd->add_option("--client-ca", flags->client_ca,
                  "Require client certificates signed by this CA (PEM): mTLS")
      ->type_name("FILE");
  cmd->add_flag("--insecure-http", flags->insecure_http,
                "Serve the scheduler port over plain HTTP (tests only)");
  cmd->add_option("--url-prefix", flags->url_prefix,
                  "Path before /filter etc. (default extender.urlPrefixPath)")
      ->type_name("PATH")
      ->each([flags](const std::string&) { flags->url_prefix_set = true; });
  cmd->add_option("--drain-timeout", flags->drain_timeout,
                  "How long requests in flight may take after SIGTERM (default 10s)")
      ->type_name("DURATION");
  cmd->add_option("--threads", flags->threads, "Threads serving the scheduler port (default 2)")
      ->type_name("N")
      ->check(CLI::Range(1, 64));
  cmd->add_option("--lease-name", flags->lease_name,
                  "Lease whose holder writes labels and pod touches (default powerctl-extender)")
      ->type_name("NAME");
  cmd->add_option("--lease-namespace", flags->lease_namespace,
                  "Namespace of the Lease (default $POD_NAMESPACE, else the config's namespace)")
      ->type_name("NAMESPACE");
  cmd->add_option("--identity", flags->identity,
                  "This replica's name in the Lease (default <hostname>_<pid>)")
      ->type_name("NAME");
  cmd->add_flag(
      "--decision-events", flags->decision_events,
      "Record decisions in Events, batched per namespace (default true; =false to turn off)");
  cmd->callback([&env, flags] { env.exit_code = RunScheduleServerCommand(env.ctx, *flags); });
}

}  // namespace powerctl::cli
