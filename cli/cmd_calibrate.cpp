// powerctl calibrate [NODE...|-l SELECTOR|--all]: fits the built-in model's idle-watts,
// max-watts and curve per node from measured power and CPU utilisation in Prometheus.
#include "cli/app.h"
#include "cli/dry_run.h"
#include "cli/exit_codes.h"
#include "cli/kube_context.h"
#include "core/common/duration.h"
#include "core/common/http_client.h"
#include "core/common/yaml.h"
#include "core/setup/calibrate_nodes.h"
#include "core/telemetry/prometheus_client.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <memory>
#include <ostream>

namespace powerctl::cli {
namespace {

struct CalibrateFlags {
  setup::CalibrateRequest request;
  std::string dry_run;
  std::string window = "7d";
  std::string step = "5m";
  std::string prometheus_url;
  std::size_t min_samples = 30;
  double min_r2 = 0.8;
  double min_utilisation_range = 0.2;
};

Result<std::chrono::seconds> Seconds(const std::string& flag, const std::string& text) {
  auto d = ParseDuration(text);
  if (!d.ok()) return WithContext(d.error(), flag);
  return std::chrono::duration_cast<std::chrono::seconds>(*d);
}

std::string ResultText(const setup::NodeCalibration& c, const std::string& suffix) {
  if (!c.fit.refused.empty()) return "refused: " + c.fit.refused;
  return (c.changed ? "calibrated" : "unchanged") + suffix;
}

nlohmann::ordered_json ToJson(const setup::NodeCalibration& c, const std::string& result) {
  nlohmann::ordered_json j = {{"node", c.node},
                              {"samples", c.fit.samples},
                              {"utilisationMin", c.fit.utilisation_min},
                              {"utilisationMax", c.fit.utilisation_max}};
  if (c.fit.fitted) {
    j["idleWatts"] = c.fit.params.idle_watts;
    j["maxWatts"] = c.fit.params.max_watts;
    j["curve"] = c.fit.params.curve;
    j["r2"] = c.fit.r2;
    j["rmseWatts"] = c.fit.rmse_watts;
  }
  j["annotations"] = c.annotations;
  j["changed"] = c.changed;
  j["refused"] = c.fit.refused;
  j["result"] = result;
  return j;
}

void PrintTable(const Context& ctx, const setup::CalibrationReport& report,
                const std::string& suffix) {
  std::size_t width = 4;
  for (const auto& c : report.nodes) width = std::max(width, c.node.size());
  *ctx.out << fmt::format("{:<{}}  {:>7}  {:<9}  {:>7}  {:>7}  {:>5}  {:>6}  {:>6}  {}\n", "NODE",
                          width, "SAMPLES", "UTIL", "IDLE W", "MAX W", "CURVE", "R2", "RMSE W",
                          "RESULT");
  for (const auto& c : report.nodes) {
    const auto& f = c.fit;
    std::string util =
        f.samples == 0 ? "-" : fmt::format("{:.2f}-{:.2f}", f.utilisation_min, f.utilisation_max);
    bool fitted = f.fitted;  // refused before the least squares ran: no numbers to show
    *ctx.out << fmt::format(
        "{:<{}}  {:>7}  {:<9}  {:>7}  {:>7}  {:>5}  {:>6}  {:>6}  {}\n", c.node, width, f.samples,
        util, fitted ? fmt::format("{:.1f}", f.params.idle_watts) : "-",
        fitted ? fmt::format("{:.1f}", f.params.max_watts) : "-",
        fitted ? fmt::format("{:.2f}", f.params.curve) : "-",
        fitted ? fmt::format("{:.3f}", f.r2) : "-",
        fitted ? fmt::format("{:.1f}", f.rmse_watts) : "-", ResultText(c, suffix));
  }
}

int RunCalibrate(const Context& ctx, const CLI::App* cmd, CalibrateFlags& flags) {
  auto format = ctx.Output(OutputFormat::kTable,
                           {OutputFormat::kTable, OutputFormat::kJson, OutputFormat::kYaml});
  if (!format.ok()) return Fail(ctx, format.error());
  setup::CalibrateRequest request = flags.request;
  request.dry_run = ParseDryRun(flags.dry_run);
  auto window = Seconds("--window", flags.window);
  if (!window.ok()) return Fail(ctx, window.error());
  auto step = Seconds("--step", flags.step);
  if (!step.ok()) return Fail(ctx, step.error());
  request.window = *window;
  request.step = *step;
  request.fit.min_samples = flags.min_samples;
  request.fit.min_r2 = flags.min_r2;
  request.fit.min_utilisation_range = flags.min_utilisation_range;
  // Bad input is refused before the cluster or Prometheus is contacted.
  if (Status valid = setup::ValidateCalibrateRequest(request); !valid.ok()) {
    return Fail(ctx, valid.error());
  }
  auto config = ctx.LoadConfig();
  if (!config.ok()) return Fail(ctx, config.error());
  std::string url =
      cmd->count("--prometheus-url") > 0 ? flags.prometheus_url : config->telemetry.prometheus_url;
  auto http = MakeCurlHttpClient();
  telemetry::PrometheusClient prometheus(
      *http, telemetry::PrometheusOptions{url, std::chrono::seconds(60), ctx.log});
  auto client = ConnectToCluster(ctx);
  if (!client.ok()) return Fail(ctx, client.error());
  auto report = setup::CalibrateNodes(**client, prometheus, request);
  if (!report.ok()) return Fail(ctx, report.error());

  std::string suffix = DryRunSuffix(request.dry_run);
  if (*format == OutputFormat::kTable) {
    PrintTable(ctx, *report, suffix);
  } else {
    nlohmann::ordered_json doc = {{"nodes", nlohmann::ordered_json::array()},
                                  {"written", report->not_written.empty()}};
    for (const auto& c : report->nodes) doc["nodes"].push_back(ToJson(c, ResultText(c, suffix)));
    *ctx.out << (*format == OutputFormat::kJson ? doc.dump(2) + "\n" : EmitYaml(doc));
  }
  if (!report->not_written.empty()) {
    return Fail(ctx, MakeError(ErrorCode::kCheckFailed, report->not_written));
  }
  return kExitOk;
}

}  // namespace

void RegisterCalibrate(CLI::App& app, CommandEnv& env) {
  auto flags = std::make_shared<CalibrateFlags>();
  CLI::App* cmd = app.add_subcommand(
      "calibrate", "Fit the built-in power model per node from measured power in Prometheus");
  cmd->footer(
      "For each node, pairs mean power (ipmi_dcmi_power_consumption_watts) with CPU utilisation\n"
      "(1 - idle fraction from node_exporter's node_cpu_seconds_total), both averaged over each\n"
      "--step of --window, and fits watts = idle + (max - idle) * utilisation^curve by least\n"
      "squares (curve 0.5..2.0 in steps of 0.05). Writes powerctl.io/idle-watts, max-watts and\n"
      "curve; temperature-factor is left as it is. A node with too few samples, too narrow a\n"
      "utilisation range or a poor fit (R2 below --min-r2) is refused, and then no node is\n"
      "changed unless --skip-unfit. Series map to nodes by instance host (name, InternalIP,\n"
      "Hostname) or a node label.\n"
      "Exit codes: 0 written (or dry run), 3 a node could not be calibrated, 1 Prometheus or the\n"
      "cluster failed, 2 bad flags.\n"
      "Examples:\n"
      "  powerctl calibrate --all --dry-run=client\n"
      "  powerctl calibrate node-a node-b --window 14d --step 10m -o json");
  cmd->add_option("nodes", flags->request.nodes, "Node names")->type_name("NODE");
  cmd->add_option("-l,--selector", flags->request.selector, "Label selector for the nodes")
      ->type_name("SELECTOR");
  cmd->add_flag("--all", flags->request.all, "All nodes");
  cmd->add_option("--window", flags->window, "History to fit (default 7d)")->type_name("DURATION");
  cmd->add_option("--step", flags->step, "Resolution and averaging interval (default 5m)")
      ->type_name("DURATION");
  cmd->add_option("--prometheus-url", flags->prometheus_url,
                  "Prometheus (default: telemetry.prometheusUrl)")
      ->type_name("URL");
  cmd->add_option("--power-metric", flags->request.power_metric,
                  "Node power gauge in watts (default ipmi_dcmi_power_consumption_watts)")
      ->type_name("METRIC");
  cmd->add_option("--min-r2", flags->min_r2, "Refuse fits with a lower R2 (default 0.8)")
      ->type_name("R2");
  cmd->add_option("--min-samples", flags->min_samples,
                  "Refuse nodes with fewer samples (default 30)")
      ->type_name("N");
  cmd->add_option("--min-utilisation-range", flags->min_utilisation_range,
                  "Refuse nodes whose utilisation spread is smaller (default 0.2)")
      ->type_name("FRACTION");
  cmd->add_flag("--skip-unfit", flags->request.skip_unfit,
                "Write the nodes that fit and leave the others alone");
  AddDryRunFlag(*cmd, flags->dry_run, env, "calibrate");
  cmd->callback([&env, flags, cmd] { env.exit_code = RunCalibrate(env.ctx, cmd, *flags); });
}

}  // namespace powerctl::cli
