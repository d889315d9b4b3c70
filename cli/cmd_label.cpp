// powerctl label nodes NODE...|-l SELECTOR|--all: temperature-range and model labels, the
// built-in model's annotations, and ranges derived from Prometheus history.
#include "cli/app.h"
#include "cli/dry_run.h"
#include "cli/exit_codes.h"
#include "cli/kube_context.h"
#include "core/common/duration.h"
#include "core/common/http_client.h"
#include "core/setup/label_nodes.h"
#include "core/telemetry/prometheus_client.h"

#include <fmt/format.h>

#include <memory>
#include <ostream>

namespace powerctl::cli {
namespace {

struct LabelFlags {
  setup::LabelNodesRequest request;
  std::string dry_run;
  std::string ambient, cpu1, cpu2, model_host, model_port, model_name, model_version,
      model_signature;
  std::string idle_watts, max_watts, curve, temperature_factor, power_curve;
  std::string window = "7d";
  std::string prometheus_url;
};

// "ambient 18:35 from sensor Ambient (observed 18.4..34.2 °C, 2016 samples)"
std::string Describe(const setup::DerivedRange& d) {
  return fmt::format("{} {} from sensor \"{}\" (observed {:g}..{:g} °C, {} samples)", d.role,
                     d.range, d.sensor, d.observed_min, d.observed_max, d.samples);
}

std::optional<std::string> Given(const CLI::App* cmd, const char* flag, const std::string& value) {
  if (cmd->count(flag) == 0) return std::nullopt;
  return value;
}

int RunLabelNodes(const Context& ctx, const CLI::App* cmd, LabelFlags& flags) {
  auto format = ctx.Output();
  if (!format.ok()) return Fail(ctx, format.error());
  setup::LabelNodesRequest request = flags.request;
  request.ambient = Given(cmd, "--ambient", flags.ambient);
  request.cpu1 = Given(cmd, "--cpu1", flags.cpu1);
  request.cpu2 = Given(cmd, "--cpu2", flags.cpu2);
  request.model_host = Given(cmd, "--model-host", flags.model_host);
  request.model_port = Given(cmd, "--model-port", flags.model_port);
  request.model_name = Given(cmd, "--model-name", flags.model_name);
  request.model_version = Given(cmd, "--model-version", flags.model_version);
  request.model_signature = Given(cmd, "--model-signature", flags.model_signature);
  request.idle_watts = Given(cmd, "--idle-watts", flags.idle_watts);
  request.max_watts = Given(cmd, "--max-watts", flags.max_watts);
  request.curve = Given(cmd, "--curve", flags.curve);
  request.temperature_factor = Given(cmd, "--temperature-factor", flags.temperature_factor);
  request.power_curve = Given(cmd, "--power-curve", flags.power_curve);
  request.dry_run = ParseDryRun(flags.dry_run);
  if (!request.from_prometheus &&
      (cmd->count("--window") > 0 || cmd->count("--prometheus-url") > 0)) {
    return Fail(ctx, MakeError(ErrorCode::kInvalidInput,
                               "--window and --prometheus-url need --from-prometheus"));
  }
  auto window = ParseDuration(flags.window);
  if (!window.ok()) return Fail(ctx, WithContext(window.error(), "--window"));
  request.window = std::chrono::duration_cast<std::chrono::seconds>(*window);
  // Bad input is refused before the cluster (or Prometheus) is even contacted.
  auto changes = setup::DesiredNodeChanges(request);
  if (!changes.ok()) return Fail(ctx, changes.error());

  std::unique_ptr<HttpClient> http;
  std::unique_ptr<telemetry::PrometheusClient> prometheus;
  if (request.from_prometheus) {
    auto config = ctx.LoadConfig();
    if (!config.ok()) return Fail(ctx, config.error());
    request.sensors = config->telemetry.sensors;
    std::string url =
        flags.prometheus_url.empty() ? config->telemetry.prometheus_url : flags.prometheus_url;
    http = MakeCurlHttpClient();
    // A week of samples per series takes Prometheus a while on a large cluster.
    prometheus = std::make_unique<telemetry::PrometheusClient>(
        *http, telemetry::PrometheusOptions{url, std::chrono::seconds(60), ctx.log});
  }
  auto client = ConnectToCluster(ctx);
  if (!client.ok()) return Fail(ctx, client.error());
  auto results = setup::LabelNodes(**client, request, prometheus.get());
  if (!results.ok()) return Fail(ctx, results.error());
  std::string suffix = DryRunSuffix(request.dry_run);
  for (const auto& r : *results) {
    if (!r.warning.empty()) ctx.Warn(r.warning);
    if (*format == OutputFormat::kName) {
      if (r.skipped.empty()) *ctx.out << "node/" << r.node << "\n";
      continue;
    }
    if (!r.skipped.empty()) {
      *ctx.out << "node/" << r.node << " skipped: " << r.skipped << "\n";
      continue;
    }
    *ctx.out << "node/" << r.node << (r.changed ? " labeled" : " unchanged") << suffix << "\n";
    for (const auto& d : r.derived) *ctx.out << "  " << Describe(d) << "\n";
  }
  return kExitOk;
}

}  // namespace

void RegisterLabel(CLI::App& app, CommandEnv& env) {
  CLI::App* label = app.add_subcommand("label", "Set powerctl's labels on cluster objects");
  label->require_subcommand(1);
  auto flags = std::make_shared<LabelFlags>();
  CLI::App* cmd = label->add_subcommand("nodes", "Set temperature-range and model labels on nodes");
  cmd->footer(
      "Writes the labels the MinimizePower plugin reads: ambient/min|max, cpu1/min|max, "
      "cpu2/min|max\n"
      "(degrees Celsius) and tensorflow/host|port|name|version|signature. Everything is validated "
      "and\n"
      "every node checked before any node is changed.\n"
      "Examples:\n"
      "  powerctl label nodes node-a node-b --ambient 18:35 --cpu1 30:90 --cpu2 30:90\n"
      "  powerctl label nodes -l node-role.kubernetes.io/worker --model-host tfs.power.svc \\\n"
      "      --model-port 8500 --model-name power --overwrite\n"
      "  powerctl label nodes --all --idle-watts 110 --max-watts 380 --curve 0.9\n"
      "  powerctl label nodes -l model=r7515 --power-curve 100,144,159,172,184,196,207,217,227,"
      "236,246\n"
      "  powerctl label nodes --all --from-prometheus --window 7d\n"
      "--idle-watts, --max-watts, --curve and --temperature-factor set the built-in model's\n"
      "annotations powerctl.io/idle-watts|max-watts|curve|temperature-factor (plain decimals);\n"
      "max-watts must stay above idle-watts together with the node's existing annotations.\n"
      "--power-curve sets powerctl.io/power-curve instead: the node's measured watts at active\n"
      "idle and at each 10% load step (11 numbers, as SPECpower_ssj2008 reports them), which\n"
      "the model follows in place of idle, max and curve.\n"
      "--from-prometheus sets each node's ambient/cpu1/cpu2 ranges to the whole degrees around\n"
      "the minimum and maximum of ipmi_temperature_celsius over --window (sensor names from\n"
      "powerctl.yaml telemetry.sensors, Prometheus from telemetry.prometheusUrl). A node without\n"
      "history fails the command unless --skip-missing.");
  cmd->add_option("nodes", flags->request.nodes, "Node names")->type_name("NODE");
  cmd->add_option("-l,--selector", flags->request.selector, "Label selector for the nodes")
      ->type_name("SELECTOR");
  cmd->add_flag("--all", flags->request.all, "All nodes");
  cmd->add_option("--ambient", flags->ambient, "Ambient temperature range MIN:MAX")
      ->type_name("MIN:MAX");
  cmd->add_option("--cpu1", flags->cpu1, "CPU1 temperature range MIN:MAX")->type_name("MIN:MAX");
  cmd->add_option("--cpu2", flags->cpu2, "CPU2 temperature range MIN:MAX")->type_name("MIN:MAX");
  cmd->add_option("--model-host", flags->model_host, "TensorFlow Serving host")->type_name("HOST");
  cmd->add_option("--model-port", flags->model_port, "TensorFlow Serving gRPC port")
      ->type_name("PORT");
  cmd->add_option("--model-name", flags->model_name, "Model name")->type_name("NAME");
  cmd->add_option("--model-version", flags->model_version, "Model version")->type_name("VERSION");
  cmd->add_option("--model-signature", flags->model_signature, "Model signature")
      ->type_name("NAME");
  cmd->add_option("--idle-watts", flags->idle_watts, "Built-in model: watts at 0% CPU")
      ->type_name("W");
  cmd->add_option("--max-watts", flags->max_watts, "Built-in model: watts at 100% CPU")
      ->type_name("W");
  cmd->add_option("--curve", flags->curve, "Built-in model: load-curve exponent (0..4]")
      ->type_name("C");
  cmd->add_option("--power-curve", flags->power_curve,
                  "Built-in model: measured watts at idle, 10%, ..., 100% load (11 numbers)")
      ->type_name("W0,...,W100");
  cmd->add_option("--temperature-factor", flags->temperature_factor,
                  "Built-in model: extra dynamic power per unit of temperature [0..1]")
      ->type_name("F");
  cmd->add_flag("--from-prometheus", flags->request.from_prometheus,
                "Derive --ambient/--cpu1/--cpu2 from each node's temperature history");
  cmd->add_option("--window", flags->window, "History to derive ranges from (default 7d)")
      ->type_name("DURATION");
  cmd->add_option("--prometheus-url", flags->prometheus_url,
                  "Prometheus (default: telemetry.prometheusUrl)")
      ->type_name("URL");
  cmd->add_flag("--skip-missing", flags->request.skip_missing,
                "With --from-prometheus: leave nodes without history alone instead of failing");
  cmd->add_flag("--overwrite", flags->request.overwrite,
                "Change labels that already have another value");
  AddDryRunFlag(*cmd, flags->dry_run, env, "label nodes");
  DeclareOutput(*cmd, env, OutputFormat::kTable, {OutputFormat::kTable, OutputFormat::kName});
  cmd->callback([&env, flags, cmd] { env.exit_code = RunLabelNodes(env.ctx, cmd, *flags); });
}

}  // namespace powerctl::cli
