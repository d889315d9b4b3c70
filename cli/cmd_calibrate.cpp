// powerctl calibrate [NODE...|-l SELECTOR|--all] [--form curve|exponent]: fits the built-in
// model per node from measured power and CPU utilisation in Prometheus: the measured 11-point
// curve (power-curve) with idle-watts, max-watts and curve beside it, or those three alone.
#include "cli/app.h"
#include "cli/dry_run.h"
#include "cli/exit_codes.h"
#include "cli/kube_context.h"
#include "cli/table.h"
#include "core/common/duration.h"
#include "core/common/http_client.h"
#include "core/common/yaml.h"
#include "core/setup/calibrate_nodes.h"
#include "core/telemetry/power_sources.h"
#include "core/telemetry/prometheus_client.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <memory>
#include <ostream>
#include <sstream>

namespace powerctl::cli {
namespace {

struct CalibrateFlags {
  setup::CalibrateRequest request;
  std::string dry_run;
  std::string window = "7d";
  std::string step = "5m";
  std::string prometheus_url;
  std::string power_source;
  std::string power_query;
  std::string power_metric;
  std::string form = "curve";
  std::size_t min_samples = 30;
  std::size_t min_bin_samples = 3;
  double min_r2 = 0.8;
  double min_utilisation_range = 0.2;
};

Result<std::chrono::seconds> Seconds(const std::string& flag, const std::string& text) {
  auto d = ParseDuration(text);
  if (!d.ok()) return WithContext(d.error(), flag);
  return std::chrono::duration_cast<std::chrono::seconds>(*d);
}

std::string ResultText(const setup::NodeCalibration& c, const std::string& suffix) {
  if (!c.refused.empty()) return "refused: " + c.refused;
  return (c.changed ? "calibrated" : "unchanged") + suffix;
}

bool CurveForm(const setup::NodeCalibration& c) {
  return c.form == setup::CalibrationForm::kCurve;
}

nlohmann::ordered_json ToJson(const setup::NodeCalibration& c, const std::string& result) {
  nlohmann::ordered_json j = {{"node", c.node},
                              {"form", setup::CalibrationFormName(c.form)},
                              {"samples", c.fit.samples},
                              {"utilisationMin", c.fit.utilisation_min},
                              {"utilisationMax", c.fit.utilisation_max},
                              {"loadRangeCovered", c.load_range_covered},
                              {"measuredSteps", c.measured_steps}};
  if (c.fit.fitted) {
    j["idleWatts"] = c.fit.params.idle_watts;
    j["maxWatts"] = c.fit.params.max_watts;
    j["curve"] = c.fit.params.curve;
    j["r2"] = c.fit.r2;
    j["rmseWatts"] = c.fit.rmse_watts;
  }
  if (c.curve.fitted) {
    j["powerCurve"] = c.curve.points;
    nlohmann::ordered_json bins = nlohmann::ordered_json::array();
    for (const predict::CurveBin& b : c.curve.bins) {
      nlohmann::ordered_json bin = {{"load", b.load_percent}, {"samples", b.samples}};
      bin["meanWatts"] = b.samples > 0 ? nlohmann::ordered_json(b.mean_watts) : nullptr;
      bin["watts"] = b.watts;
      bin["source"] = b.measured ? "measured" : "filled";
      bins.push_back(std::move(bin));
    }
    j["bins"] = std::move(bins);
    j["filledFrom"] = c.curve.filled_from;
    j["curveR2"] = c.curve.r2;
    j["curveRmseWatts"] = c.curve.rmse_watts;
  }
  j["annotations"] = c.annotations;
  j["removedAnnotations"] = c.removed;
  j["changed"] = c.changed;
  j["refused"] = c.refused;
  if (!c.power_zones.empty()) j["powerZones"] = c.power_zones;
  j["result"] = result;
  return j;
}

std::string Fixed(bool known, double value, int digits) {
  return known ? fmt::format("{:.{}f}", value, digits) : "-";
}

// "90% 9/11": the utilisation spread the history covered and, with the curve form, the load
// steps measured rather than filled.
std::string Covered(const setup::NodeCalibration& c) {
  if (c.fit.samples == 0) return "-";
  std::string out = fmt::format("{:.0f}%", c.load_range_covered * 100);
  if (CurveForm(c) && c.curve.fitted) out += fmt::format(" {}/11", c.measured_steps);
  return out;
}

// One line per node: the exponent fit's parameters, and R² and RMSE of the form written.
void PrintSummary(const Context& ctx, const setup::CalibrationReport& report,
                  const std::string& suffix) {
  Table table({"NODE", "SAMPLES", "UTIL", "COVERED", "FORM", "IDLE W", "MAX W", "CURVE", "R2",
               "RMSE W", "RESULT"});
  for (const auto& c : report.nodes) {
    const auto& f = c.fit;
    std::string util =
        f.samples == 0 ? "-" : fmt::format("{:.2f}-{:.2f}", f.utilisation_min, f.utilisation_max);
    // Refused before the least squares ran: no numbers to show.
    const bool fitted = CurveForm(c) ? c.curve.fitted : f.fitted;
    const double r2 = CurveForm(c) ? c.curve.r2 : f.r2;
    const double rmse = CurveForm(c) ? c.curve.rmse_watts : f.rmse_watts;
    table.AddRow({c.node, std::to_string(f.samples), util, Covered(c),
                  std::string(setup::CalibrationFormName(c.form)),
                  Fixed(f.fitted, f.params.idle_watts, 1), Fixed(f.fitted, f.params.max_watts, 1),
                  Fixed(f.fitted, f.params.curve, 2), Fixed(fitted, r2, 3), Fixed(fitted, rmse, 1),
                  ResultText(c, suffix)});
  }
  table.Print(*ctx.out);
  *ctx.out << fmt::format(
      "\nMeasured power: {} ({}){}\n", telemetry::PowerSourceName(report.power_source),
      report.power_measures,
      report.whole_server ? "" : "; the curves model this part of the server, not wall power");
  for (const auto& c : report.nodes) {
    if (!c.power_zones.empty()) *ctx.out << fmt::format("  {}: zones {}\n", c.node, c.power_zones);
  }
}

// The curve's points, one line per node; a filled point is marked with '*'.
void PrintCurves(const Context& ctx, const setup::CalibrationReport& report) {
  Table table(
      {"NODE", "0%", "10%", "20%", "30%", "40%", "50%", "60%", "70%", "80%", "90%", "100%"});
  bool any = false;
  for (const auto& c : report.nodes) {
    if (!CurveForm(c) || !c.curve.fitted) continue;
    std::vector<std::string> row = {c.node};
    for (const predict::CurveBin& b : c.curve.bins) {
      row.push_back(fmt::format("{:.1f}{}", b.watts, b.measured ? "" : "*"));
    }
    table.AddRow(std::move(row));
    any = true;
  }
  if (!any) return;
  *ctx.out << "\nPower curves (W at each load; * = filled, not measured):\n";
  table.Print(*ctx.out);
}

// -o wide: per node and load step, the samples, their mean, the point and where it came from.
void PrintBins(const Context& ctx, const setup::CalibrationReport& report) {
  for (const auto& c : report.nodes) {
    if (!CurveForm(c) || !c.curve.fitted) continue;
    *ctx.out << fmt::format(
        "\n{}: power curve R2 {:.3f}, RMSE {:.1f} W{}\n", c.node, c.curve.r2, c.curve.rmse_watts,
        c.curve.filled_from.empty() ? "" : ", unmeasured steps filled by " + c.curve.filled_from);
    Table table({"LOAD", "SAMPLES", "MEAN W", "WATTS", "SOURCE"});
    for (const predict::CurveBin& b : c.curve.bins) {
      table.AddRow({fmt::format("{}%", b.load_percent), std::to_string(b.samples),
                    Fixed(b.samples > 0, b.mean_watts, 1), fmt::format("{:.1f}", b.watts),
                    b.measured ? "measured" : "filled"});
    }
    std::ostringstream text;
    table.Print(text);
    std::istringstream lines(text.str());
    for (std::string line; std::getline(lines, line);) *ctx.out << "  " << line << "\n";
  }
}

// telemetry.powerSource and powerQuery, overridden by --power-source and --power-query;
// --power-metric reads the gauge it names (as calibrate always did), whatever the config says.
Result<telemetry::PowerQuerySpec> PowerSpec(const CLI::App* cmd, const CalibrateFlags& flags,
                                            const config::PowerctlConfig& config) {
  const bool metric = cmd->count("--power-metric") > 0;
  const bool source = cmd->count("--power-source") > 0;
  if (metric && source && flags.power_source != "ipmi") {
    return MakeError(ErrorCode::kInvalidInput,
                     "--power-metric names a gauge in watts: use it alone or with --power-source "
                     "ipmi (--power-query takes any other expression)");
  }
  telemetry::PowerQuerySpec spec;
  std::string name = source ? flags.power_source : config.telemetry.power_source;
  if (metric) name = "ipmi";
  POWERCTL_TRY(parsed, telemetry::ParsePowerSource(
                           name, source || metric ? "--power-source" : "telemetry.powerSource"));
  spec.source = parsed;
  spec.custom_query =
      cmd->count("--power-query") > 0 ? flags.power_query : config.telemetry.power_query;
  if (metric) spec.gauge_metric = flags.power_metric;
  return spec;
}

int RunCalibrate(const Context& ctx, const CLI::App* cmd, CalibrateFlags& flags) {
  auto format = ctx.Output();
  if (!format.ok()) return Fail(ctx, format.error());
  setup::CalibrateRequest request = flags.request;
  auto form = setup::ParseCalibrationForm(flags.form);
  if (!form.ok()) return Fail(ctx, form.error());
  request.form = *form;
  request.dry_run = ParseDryRun(flags.dry_run);
  auto window = Seconds("--window", flags.window);
  if (!window.ok()) return Fail(ctx, window.error());
  auto step = Seconds("--step", flags.step);
  if (!step.ok()) return Fail(ctx, step.error());
  request.window = *window;
  request.step = *step;
  request.fit.min_samples = flags.min_samples;
  request.fit.min_bin_samples = flags.min_bin_samples;
  request.fit.min_r2 = flags.min_r2;
  request.fit.min_utilisation_range = flags.min_utilisation_range;
  auto config = ctx.LoadConfig();
  if (!config.ok()) return Fail(ctx, config.error());
  auto power = PowerSpec(cmd, flags, *config);
  if (!power.ok()) return Fail(ctx, power.error());
  request.power = *power;
  // Bad input is refused before the cluster or Prometheus is contacted.
  if (Status valid = setup::ValidateCalibrateRequest(request); !valid.ok()) {
    return Fail(ctx, valid.error());
  }
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
  if (*format == OutputFormat::kTable || *format == OutputFormat::kWide) {
    PrintSummary(ctx, *report, suffix);
    if (*format == OutputFormat::kWide) {
      PrintBins(ctx, *report);
    } else {
      PrintCurves(ctx, *report);
    }
  } else {
    nlohmann::ordered_json doc = {{"nodes", nlohmann::ordered_json::array()},
                                  {"written", report->not_written.empty()},
                                  {"powerSource", telemetry::PowerSourceName(report->power_source)},
                                  {"powerMeasures", report->power_measures},
                                  {"wholeServer", report->whole_server}};
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
      "For each node, pairs mean power with CPU utilisation (1 - idle fraction from\n"
      "node_exporter's node_cpu_seconds_total), both averaged over each --step of --window, and\n"
      "fits watts = idle + (max - idle) * utilisation^curve by least squares (curve 0.5..2.0 in\n"
      "steps of 0.05). Power comes from --power-source (default telemetry.powerSource): ipmi\n"
      "(ipmi_dcmi_power_consumption_watts), kepler (Kepler 0.10+: kepler_node_cpu_joules_total,\n"
      "zones package and dram), kepler-0.7 (0.7-0.9: kepler_node_platform_joules_total), rapl\n"
      "(node_exporter's node_rapl_package/dram_joules_total) or promql (--power-query); energy\n"
      "counters become watts with rate() over each --step. kepler and rapl measure CPU and\n"
      "memory only: the curve then models that part of the server, not wall power.\n"
      "--power-metric NAME reads the gauge NAME in watts instead, as before.\n"
      "COVERED is the utilisation spread the history covered and, with the curve form, the\n"
      "10 % load steps measured rather than filled.\n"
      "--form curve (default) also fits the measured curve: each sample goes to the nearest 10 %\n"
      "load step, a step's watts are its samples' mean, a step with fewer than --min-bin-samples\n"
      "is filled from the exponent fit (or interpolated when that fit is invalid; then an\n"
      "unmeasured 0 % or 100 % step refuses the node), and pool-adjacent-violators (weighted by\n"
      "samples) makes it non-decreasing. It writes powerctl.io/power-curve, which the model\n"
      "follows, and idle-watts, max-watts and curve from the exponent fit beside it.\n"
      "--form exponent writes idle-watts, max-watts and curve and removes power-curve.\n"
      "temperature-factor is left as it is. R2 and RMSE are those of the form written; -o wide\n"
      "shows each load step's samples, mean and source (measured or filled).\n"
      "A node with too few samples, too narrow a utilisation range or a poor fit (R2 below\n"
      "--min-r2) is refused, and then no node is changed unless --skip-unfit. Series map to\n"
      "nodes by instance host (name, InternalIP, Hostname) or a node label.\n"
      "Exit codes: 0 written (or dry run), 3 a node could not be calibrated, 1 Prometheus or the\n"
      "cluster failed, 2 bad flags.\n"
      "Examples:\n"
      "  powerctl calibrate --all --dry-run=client -o wide\n"
      "  powerctl calibrate node-a node-b --window 14d --step 10m -o json\n"
      "  powerctl calibrate -l rack=r1 --form exponent\n"
      "  powerctl calibrate --all --power-source rapl --dry-run=client");
  cmd->add_option("nodes", flags->request.nodes, "Node names")->type_name("NODE");
  cmd->add_option("-l,--selector", flags->request.selector, "Label selector for the nodes")
      ->type_name("SELECTOR");
  cmd->add_flag("--all", flags->request.all, "All nodes");
  cmd->add_option("--window", flags->window, "History to fit (default 7d)")->type_name("DURATION");
  cmd->add_option("--step", flags->step, "Resolution and averaging interval (default 5m)")
      ->type_name("DURATION");
  cmd->add_option("--form", flags->form,
                  "curve: the measured 11-point curve and the exponent form (default); exponent: "
                  "idle-watts, max-watts and curve only")
      ->type_name("curve|exponent");
  env.hints.values["calibrate --form"] = {"curve", "exponent"};
  cmd->add_option("--prometheus-url", flags->prometheus_url,
                  "Prometheus (default: telemetry.prometheusUrl)")
      ->type_name("URL");
  cmd->add_option("--power-source", flags->power_source,
                  "Measured power: ipmi, kepler, kepler-0.7, rapl or promql (default: "
                  "telemetry.powerSource)")
      ->type_name("SOURCE");
  env.hints.values["calibrate --power-source"] = {"ipmi", "kepler", "kepler-0.7", "rapl", "promql"};
  cmd->add_option("--power-query", flags->power_query,
                  "With --power-source promql: PromQL giving each node's watts (default: "
                  "telemetry.powerQuery)")
      ->type_name("PROMQL");
  cmd->add_option("--power-metric", flags->power_metric,
                  "Read this node power gauge in watts instead of the power source")
      ->type_name("METRIC");
  cmd->add_option("--min-r2", flags->min_r2, "Refuse fits with a lower R2 (default 0.8)")
      ->type_name("R2");
  cmd->add_option("--min-samples", flags->min_samples,
                  "Refuse nodes with fewer samples (default 30)")
      ->type_name("N");
  cmd->add_option("--min-bin-samples", flags->min_bin_samples,
                  "Fill a curve's load step with fewer samples from the exponent fit (default 3)")
      ->type_name("N");
  cmd->add_option("--min-utilisation-range", flags->min_utilisation_range,
                  "Refuse nodes whose utilisation spread is smaller (default 0.2)")
      ->type_name("FRACTION");
  cmd->add_flag("--skip-unfit", flags->request.skip_unfit,
                "Write the nodes that fit and leave the others alone");
  AddDryRunFlag(*cmd, flags->dry_run, env, "calibrate");
  DeclareOutput(
      *cmd, env, OutputFormat::kTable,
      {OutputFormat::kTable, OutputFormat::kWide, OutputFormat::kJson, OutputFormat::kYaml});
  cmd->callback([&env, flags, cmd] { env.exit_code = RunCalibrate(env.ctx, cmd, *flags); });
}

}  // namespace powerctl::cli
