// powerctl consolidate wake [--on-wake CMD] [--watch [--ops-listen ADDR]]: which drained node
// would take the pods Pending for lack of room, an Event on each, and with a hook the node
// switched on and brought back; --watch repeats until SIGTERM/SIGINT (exit 0).
#include "cli/app.h"
#include "cli/cmd_consolidate.h"
#include "cli/dry_run.h"
#include "cli/exit_codes.h"
#include "cli/kube_context.h"
#include "cli/table.h"
#include "core/common/duration.h"
#include "core/common/host_name.h"
#include "core/common/yaml.h"
#include "core/consolidate/wake_run.h"
#include "core/consolidate/wake_watch.h"
#include "core/server/ops.h"

#include <fmt/format.h>

#include <ostream>

namespace powerctl::cli {
namespace {

using ojson = nlohmann::ordered_json;

constexpr Duration kMinInterval = std::chrono::seconds(10);
constexpr Duration kMaxInterval = std::chrono::hours(1);

struct WakeFlags {
  std::string on_wake;
  std::string hook_timeout = "1m";
  int max_nodes = 1;
  bool watch = false;
  std::string interval = "30s";
  std::string ops_listen;  // "" = no ops port
  std::string dry_run = "none";
};

ojson WakeDocument(const consolidate::WakeReport& report) {
  ojson nodes = ojson::array();
  for (const consolidate::NodeWakeOutcome& n : report.nodes) {
    ojson node = {{"node", n.wake.node},
                  {"addresses", n.wake.addresses},
                  {"pods", n.wake.pods},
                  {"broughtBack", n.brought_back}};
    if (n.hook.attempted()) {
      node["hook"] = {{"ok", n.hook.ok},
                      {"detail", n.hook.detail},
                      {"addressesDropped", n.hook.addresses_dropped}};
    }
    if (!n.error.empty()) node["error"] = n.error;
    nodes.push_back(std::move(node));
  }
  return {{"nodes", std::move(nodes)},
          {"noRoom", report.no_room},
          {"events", report.events},
          {"warnings", report.warnings}};
}

void PrintWake(std::ostream& out, const consolidate::WakeReport& report, bool hook) {
  if (report.nodes.empty()) {
    out << (report.no_room.empty()
                ? "No pod is Pending for lack of room.\n"
                : fmt::format("{} pod(s) Pending for lack of room; no drained node would take "
                              "them.\n",
                              report.no_room.size()));
    return;
  }
  Table table({"NODE", "PODS", "ADDRESSES", "RESULT"});
  for (const consolidate::NodeWakeOutcome& n : report.nodes) {
    std::string result = "would take them (switch it on, then powerctl consolidate undo)";
    if (n.brought_back) {
      result = "woken and uncordoned";
    } else if (n.hook.failed()) {
      result = "hook failed: " + n.hook.detail;
    } else if (!n.error.empty()) {
      result = "woken, not brought back: " + n.error;
    } else if (hook) {
      result = "dry run: hook not run";
    }
    table.AddRow({n.wake.node, std::to_string(n.wake.pods.size()),
                  fmt::format("{}", fmt::join(n.wake.addresses, ",")), result});
  }
  table.Print(out);
  if (!report.no_room.empty()) {
    out << fmt::format("\n{} more pod(s) stay Pending: no drained node would take them",
                       report.no_room.size());
    out << " (within --max-nodes).\n";
  }
}

void Print(const Context& ctx, OutputFormat format, const consolidate::WakeReport& report,
           bool hook) {
  for (const std::string& w : report.warnings) ctx.Warn(w);
  if (format == OutputFormat::kJson) {
    *ctx.out << WakeDocument(report).dump(2) << "\n";
  } else if (format == OutputFormat::kYaml) {
    *ctx.out << EmitYaml(WakeDocument(report));
  } else {
    PrintWake(*ctx.out, report, hook);
  }
  ctx.out->flush();
}

bool Failed(const consolidate::WakeReport& report) {
  for (const consolidate::NodeWakeOutcome& n : report.nodes)
    if (n.hook.failed() || !n.error.empty()) return true;
  return false;
}

int RunWake(const Context& ctx, const WakeFlags& flags) {
  auto format = ctx.Output();
  if (!format.ok()) return Fail(ctx, format.error());
  auto timeout = ParseDuration(flags.hook_timeout);
  if (!timeout.ok()) return Fail(ctx, WithContext(timeout.error(), "--hook-timeout"));
  auto interval = ParseDuration(flags.interval);
  if (!interval.ok()) return Fail(ctx, WithContext(interval.error(), "--interval"));
  if (*interval < kMinInterval || *interval > kMaxInterval) {
    return Fail(ctx, MakeError(ErrorCode::kInvalidInput, "--interval must be 10s..1h"));
  }
  consolidate::WakeRequest request;
  request.max_nodes = flags.max_nodes;
  request.on_wake.command = flags.on_wake;
  request.on_wake.timeout = *timeout;
  request.on_wake.environment = ctx.environment;
  request.dry_run = ParseDryRun(flags.dry_run) != setup::DryRunMode::kNone;
  request.instance = HostName();
  if (request.instance.empty()) request.instance = "powerctl";
  const bool hook = !request.on_wake.command.empty();
  if (!flags.watch) {
    if (!flags.ops_listen.empty()) {
      return Fail(ctx, MakeError(ErrorCode::kInvalidInput, "--ops-listen needs --watch"));
    }
    auto client = ConnectToCluster(ctx);
    if (!client.ok()) return Fail(ctx, client.error());
    auto report = consolidate::WakeOnce(**client, request, std::chrono::system_clock::now());
    if (!report.ok()) return Fail(ctx, report.error());
    Print(ctx, *format, *report, hook);
    return Failed(*report) ? kExitRuntime : kExitOk;
  }

  consolidate::WakeWatchOptions watch;
  watch.request = request;
  watch.interval = std::chrono::duration_cast<std::chrono::milliseconds>(*interval);
  if (!flags.ops_listen.empty()) {
    auto address = server::ParseListenAddress(flags.ops_listen);
    if (!address.ok()) return Fail(ctx, WithContext(address.error(), "--ops-listen"));
    server::HttpServerOptions ops;
    ops.host = address->host;
    ops.port = address->port;
    ops.threads = 1;
    watch.ops = ops;
    // Said whatever the verbosity: with port 0 this is the only way to learn the port.
    watch.on_listening = [&ctx](const std::string& url) {
      *ctx.err << "consolidate wake: /healthz, /readyz and /metrics on " << url << "\n";
      ctx.err->flush();
    };
  }
  // A failed pass is said and retried at the next interval; the watch goes on.
  watch.on_pass = [&ctx, &format, hook](const Result<consolidate::WakeReport>& report) {
    if (report.ok()) {
      Print(ctx, *format, *report, hook);
    } else {
      ctx.Warn("wake pass failed, retrying at the next interval: " + report.error().message);
    }
  };
  auto client = ConnectToCluster(ctx);
  if (!client.ok()) return Fail(ctx, client.error());
  auto stopped = consolidate::RunWakeWatch(**client, watch);
  if (!stopped.ok()) return Fail(ctx, stopped.error());
  if (ctx.log) ctx.log->info("consolidate wake: {}: stopped", *stopped);
  return kExitOk;
}

}  // namespace

void RegisterConsolidateWake(CLI::App& consolidate, CommandEnv& env) {
  auto flags = std::make_shared<WakeFlags>();
  CLI::App* cmd = consolidate.add_subcommand(
      "wake", "Find the drained nodes Pending pods need, and switch them back on");
  cmd->footer(
      "Pods count when kube-scheduler found no room for them (PodScheduled False, reason\n"
      "Unschedulable). Each drained node is judged as it will be once on and uncordoned, with\n"
      "kube-scheduler's own checks; pods share a node before another is woken, the cheapest to\n"
      "run first. Each pod gets an Event (reason DrainedNodeWouldFit) naming its node. With\n"
      "--on-wake the command runs per node ($1 and POWERCTL_NODE the node, then its addresses)\n"
      "and, when it succeeds, the node is uncordoned and its marks cleared (consolidate undo).\n"
      "With --watch a pass runs every --interval until SIGTERM or SIGINT (exit 0); a failed\n"
      "pass is reported and retried. --ops-listen serves /healthz, /readyz and /metrics\n"
      "(Pending pods, drained nodes, the pods each drained node would take, wakes by result,\n"
      "the time of the last pass; see docs/consolidate.md).\n"
      "Exit codes: 0 done (also nothing to wake); 1 a hook failed or a node was not brought\n"
      "back; 2 bad flags.\n"
      "Examples:\n"
      "  powerctl consolidate wake\n"
      "  powerctl consolidate wake --watch --on-wake 'ipmitool -H \"$1-bmc\" -U admin -E chassis "
      "power on'\n"
      "  powerctl consolidate wake --watch --ops-listen 0.0.0.0:9448");
  cmd->add_option("--on-wake", flags->on_wake, "Run this shell command to switch a node on")
      ->type_name("CMD");
  cmd->add_option("--hook-timeout", flags->hook_timeout,
                  "Kill --on-wake after this long (1s to 1h)")
      ->type_name("DURATION");
  cmd->add_option("--max-nodes", flags->max_nodes,
                  "Wake at most this many nodes a pass (default 1)")
      ->type_name("N")
      ->check(CLI::Range(1, consolidate::kMaxWakeNodes));
  cmd->add_flag("--watch", flags->watch, "Repeat every --interval until interrupted");
  cmd->add_option("--interval", flags->interval, "Time between passes with --watch (10s..1h)")
      ->type_name("DURATION");
  cmd->add_option("--ops-listen", flags->ops_listen,
                  "With --watch: serve /healthz, /readyz and /metrics on HOST:PORT (default: off)")
      ->type_name("ADDR");
  AddDryRunFlag(*cmd, flags->dry_run, env, "consolidate wake");
  DeclareOutput(*cmd, env, OutputFormat::kTable,
                {OutputFormat::kTable, OutputFormat::kJson, OutputFormat::kYaml});
  cmd->callback([&env, flags] { env.exit_code = RunWake(env.ctx, *flags); });
}

}  // namespace powerctl::cli
