// powerctl simulate [--cluster FILE] [--pods N | --workload FILE] [--scorer ...] [--seeds N]
// [--load 25,50,75] [--prediction-error PCT] [--report FILE.html] [--export-snapshot FILE]:
// places a workload on a cluster snapshot (the bundled demo by default) with powerctl's
// scoring and with the baselines, and prints the true watts each placement costs.
#include "cli/app.h"
#include "cli/exit_codes.h"
#include "cli/kube_context.h"
#include "cli/progress_line.h"
#include "cli/simulate_progress.h"
#include "cli/table.h"
#include "core/common/build_info.h"
#include "core/common/http_client.h"
#include "core/common/yaml.h"
#include "core/setup/calibrate_nodes.h"
#include "core/simulate/export_snapshot.h"
#include "core/simulate/report_html.h"
#include "core/simulate/simulate.h"
#include "core/telemetry/power_sources.h"

#include <fmt/format.h>

#include <fstream>
#include <map>
#include <optional>
#include <ostream>
#include <vector>

namespace powerctl::cli {
namespace {

struct SimulateFlags {
  std::string cluster;
  std::optional<int> pods;
  std::string workload;
  std::vector<std::string> scorers;
  int seeds = 5;
  std::uint64_t first_seed = 1;
  std::vector<double> loads = {25, 50, 75};
  double prediction_error_percent = 10;
  bool idle_off = false;
  bool consolidate = false;
  bool unrounded = false;
  bool batching = false;
  std::string report;
  std::string export_snapshot;
};

std::string FormatWatts(const std::optional<double>& w) {
  return w ? fmt::format("{:.0f}", *w) : "-";
}

std::string Saving(const std::optional<double>& v) {
  return v ? fmt::format("{:.1f}%", *v) : "-";
}

std::string Above(const std::optional<double>& v) {
  return v ? fmt::format("{:+.1f}%", *v) : "-";
}

const simulate::ScorerSummary* FindSummary(const simulate::SimulationResult& r,
                                           std::string_view scorer) {
  for (const auto& s : r.summary)
    if (s.scorer == scorer) return &s;
  return nullptr;
}

// The outcome first: powerctl against the default, against PEAKS and against the bound.
void PrintOutcome(std::ostream& out, const simulate::SimulationResult& r) {
  const auto* powerctl = FindSummary(r, "powerctl");
  if (powerctl == nullptr) return;
  const auto* fallback = FindSummary(r, "default");
  const auto* peaks = FindSummary(r, "peaks");
  std::vector<std::string> headers = {"LOAD", "POWERCTL W", "SAVES VS DEFAULT"};
  if (peaks != nullptr) headers.push_back("SAVES VS PEAKS");
  headers.insert(headers.end(), {"BOUND W", "ABOVE BOUND"});
  Table outcome(headers);
  for (std::size_t l = 0; l < r.loads.size(); ++l) {
    std::vector<std::string> row = {fmt::format("{:g}%", r.loads[l]),
                                    FormatWatts(powerctl->mean_watts[l]),
                                    Saving(fallback->powerctl_saving[l])};
    if (peaks != nullptr) row.push_back(Saving(peaks->powerctl_saving[l]));
    row.push_back(FormatWatts(r.mean_bound[l]));
    row.push_back(Above(powerctl->above_bound[l]));
    outcome.AddRow(std::move(row));
  }
  out << "Outcome (mean of seeds):\n";
  outcome.Print(out);
  out << fmt::format(
      "The bound: no placement of the same pods can draw less ({}, true curves, pods split "
      "freely).\n\n",
      r.idle_off ? "nodes without new work switched off" : "every node on");
}

// With --consolidate: each scorer's placement with the drained nodes off, against the
// default scheduler with every node on and the bound with idle nodes off.
void PrintConsolidation(std::ostream& out, const simulate::SimulationResult& r) {
  if (!r.consolidate) return;
  Table table({"LOAD", "SCORER", "CONSOLIDATED W", "DRAINED", "BELOW DEFAULT (ALL ON)",
               "BOUND W (IDLE OFF)"});
  for (std::size_t l = 0; l < r.loads.size(); ++l) {
    for (const auto& c : r.consolidation) {
      table.AddRow({fmt::format("{:g}%", r.loads[l]), c.scorer, FormatWatts(c.mean_watts[l]),
                    c.mean_drained[l] ? fmt::format("{:.1f}", *c.mean_drained[l]) : "-",
                    Saving(c.below_default_on[l]), FormatWatts(r.mean_bound_idle_off[l])});
    }
  }
  out << "After consolidation (consolidate's planner on each placement, drained nodes off; "
         "mean of seeds):\n";
  table.Print(out);
  out << "\n";
}

void PrintTables(const Context& ctx, const config::PowerctlConfig& config,
                 const simulate::SimulationResult& r) {
  std::ostream& out = *ctx.out;
  out << fmt::format(
      "Cluster: {} ({} nodes, {:.1f}% CPU requested before the workload); {} seed(s); "
      "prediction error {:.0f}%{}\n",
      r.snapshot_source, r.nodes.size(), r.initial_load_percent, r.runs.size(),
      r.prediction_error * 100, r.idle_off ? "; idle nodes switched off" : "");
  out << fmt::format("powerctl: scheduler.resourceScoring {}, extender.weight {}{}\n\n",
                     config.scheduler.resource_scoring, config.extender.weight,
                     r.unrounded_extender_scores ? ", extender scores unrounded (diagnostic)" : "");
  if (r.opportunistic_batching) {
    int hinted = 0, pods = 0;
    for (const auto& run : r.runs) {
      for (const auto& s : run.scorers) {
        if (s.scorer == "powerctl") hinted += s.hinted;
      }
      pods += run.pods;
    }
    out << fmt::format(
        "OpportunisticBatching: {} of {} powerctl placements took the previous pod's ranking "
        "unscored (all seeds)\n\n",
        hinted, pods);
  }
  PrintOutcome(out, r);
  PrintConsolidation(out, r);
  Table totals({"LOAD", "SCORER", "WATTS", "POWERCTL SAVES", "ABOVE BOUND", "UNSCHEDULED"});
  for (std::size_t l = 0; l < r.loads.size(); ++l) {
    for (const auto& s : r.summary) {
      totals.AddRow({fmt::format("{:g}%", r.loads[l]), s.scorer, FormatWatts(s.mean_watts[l]),
                     s.scorer == "powerctl" ? "-" : Saving(s.powerctl_saving[l]),
                     Above(s.above_bound[l]), fmt::format("{:g}", s.mean_unscheduled[l])});
    }
    totals.AddRow(
        {fmt::format("{:g}%", r.loads[l]), "bound", FormatWatts(r.mean_bound[l]), "-", "-", "-"});
  }
  totals.Print(out);
  out << fmt::format("\nWatts per node at the end ({:.0f}% load), mean of seeds:\n",
                     r.runs.front().final_load_percent);
  std::vector<std::string> headers = {"NODE"};
  for (const auto& s : r.summary) headers.push_back(s.scorer);
  Table nodes(headers);
  for (std::size_t i = 0; i < r.nodes.size(); ++i) {
    std::vector<std::string> row = {r.nodes[i]};
    for (const auto& s : r.summary) row.push_back(fmt::format("{:.0f}", s.mean_node_watts[i]));
    nodes.AddRow(std::move(row));
  }
  std::vector<std::string> total_row = {"TOTAL"};
  for (const auto& s : r.summary) total_row.push_back(fmt::format("{:.0f}", s.mean_total_watts));
  nodes.AddRow(std::move(total_row));
  nodes.Print(out);
}

Status WriteOutput(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return MakeError(ErrorCode::kIo, path + ": cannot open the file for writing");
  out << text;
  // A full disk shows when the buffer is written out, or only when the file is closed.
  out.flush();
  out.close();
  if (!out) return MakeError(ErrorCode::kIo, path + ": cannot write the file");
  return OkStatus();
}

// A progress line on stderr only for someone watching a terminal: not when -o json|yaml goes
// to a pipe (a script runs this), and not when log lines (-v 2 and up) share the terminal.
bool WantsProgress(const Context& ctx, OutputFormat format) {
  if (!ctx.stderr_is_tty || ctx.Env("TERM") == "dumb") return false;
  if ((format == OutputFormat::kJson || format == OutputFormat::kYaml) && !ctx.stdout_is_tty)
    return false;
  return ctx.globals.verbosity < 2;
}

// Each node's measured power curve from telemetry.powerSource's history in Prometheus. Why
// there are none is a note: the snapshot is useful without them.
std::map<std::string, std::vector<double>> MeasuredCurves(const Context& ctx,
                                                          kube::Client& client) {
  auto note = [&](const std::string& why) {
    ctx.Note("no measured power curves in the snapshot: " + why);
    return std::map<std::string, std::vector<double>>{};
  };
  auto config = ctx.LoadConfig();
  if (!config.ok()) return note(config.error().message);
  auto power = telemetry::PowerQuerySpecFromSettings(config->telemetry);
  if (!power.ok()) return note(power.error().message);
  auto http = MakeCurlHttpClient();
  telemetry::PrometheusClient prometheus(
      *http, telemetry::PrometheusOptions{config->telemetry.prometheus_url,
                                          std::chrono::seconds(30), ctx.log});
  auto curves = setup::MeasuredPowerCurves(client, prometheus, *power);
  if (!curves.ok()) return note(curves.error().message);
  return *std::move(curves);
}

int RunExport(const Context& ctx, const SimulateFlags& flags) {
  auto client = ConnectToCluster(ctx);
  if (!client.ok()) return Fail(ctx, client.error());
  auto snapshot = simulate::ExportSnapshot(**client);
  if (!snapshot.ok()) return Fail(ctx, snapshot.error());
  const std::size_t curves = simulate::AddMeasuredCurves(*snapshot, MeasuredCurves(ctx, **client));
  ctx.Note(
      fmt::format("{} of {} nodes have a measured power curve (their true power when simulated)",
                  curves, snapshot->nodes.size()));
  std::string yaml = EmitYaml(simulate::SnapshotDocument(*snapshot));
  if (flags.export_snapshot == "-") {
    *ctx.out << yaml;
  } else if (Status written = WriteOutput(flags.export_snapshot, yaml); !written.ok()) {
    return Fail(ctx, written.error());
  } else {
    ctx.Note(fmt::format("wrote {} ({} nodes)", flags.export_snapshot, snapshot->nodes.size()));
  }
  return kExitOk;
}

int RunSimulate(const Context& ctx, const SimulateFlags& flags) {
  if (!flags.export_snapshot.empty()) return RunExport(ctx, flags);
  auto format = ctx.Output();
  if (!format.ok()) return Fail(ctx, format.error());
  auto config = ctx.LoadConfig();
  if (!config.ok()) return Fail(ctx, config.error());
  for (const std::string& warning : config->warnings) ctx.Warn(warning);

  simulate::SimulationRequest request;
  request.config = *config;
  if (flags.cluster.empty()) {
    auto demo = simulate::DemoSnapshot();
    if (!demo.ok()) return Fail(ctx, demo.error());
    request.snapshot = std::move(*demo);
  } else {
    auto text = simulate::ReadInputFile(flags.cluster, "--cluster");
    if (!text.ok()) return Fail(ctx, text.error());
    auto snapshot = simulate::ParseSnapshot(*text, flags.cluster);
    if (!snapshot.ok()) return Fail(ctx, snapshot.error());
    request.snapshot = std::move(*snapshot);
  }
  if (!flags.workload.empty()) {
    auto text = simulate::ReadInputFile(flags.workload, "--workload");
    if (!text.ok()) return Fail(ctx, text.error());
    auto workload = simulate::ParseWorkload(*text, flags.workload);
    if (!workload.ok()) return Fail(ctx, workload.error());
    request.workload = std::move(*workload);
  }
  request.pods = flags.pods;
  request.scorers = flags.scorers;
  request.seeds = flags.seeds;
  request.first_seed = flags.first_seed;
  request.loads = flags.loads;
  request.prediction_error = flags.prediction_error_percent / 100;
  request.idle_off = flags.idle_off;
  request.consolidate = flags.consolidate;
  request.unrounded_extender_scores = flags.unrounded;
  request.opportunistic_batching = flags.batching;
  std::optional<ProgressLine> progress;
  if (WantsProgress(ctx, *format)) {
    progress.emplace(*ctx.err);
    request.progress = [&progress,
                        bars = SimulationBars()](const simulate::SimulationProgress& p) mutable {
      bars.Update(p);
      progress->Show(bars.Text(progress->now() - progress->started()));
    };
  }
  auto result = simulate::RunSimulation(request);
  progress.reset();  // erases the line before anything else is printed
  if (!result.ok()) return Fail(ctx, result.error());
  if (const simulate::UnreachedLoads unreached = simulate::LoadsNotReached(*result);
      !unreached.loads.empty()) {
    ctx.Warn(fmt::format(
        "the workload reaches only {:.1f}% of the cluster's CPU: no figures at --load {}% (more "
        "--pods, or lower loads)",
        unreached.reached_percent, fmt::join(unreached.loads, ",")));
  }

  if (!flags.report.empty()) {
    simulate::ReportProvenance provenance;
    provenance.command_line = ctx.command_line;
    const BuildInfo& build = GetBuildInfo();
    provenance.version =
        fmt::format("{} (commit {}, built {})", build.version, build.git_commit, build.build_date);
    if (Status written = WriteOutput(
            flags.report, simulate::RenderHtmlReport(*result, request.snapshot, provenance));
        !written.ok()) {
      return Fail(ctx, written.error());
    }
    ctx.Note("wrote " + flags.report);
  }
  if (*format == OutputFormat::kJson) {
    *ctx.out << simulate::SimulationDocument(*result).dump(2) << "\n";
  } else if (*format == OutputFormat::kYaml) {
    *ctx.out << EmitYaml(simulate::SimulationDocument(*result));
  } else {
    PrintTables(ctx, *config, *result);
  }
  return kExitOk;
}

}  // namespace

void RegisterSimulate(CLI::App& app, CommandEnv& env) {
  auto flags = std::make_shared<SimulateFlags>();
  CLI::App* cmd = app.add_subcommand(
      "simulate", "Place a workload with powerctl's scoring and baselines, compare the watts");
  cmd->footer(
      "Places pods, in arrival order, on a cluster snapshot (the bundled demo of 24 nodes of\n"
      "four server generations unless --cluster is given) once with each scorer: powerctl\n"
      "(the extender's own scoring), kube-scheduler's default, WAO's MinimizePower and PEAKS.\n"
      "Nodes draw their true power (measured curves); the predictors see it with\n"
      "--prediction-error. Prints the cluster's true watts at each --load (percent of the\n"
      "cluster's CPU requested) and what powerctl saves against each scorer, averaged over\n"
      "--seeds, and each node's watts at the end. Leads with the outcome: powerctl against the\n"
      "default, against PEAKS, and against a lower bound no placement of the same pods can\n"
      "beat (every node's convex envelope filled cheapest first; --idle-off lets nodes\n"
      "without new work switch off, in every scorer and the bound).\n"
      "Examples:\n"
      "  powerctl simulate\n"
      "  powerctl simulate --seeds 5 --load 25,50,75 --report simulate.html\n"
      "  powerctl simulate --cluster my-cluster.yaml --workload pods.yaml -o json\n"
      "  powerctl simulate --export-snapshot my-cluster.yaml");
  cmd->add_option("--cluster", flags->cluster, "Cluster snapshot file (default: the bundled demo)")
      ->type_name("FILE");
  auto* pods = cmd->add_option("--pods", flags->pods,
                               "Generate this many pods (default: up to the highest --load)")
                   ->type_name("N")
                   ->check(CLI::Range(1, static_cast<int>(simulate::kMaxWorkloadPods)));
  cmd->add_option("--workload", flags->workload, "Pods to place, in order (YAML)")
      ->type_name("FILE")
      ->excludes(pods);
  cmd->add_option("--scorer", flags->scorers,
                  "Scorers to compare: powerctl,default,minimizepower,peaks (default: all)")
      ->type_name("NAME")
      ->delimiter(',')
      ->check(Choices(env, "simulate --scorer", {"powerctl", "default", "minimizepower", "peaks"}));
  cmd->add_option("--seeds", flags->seeds, "Runs to average over (default 5)")
      ->type_name("N")
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--seed", flags->first_seed, "First seed (default 1)")->type_name("N");
  cmd->add_option("--load", flags->loads, "Cluster CPU loads to report, percent (default 25,50,75)")
      ->type_name("PCT")
      ->delimiter(',')
      ->check(CLI::Range(0.01, 100.0));
  cmd->add_option("--prediction-error", flags->prediction_error_percent,
                  "How far off the predictors' idle and max watts are, percent (default 10)")
      ->type_name("PCT")
      ->check(CLI::Range(0.0, 99.0));
  cmd->add_flag("--idle-off", flags->idle_off,
                "Count nodes left without new work as switched off (0 W)");
  cmd->add_flag("--consolidate", flags->consolidate,
                "Also run consolidate's planner after each placement; drained nodes count as off");
  cmd->add_flag("--unrounded-scores", flags->unrounded,
                "Diagnostic: powerctl's extender score before its rounding to 0..10");
  cmd->add_flag("--opportunistic-batching", flags->batching,
                "Place as kube-scheduler 1.35+'s OpportunisticBatching would: a pod like the "
                "previous one takes the next node of its ranking unscored");
  cmd->add_option("--report", flags->report, "Also write an HTML report with charts")
      ->type_name("FILE");
  cmd->add_option("--export-snapshot", flags->export_snapshot,
                  "Write a snapshot of the live cluster (- for stdout) instead of simulating")
      ->type_name("FILE");
  DeclareOutput(*cmd, env, OutputFormat::kTable,
                {OutputFormat::kTable, OutputFormat::kJson, OutputFormat::kYaml});
  cmd->callback([&env, flags] { env.exit_code = RunSimulate(env.ctx, *flags); });
}

}  // namespace powerctl::cli
