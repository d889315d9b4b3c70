// powerctl consolidate plan [--cluster FILE] [--max-nodes N] [-l SELECTOR] [--exclude NODE]:
// which nodes to empty so the cluster draws least, and where their pods would go.
#include "cli/cmd_consolidate.h"

#include "cli/app.h"
#include "cli/exit_codes.h"
#include "cli/kube_context.h"
#include "cli/table.h"
#include "core/common/yaml.h"
#include "core/consolidate/planner.h"
#include "core/simulate/consolidation.h"
#include "core/simulate/export_snapshot.h"

#include <fmt/format.h>

#include <algorithm>
#include <ostream>

namespace powerctl::cli {
namespace {

using ojson = nlohmann::ordered_json;

struct PlanFlags {
  std::string cluster;
  NodeChoiceFlags nodes;
};

ojson PlanDocument(const consolidate::Plan& plan) {
  ojson nodes = ojson::array();
  for (const consolidate::NodePlan& n : plan.nodes) {
    ojson node = {
        {"node", n.node}, {"drain", n.drain}, {"wattsNow", std::round(n.watts_now * 10) / 10}};
    if (n.drain) {
      node["order"] = n.order;
      node["wattsSaved"] = std::round(*n.watts_saved * 10) / 10;
      ojson moves = ojson::array();
      for (const auto& m : n.moves) moves.push_back({{"pod", m.pod}, {"to", m.to}});
      node["moves"] = std::move(moves);
    } else {
      node["reason"] = n.reason;
    }
    node["stayingPods"] = n.staying_pods;
    nodes.push_back(std::move(node));
  }
  return {{"headroomPercent", plan.headroom * 100},
          {"drained", plan.drained},
          {"wattsBefore", std::round(plan.watts_before * 10) / 10},
          {"wattsAfter", std::round(plan.watts_after * 10) / 10},
          {"nodes", std::move(nodes)}};
}

void PrintPlan(std::ostream& out, const consolidate::Plan& plan) {
  Table table({"NODE", "DRAIN", "PODS TO MOVE", "WATTS NOW", "WATTS SAVED", "WHY NOT"});
  for (const consolidate::NodePlan& n : plan.nodes) {
    table.AddRow({n.node, n.drain ? fmt::format("#{}", n.order) : "-",
                  n.drain ? std::to_string(n.moves.size()) : "-",
                  fmt::format("{:.0f}", n.watts_now),
                  n.drain ? fmt::format("{:.0f}", *n.watts_saved) : "-", n.drain ? "" : n.reason});
  }
  table.Print(out);
  const double saved = plan.watts_before - plan.watts_after;
  out << fmt::format(
      "\n{} node(s) to drain: {:.0f} W -> {:.0f} W ({:.1f}% less); receiving nodes keep {:g}% "
      "CPU headroom.\n",
      plan.drained, plan.watts_before, plan.watts_after,
      plan.watts_before > 0 ? 100 * saved / plan.watts_before : 0.0, plan.headroom * 100);
  for (const consolidate::NodePlan& n : plan.nodes) {
    if (!n.drain || n.moves.empty()) continue;
    out << fmt::format("{}:", n.node);
    for (const auto& m : n.moves) out << fmt::format(" {} -> {};", m.pod, m.to);
    out << "\n";
  }
}

int RunPlan(const Context& ctx, const PlanFlags& flags) {
  auto format = ctx.Output();
  if (!format.ok()) return Fail(ctx, format.error());
  auto config = ctx.LoadConfig();
  if (!config.ok()) return Fail(ctx, config.error());
  for (const std::string& warning : config->warnings) ctx.Warn(warning);
  auto selector = consolidate::ParseLabelSelector(flags.nodes.selector);
  if (!selector.ok()) return Fail(ctx, selector.error());

  consolidate::PlanRequest request;
  request.headroom = config->consolidate.headroom;
  request.max_nodes = flags.nodes.max_nodes;
  request.selector = std::move(*selector);
  request.excluded = flags.nodes.exclude;
  Result<consolidate::Plan> plan = consolidate::Plan{};
  std::vector<std::string> names;
  if (!flags.cluster.empty()) {
    auto text = simulate::ReadInputFile(flags.cluster, "--cluster");
    if (!text.ok()) return Fail(ctx, text.error());
    auto read = simulate::ParseSnapshot(*text, flags.cluster);
    if (!read.ok()) return Fail(ctx, read.error());
    request.budgets = consolidate::DisruptionBudgetsFromObjects(read->disruption_budgets);
    for (const auto& n : read->nodes) names.push_back(n.name);
    plan = simulate::PlanSnapshot(*read, std::move(request), *config);
  } else {
    auto client = ConnectToCluster(ctx);
    if (!client.ok()) return Fail(ctx, client.error());
    // Cordoned nodes take no pods; drained ones and those cluster-autoscaler must keep stay.
    plan = consolidate::PlanLive(**client, std::move(request), LivePlanner(*config));
    if (plan.ok())
      for (const auto& n : plan->nodes) names.push_back(n.node);
  }
  for (const std::string& name : flags.nodes.exclude) {
    if (std::find(names.begin(), names.end(), name) == names.end())
      ctx.Warn("--exclude " + name + ": no such node");
  }
  if (!plan.ok()) return Fail(ctx, plan.error());
  if (*format == OutputFormat::kJson) {
    *ctx.out << PlanDocument(*plan).dump(2) << "\n";
  } else if (*format == OutputFormat::kYaml) {
    *ctx.out << EmitYaml(PlanDocument(*plan));
  } else {
    PrintPlan(*ctx.out, *plan);
  }
  return kExitOk;
}

}  // namespace

consolidate::StatePlanner LivePlanner(const config::PowerctlConfig& config) {
  return [&config](const consolidate::ClusterState& state,
                   consolidate::PlanRequest request) -> Result<consolidate::Plan> {
    POWERCTL_TRY(snapshot, simulate::SnapshotFromObjects(state.nodes, state.pods));
    return simulate::PlanSnapshot(snapshot, std::move(request), config);
  };
}

void AddNodeChoiceFlags(CLI::App& cmd, NodeChoiceFlags& flags) {
  cmd.add_option("--max-nodes", flags.max_nodes,
                 "Drain at most this many nodes (default: no limit)")
      ->type_name("N")
      ->check(CLI::Range(1, consolidate::kMaxPlanNodes));
  cmd.add_option("-l,--selector", flags.selector,
                 "Only nodes matching this label selector may be emptied")
      ->type_name("SELECTOR");
  cmd.add_option("--exclude", flags.exclude,
                 "Never empty this node (repeatable, or comma-separated)")
      ->type_name("NODE")
      ->delimiter(',')
      ->expected(0, 1000);
}

void RegisterConsolidate(CLI::App& app, CommandEnv& env) {
  CLI::App* consolidate = app.add_subcommand(
      "consolidate", "Empty the nodes that cost most, so they can be switched off");
  consolidate->require_subcommand(1);
  auto flags = std::make_shared<PlanFlags>();
  CLI::App* cmd = consolidate->add_subcommand(
      "plan", "Which nodes to empty to save the most watts, and where their pods would go");
  cmd->footer(
      "Reads the live cluster (nodes, pods, PodDisruptionBudgets) or a snapshot (--cluster, the\n"
      "format simulate reads) and plans greedily: each round drains the node whose emptying\n"
      "saves the most watts, its pods placed by powerctl's scoring on the nodes that stay, each\n"
      "of which keeps consolidate.headroom of its CPU free. A node is a candidate only if every\n"
      "pod on it can move (cluster-autoscaler's rules; DaemonSet pods stay). Changes nothing.\n"
      "Examples:\n"
      "  powerctl consolidate plan\n"
      "  powerctl consolidate plan --cluster my-cluster.yaml --max-nodes 3 -o json\n"
      "  powerctl consolidate plan -l node-role.kubernetes.io/worker --exclude gpu-1");
  cmd->add_option("--cluster", flags->cluster, "Plan on a cluster snapshot file instead")
      ->type_name("FILE");
  AddNodeChoiceFlags(*cmd, flags->nodes);
  DeclareOutput(*cmd, env, OutputFormat::kTable,
                {OutputFormat::kTable, OutputFormat::kJson, OutputFormat::kYaml});
  cmd->callback([&env, flags] { env.exit_code = RunPlan(env.ctx, *flags); });
  RegisterConsolidateApply(*consolidate, env);
  RegisterConsolidateWake(*consolidate, env);
}

}  // namespace powerctl::cli
