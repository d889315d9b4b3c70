// powerctl lb-agent [--node NAME] [--ops-listen HOST:PORT] [--resync D] [--mode M]: programs
// this node's kernel so that connections to annotated Services go to endpoints in proportion
// to their power weights. Runs until SIGTERM/SIGINT, then removes its rules and exits 0.
#include "cli/app.h"
#include "cli/exit_codes.h"
#include "core/common/duration.h"
#include "core/common/host_name.h"
#include "core/extender/schedule_server.h"
#include "core/kube/connection.h"
#include "core/lb/agent_runner.h"
#include "core/lb/balancer.h"
#include "core/lb/ipvs_balancer.h"
#include "core/lb/nft_executor.h"

#include <fmt/format.h>

namespace powerctl::cli {
namespace {

struct LbAgentFlags {
  std::string node;        // "" = $NODE_NAME, else the hostname
  std::string ops_listen;  // "" = 0.0.0.0:<lb.opsPort>
  std::string resync;      // "" = lb.resyncInterval
  std::string mode;        // "" = lb.mode
};

Error Usage(std::string message) {
  return MakeError(ErrorCode::kInvalidInput, std::move(message));
}

std::string NodeName(const Context& ctx, const LbAgentFlags& flags) {
  if (!flags.node.empty()) return flags.node;
  auto env = ctx.environment.find("NODE_NAME");
  if (env != ctx.environment.end() && !env->second.empty()) return env->second;
  std::string host = HostName();
  return host.empty() ? "unknown" : host;
}

Result<lb::AgentRunOptions> BuildOptions(const Context& ctx, const LbAgentFlags& flags,
                                         const config::PowerctlConfig& config) {
  lb::AgentRunOptions options;
  options.node = NodeName(ctx, flags);
  options.config = config;
  auto ops = server::ParseListenAddress(
      flags.ops_listen.empty() ? fmt::format("0.0.0.0:{}", config.lb.ops_port) : flags.ops_listen);
  if (!ops.ok()) return WithContext(ops.error(), "--ops-listen");
  options.ops.host = ops->host;
  options.ops.port = ops->port;
  options.ops.threads = 1;
  const std::string resync_text = flags.resync.empty() ? config.lb.resync_interval : flags.resync;
  auto resync = ParseDuration(resync_text);
  if (!resync.ok()) return WithContext(resync.error(), "--resync");
  if (*resync < std::chrono::seconds(1)) {
    return Usage("--resync " + resync_text + ": at least 1s (each sync asks for predictions)");
  }
  options.resync = std::chrono::duration_cast<std::chrono::milliseconds>(*resync);
  options.log = ctx.log;
  options.transport.log = ctx.log;
  options.transport.environment = ctx.environment;
  return options;
}

Result<std::unique_ptr<lb::Balancer>> MakeBalancer(const std::string& mode) {
  if (mode == "nftables") return lb::MakeNftBalancer(lb::MakeLibnftablesExecutor());
  if (mode == "ipvs") {
    if (!lb::KernelHasIpvs()) {
      return Usage(
          "--mode ipvs: the kernel has no IPVS (/proc/net/ip_vs missing): is kube-proxy in IPVS "
          "mode on this node? Use --mode nftables otherwise");
    }
    return lb::MakeIpvsBalancer(lb::MakeIpvsadmAdmin());
  }
  return Usage("--mode \"" + mode + "\": must be nftables or ipvs");
}

int RunLbAgentCommand(const Context& ctx, const LbAgentFlags& flags) {
  auto config = ctx.LoadConfig();
  if (!config.ok()) return Fail(ctx, config.error());
  auto options = BuildOptions(ctx, flags, *config);
  if (!options.ok()) return Fail(ctx, options.error());
  const std::string mode = flags.mode.empty() ? config->lb.mode : flags.mode;
  auto balancer = MakeBalancer(mode);
  if (!balancer.ok()) return Fail(ctx, balancer.error());
  if (mode == "ipvs") {
    ctx.Warn(
        "--mode ipvs: kube-proxy's IPVS mode is deprecated from Kubernetes 1.35 and behind the "
        "KubeProxyIPVS feature gate from 1.37; nftables is the way forward (--mode nftables)");
  }
  // An agent logs what it programs by default (klog's V(2) convention).
  if (ctx.log->level() > spdlog::level::info) ctx.log->set_level(spdlog::level::info);
  // In the cluster: the ServiceAccount; outside: the kubeconfig. The agent cannot work
  // without the API server (it balances what the Services say), so none is an error.
  kube::ConnectionRequest connection;
  connection.kubeconfig_flag = ctx.globals.kubeconfig;
  connection.context_flag = ctx.globals.context;
  connection.environment = ctx.environment;
  auto resolved = kube::ResolveConnection(connection);
  if (!resolved.ok()) return Fail(ctx, resolved.error());
  options->cluster = std::move(*resolved);
  Status status = lb::RunLbAgent(*options, **balancer);
  if (!status.ok()) return Fail(ctx, status.error());
  return kExitOk;
}

}  // namespace

void RegisterLbAgent(CLI::App& app, CommandEnv& env) {
  auto flags = std::make_shared<LbAgentFlags>();
  CLI::App* cmd = app.add_subcommand(
      "lb-agent", "Balance annotated Services by power on this node (runs as a DaemonSet)");
  cmd->footer(
      "For every Service annotated powerctl.io/load-balancing: power-aware, programs this\n"
      "node's kernel so that new connections to the Service's cluster IP go to its ready\n"
      "endpoints in proportion to their weights (see `powerctl lb weights`). Mode nftables\n"
      "(lb.mode) keeps a table of its own, `ip powerctl-lb`, ahead of kube-proxy's rules, and\n"
      "never changes kube-proxy's; mode ipvs (kube-proxy in IPVS mode with the wrr scheduler)\n"
      "sets the weights of kube-proxy's real servers instead. Services with sessionAffinity "
      "ClientIP or\n"
      "internalTrafficPolicy Local, and traffic from a Service's own endpoints (hairpin), are\n"
      "left to kube-proxy. Follows Services and EndpointSlices by watch and re-reads\n"
      "predictions every --resync; writes rules only when weights change. No predictions:\n"
      "equal weights. A failure to program removes the table (kube-proxy carries the traffic)\n"
      "and is logged, counted in /metrics and reported by `powerctl doctor`.\n"
      "The ops port serves /healthz, /readyz, /metrics and /status (JSON). SIGTERM or SIGINT\n"
      "removes every rule the agent made and exits 0; SIGHUP is logged and ignored\n"
      "(powerctl.yaml is read at start). Needs CAP_NET_ADMIN.\n"
      "Examples:\n"
      "  powerctl lb-agent                          # in the DaemonSet of `powerctl generate lb`\n"
      "  powerctl lb-agent --node node-a --ops-listen 127.0.0.1:9447 --resync 10s");
  cmd->add_option("--node", flags->node, "This node's name (default $NODE_NAME, else hostname)")
      ->type_name("NAME");
  cmd->add_option("--ops-listen", flags->ops_listen,
                  "Ops port address for probes, metrics and status (default 0.0.0.0:<lb.opsPort>)")
      ->type_name("HOST:PORT");
  cmd->add_option("--resync", flags->resync,
                  "How often predictions are re-read (default lb.resyncInterval, 30s)")
      ->type_name("DURATION");
  cmd->add_option("--mode", flags->mode, "nftables or ipvs (default lb.mode, nftables)")
      ->type_name("MODE")
      ->check(Choices(env, "lb-agent --mode", {"nftables", "ipvs"}));
  cmd->callback([&env, flags] { env.exit_code = RunLbAgentCommand(env.ctx, *flags); });
}

}  // namespace powerctl::cli
