// powerctl consolidate apply [-l SELECTOR] [--exclude NODE] [--max-nodes N] [--timeout D]
//                            [--on-drained CMD] [--hook-timeout D] [--dry-run MODE]
// powerctl consolidate undo NODE... | --all
#include "cli/app.h"
#include "cli/cmd_consolidate.h"
#include "cli/dry_run.h"
#include "cli/exit_codes.h"
#include "cli/kube_context.h"
#include "cli/progress_line.h"
#include "cli/table.h"
#include "core/common/duration.h"
#include "core/common/yaml.h"
#include "core/consolidate/apply.h"
#include "core/consolidate/undo.h"

#include <fmt/format.h>

#include <optional>
#include <ostream>

namespace powerctl::cli {
namespace {

using ojson = nlohmann::ordered_json;

struct ConsolidateApplyFlags {
  NodeChoiceFlags nodes;
  std::string timeout = "5m";
  std::string on_drained;
  std::string hook_timeout = "1m";
  std::string dry_run;
};

struct UndoFlags {
  std::vector<std::string> nodes;
  bool all = false;
  std::string dry_run;
};

kube::DryRun KubeDryRun(setup::DryRunMode mode) {
  switch (mode) {
    case setup::DryRunMode::kClient:
      return kube::DryRun::kClient;
    case setup::DryRunMode::kServer:
      return kube::DryRun::kServer;
    case setup::DryRunMode::kNone:
      return kube::DryRun::kNone;
  }
  return kube::DryRun::kNone;
}

ojson ApplyDocument(const consolidate::ApplyResult& result, bool dry_run) {
  ojson nodes = ojson::array();
  for (const consolidate::NodeOutcome& n : result.nodes) {
    ojson node = {{"node", n.node},
                  {"action", std::string(consolidate::NodeActionName(n.action))},
                  {"resumed", n.resumed}};
    if (n.action == consolidate::NodeAction::kDrained) {
      node["expectedWattsSaved"] = std::round(n.expected_watts_saved * 10) / 10;
      node["evicted"] = n.evicted;
    }
    if (!n.detail.empty()) node["detail"] = n.detail;
    if (n.hook.attempted()) {
      node["hook"] = {{"ok", n.hook.ok},
                      {"detail", n.hook.detail},
                      {"addressesDropped", n.hook.addresses_dropped}};
    }
    nodes.push_back(std::move(node));
  }
  return {{"dryRun", dry_run},
          {"plannedWattsBefore", std::round(result.plan.watts_before * 10) / 10},
          {"plannedWattsAfter", std::round(result.plan.watts_after * 10) / 10},
          {"nodes", std::move(nodes)},
          {"failed", result.Failed()}};
}

void PrintApply(std::ostream& out, const consolidate::ApplyResult& result,
                const std::string& suffix) {
  if (result.nodes.empty()) {
    out << "nothing to drain: no node's emptying saves watts within the plan's rules" << suffix
        << "\n";
    return;
  }
  Table table({"NODE", "RESULT", "PODS EVICTED", "EXPECTED SAVING", "DETAIL"});
  for (const consolidate::NodeOutcome& n : result.nodes) {
    const bool drained = n.action == consolidate::NodeAction::kDrained;
    std::string detail = n.detail;
    if (n.hook.attempted()) detail = n.hook.ok ? "hook ok" : "hook failed: " + n.hook.detail;
    if (n.hook.addresses_dropped > 0) {
      detail += fmt::format(" ({} address{} not valid, not passed)", n.hook.addresses_dropped,
                            n.hook.addresses_dropped == 1 ? "" : "es");
    }
    table.AddRow(
        {n.node,
         std::string(consolidate::NodeActionName(n.action)) + (n.resumed ? " (resumed)" : ""),
         drained ? std::to_string(n.evicted.size()) : "-",
         drained ? fmt::format("{:.0f} W", n.expected_watts_saved) : "-", detail});
  }
  table.Print(out);
  if (!suffix.empty()) out << "Nothing was changed" << suffix << ".\n";
}

int RunConsolidateApply(const Context& ctx, const ConsolidateApplyFlags& flags) {
  auto format = ctx.Output();
  if (!format.ok()) return Fail(ctx, format.error());
  auto config = ctx.LoadConfig();
  if (!config.ok()) return Fail(ctx, config.error());
  for (const std::string& warning : config->warnings) ctx.Warn(warning);
  auto selector = consolidate::ParseLabelSelector(flags.nodes.selector);
  if (!selector.ok()) return Fail(ctx, selector.error());
  auto timeout = ParseDuration(flags.timeout);
  if (!timeout.ok()) return Fail(ctx, WithContext(timeout.error(), "--timeout"));
  auto hook_timeout = ParseDuration(flags.hook_timeout);
  if (!hook_timeout.ok()) return Fail(ctx, WithContext(hook_timeout.error(), "--hook-timeout"));

  consolidate::ApplyRequest request;
  request.selector = std::move(*selector);
  request.excluded = flags.nodes.exclude;
  request.max_nodes = flags.nodes.max_nodes;
  request.headroom = config->consolidate.headroom;
  request.timeout = *timeout;
  request.on_drained.command = flags.on_drained;
  request.on_drained.timeout = *hook_timeout;
  request.on_drained.environment = ctx.environment;
  const setup::DryRunMode mode = ParseDryRun(flags.dry_run);
  request.dry_run = KubeDryRun(mode);

  auto client = ConnectToCluster(ctx);
  if (!client.ok()) return Fail(ctx, client.error());
  const consolidate::StatePlanner planner = LivePlanner(*config);
  const bool show_progress =
      ctx.stderr_is_tty && ctx.Env("TERM") != "dumb" && ctx.globals.verbosity < 2 &&
      !((*format == OutputFormat::kJson || *format == OutputFormat::kYaml) && !ctx.stdout_is_tty);
  std::optional<ProgressLine> line;
  if (show_progress) line.emplace(*ctx.err);
  consolidate::ApplyObserver observer;
  observer.progress = [&line](const std::string& text) {
    if (line) line->Show(text);
  };
  observer.event = [&ctx, &line](const std::string& text) {
    if (line) line->Clear();
    ctx.Note(text);
  };
  auto result = consolidate::ApplyConsolidation(**client, request, planner, observer);
  line.reset();
  if (!result.ok()) return Fail(ctx, result.error());
  const bool dry = mode != setup::DryRunMode::kNone;
  if (*format == OutputFormat::kJson) {
    *ctx.out << ApplyDocument(*result, dry).dump(2) << "\n";
  } else if (*format == OutputFormat::kYaml) {
    *ctx.out << EmitYaml(ApplyDocument(*result, dry));
  } else {
    PrintApply(*ctx.out, *result, DryRunSuffix(mode));
  }
  return result->Failed() ? kExitRuntime : kExitOk;
}

int RunUndo(const Context& ctx, const UndoFlags& flags) {
  auto format = ctx.Output();
  if (!format.ok()) return Fail(ctx, format.error());
  if (flags.all == !flags.nodes.empty()) {
    return Fail(ctx, MakeError(ErrorCode::kInvalidInput, "name the nodes to undo, or give --all"));
  }
  const setup::DryRunMode mode = ParseDryRun(flags.dry_run);
  auto client = ConnectToCluster(ctx);
  if (!client.ok()) return Fail(ctx, client.error());
  std::vector<consolidate::UndoOutcome> done;
  if (flags.all) {
    auto all = consolidate::UndoAll(**client, KubeDryRun(mode));
    if (!all.ok()) return Fail(ctx, all.error());
    done = std::move(*all);
  } else {
    for (const std::string& node : flags.nodes) {
      auto one = consolidate::UndoNode(**client, node, KubeDryRun(mode));
      if (!one.ok()) return Fail(ctx, one.error());
      done.push_back(std::move(*one));
    }
  }
  ojson nodes = ojson::array();
  for (const consolidate::UndoOutcome& u : done) {
    if (!u.warning.empty()) ctx.Warn("node " + u.node + ": " + u.warning);
    nodes.push_back({{"node", u.node}, {"was", u.state}, {"uncordoned", u.uncordoned}});
  }
  if (*format == OutputFormat::kJson) {
    *ctx.out << ojson{{"dryRun", mode != setup::DryRunMode::kNone}, {"nodes", nodes}}.dump(2)
             << "\n";
  } else if (*format == OutputFormat::kYaml) {
    *ctx.out << EmitYaml(ojson{{"dryRun", mode != setup::DryRunMode::kNone}, {"nodes", nodes}});
  } else if (done.empty()) {
    *ctx.out << "no node carries powerctl's marks\n";
  } else {
    for (const consolidate::UndoOutcome& u : done) {
      *ctx.out << "node/" << u.node << " "
               << (u.uncordoned ? "uncordoned" : "left cordoned (it was before powerctl)")
               << ", marks removed" << DryRunSuffix(mode) << "\n";
    }
  }
  return kExitOk;
}

}  // namespace

void RegisterConsolidateApply(CLI::App& consolidate, CommandEnv& env) {
  auto flags = std::make_shared<ConsolidateApplyFlags>();
  CLI::App* cmd = consolidate.add_subcommand(
      "apply", "Drain the nodes the plan names and mark them for switching off");
  cmd->footer(
      "Plans as `consolidate plan` does on the live cluster, then per node, in plan order:\n"
      "cordons it and labels it powerctl.io/power-state=draining (one PATCH), evicts its pods\n"
      "through the Eviction API (PodDisruptionBudgets honoured, 429s retried until --timeout),\n"
      "waits until they run elsewhere, labels it drained and runs --on-drained. Before each node\n"
      "it plans again: a node whose plan no longer holds is left alone, and the run says why.\n"
      "A run that was stopped is resumed by running it again; `consolidate undo` gives a node\n"
      "back. Exit 1 when a drain or a hook failed (the node stays marked).\n"
      "Examples:\n"
      "  powerctl consolidate apply --dry-run=client\n"
      "  powerctl consolidate apply --max-nodes 2 --on-drained 'ipmitool -H \"$1-bmc\" power off'\n"
      "  powerctl consolidate undo worker-7");
  AddNodeChoiceFlags(*cmd, flags->nodes);
  cmd->add_option("--timeout", flags->timeout,
                  "How long one node's drain may take: evictions a PodDisruptionBudget refuses, "
                  "pods terminating, replacements starting (1s to 6h)")
      ->type_name("DURATION")
      ->capture_default_str();
  cmd->add_option("--on-drained", flags->on_drained,
                  "Shell command run for each drained node: $1 is its name, $2... its addresses; "
                  "also POWERCTL_NODE, POWERCTL_NODE_INTERNAL_IP, POWERCTL_NODE_ADDRESSES")
      ->type_name("CMD");
  cmd->add_option("--hook-timeout", flags->hook_timeout,
                  "Kill --on-drained after this long (1s to 1h)")
      ->type_name("DURATION")
      ->capture_default_str();
  AddDryRunFlag(*cmd, flags->dry_run, env, "consolidate apply");
  DeclareOutput(*cmd, env, OutputFormat::kTable,
                {OutputFormat::kTable, OutputFormat::kJson, OutputFormat::kYaml});
  cmd->callback([&env, flags] { env.exit_code = RunConsolidateApply(env.ctx, *flags); });

  auto undo_flags = std::make_shared<UndoFlags>();
  CLI::App* undo = consolidate.add_subcommand(
      "undo", "Give drained nodes back: uncordon them and remove powerctl's marks");
  undo->footer(
      "Removes the powerctl.io/power-state label and powerctl.io/consolidation annotation and\n"
      "uncordons the node, unless it was cordoned before consolidate apply drained it.\n"
      "Exit 2 for a node without powerctl's marks, 1 for one that does not exist.\n"
      "Examples:\n"
      "  powerctl consolidate undo worker-7\n"
      "  powerctl consolidate undo --all --dry-run=client");
  undo->add_option("NODE", undo_flags->nodes, "Nodes to give back")->expected(0, 1000);
  undo->add_flag("--all", undo_flags->all, "Every node carrying powerctl's marks");
  AddDryRunFlag(*undo, undo_flags->dry_run, env, "consolidate undo");
  DeclareOutput(*undo, env, OutputFormat::kTable,
                {OutputFormat::kTable, OutputFormat::kJson, OutputFormat::kYaml});
  undo->callback([&env, undo_flags] { env.exit_code = RunUndo(env.ctx, *undo_flags); });
}

}  // namespace powerctl::cli
