// powerctl predict [NODE...|-l SELECTOR] [--cpu Q] [--source auto|local|extender]:
// per node CPU now, temperatures, watts now and after adding Q, and who answered.
#include "cli/app.h"
#include "cli/exit_codes.h"
#include "cli/kube_context.h"
#include "cli/table.h"
#include "core/common/http_client.h"
#include "core/common/yaml.h"
#include "core/predict/builtin_model.h"
#include "core/predict/node_power_json.h"
#include "core/report/power_report.h"

#include <fmt/format.h>

#include <ostream>

namespace powerctl::cli {
namespace {

using predict::NodePower;

struct PredictFlags {
  report::PredictRequest request;
  std::string source = "auto";
};

std::string Fixed(std::optional<double> value, int digits = 1) {
  return value ? fmt::format("{:.{}f}", *value, digits) : "-";
}

std::string Age(const std::optional<std::chrono::milliseconds>& age) {
  if (!age) return "-";
  auto s = std::chrono::duration_cast<std::chrono::seconds>(*age).count();
  if (s < 120) return fmt::format("{}s", s);
  if (s < 7200) return fmt::format("{}m", s / 60);
  return fmt::format("{}h", s / 3600);
}

// What the prediction counts as in use: measured plus the requests of pods not yet measured.
std::string Cpu(const NodePower& p) {
  const std::optional<double> used = p.cpu_cores_used();
  if (!used) return "-";
  std::string text = fmt::format("{:.2f}", *used);
  if (p.reading.cpu_capacity) text += fmt::format("/{:g}", *p.reading.cpu_capacity);
  if (p.cpu_fraction_now) text += fmt::format(" ({:.0f}%)", *p.cpu_fraction_now * 100);
  return text;
}

// -o wide: the two parts of CPU.
std::string Measured(const NodePower& p) {
  return Fixed(p.reading.cpu_cores_used.value, 2);
}
std::string Unmeasured(const NodePower& p) {
  if (!p.reading.cpu_cores_used.value) return "-";
  if (p.unmeasured.pods == 0) return "0";
  return fmt::format("{:.2f} ({} pod{})", p.unmeasured.cores, p.unmeasured.pods,
                     p.unmeasured.pods == 1 ? "" : "s");
}

std::string Temperature(const predict::ModelTemperature& t, bool wide) {
  if (!t.reading.value) return "-";
  std::string text = fmt::format("{:.1f}", *t.reading.value);
  if (wide) text += t.normalized ? fmt::format(" ({:.2f})", *t.normalized) : " (-)";
  return text;
}

std::string Model(const predict::ModelEndpoint& m) {
  if (m.backend == "builtin" || m.backend.empty()) return m.backend.empty() ? "-" : "builtin";
  return fmt::format("{} {}:{}/{}{}", m.backend, m.host, m.port, m.name,
                     m.version.empty() ? "" : "@" + m.version);
}

bool Builtin(const NodePower& p) {
  return p.model.backend == "builtin" || p.model.backend.empty();
}

// Which model the watts come from: the built-in model's form (the node's measured curve, or
// the idle/max exponent formula), or the model server's model name.
std::string ModelForm(const NodePower& p) {
  if (!Builtin(p)) return p.model.name.empty() ? p.model.backend : p.model.name;
  if (!p.builtin) return Model(p.model);
  return p.builtin->points != nullptr ? "curve" : "exponent";
}

// -o wide: the numbers behind the form, or the model server's endpoint.
std::string ModelDetail(const NodePower& p) {
  if (!Builtin(p) || !p.builtin) return Model(p.model);
  const predict::BuiltinParams& b = *p.builtin;
  if (b.points != nullptr) return "curve " + predict::FormatPowerCurve(*b.points) + " W";
  return fmt::format("exponent: idle {:g} W, max {:g} W, exponent {:g}", b.idle_watts, b.max_watts,
                     b.curve);
}

// -o wide: the node's measured power from telemetry.powerSource, "-" when there is none.
std::string MeasuredWatts(const report::PowerReport& report, const std::string& node) {
  if (!report.measured_power) return "-";
  auto it = report.measured_power->find(node);
  if (it == report.measured_power->end() || !it->second.watts) return "-";
  return fmt::format("{:.1f}", *it->second.watts);
}

// -o wide with telemetry.gpuPowerSource: the node's GPU watts and devices, "-" without.
std::string GpuWatts(const report::PowerReport& report, const std::string& node) {
  auto it = report.gpu_power->find(node);
  if (it == report.gpu_power->end() || !it->second.watts) return "-";
  return fmt::format("{:.1f} ({} GPU{})", *it->second.watts, it->second.devices,
                     it->second.devices == 1 ? "" : "s");
}

void PrintPredictionTable(const Context& ctx, const report::PowerReport& report, bool wide) {
  *ctx.out << "Answered by: " << report.answered_by << "\n";
  std::string after = fmt::format("+{:g} CPU", report.cpu_added);
  std::vector<std::string> headers = {"NODE", "CPU"};
  if (wide) headers.insert(headers.end(), {"MEASURED", "NOT YET MEASURED"});
  headers.insert(headers.end(), {"AMBIENT°C", "CPU1°C", "CPU2°C", "WATTS"});
  if (wide) headers.push_back("MEASURED W");
  const bool gpu = wide && report.gpu_power.has_value();
  if (gpu) headers.push_back("GPU W");
  headers.insert(headers.end(), {after, "DELTA", "FILL W/CORE", "MODEL", "AGE"});
  if (wide) headers.push_back("NOTES");
  Table table(headers);
  bool unmeasured = false;
  for (const NodePower& p : report.nodes) {
    unmeasured = unmeasured || p.unmeasured.pods > 0;
    std::vector<std::string> row = {p.node, Cpu(p)};
    if (wide) row.insert(row.end(), {Measured(p), Unmeasured(p)});
    row.insert(row.end(), {Temperature(p.ambient, wide), Temperature(p.cpu1, wide),
                           Temperature(p.cpu2, wide), Fixed(p.watts_now)});
    if (wide) row.push_back(MeasuredWatts(report, p.node));
    if (gpu) row.push_back(GpuWatts(report, p.node));
    row.insert(row.end(),
               {Fixed(p.watts_after), p.delta() ? fmt::format("{:+.1f}", *p.delta()) : "-",
                Fixed(p.fill_watts_per_core, 2), wide ? ModelDetail(p) : ModelForm(p),
                Age(p.telemetry_age)});
    if (wide) {
      std::string notes;
      for (const auto& n : p.notes) notes += (notes.empty() ? "" : "; ") + n;
      row.push_back(notes.empty() ? "-" : notes);
    }
    table.AddRow(std::move(row));
  }
  table.Print(*ctx.out);
  if (wide && report.measured_power) {
    *ctx.out << "MEASURED W: " << report.measured_source
             << " power from Prometheus (telemetry.powerSource, over telemetry.powerRateWindow)\n";
  }
  if (gpu) {
    *ctx.out << "GPU W: " << report.gpu_source
             << " GPU power from Prometheus (telemetry.gpuPowerSource), the node's devices "
                "summed\n";
  }
  if (unmeasured && !wide) {
    *ctx.out << "CPU counts the requests of pods bound but not yet in the usage metrics, as the "
                "scores do (-o wide shows both parts).\n";
  }
  bool header = false;
  for (const NodePower& p : report.nodes) {
    if (p.error.empty()) continue;
    if (!header) *ctx.out << "\nNot predicted:\n";
    header = true;
    *ctx.out << "  " << p.node << ": " << p.error << "\n";
  }
}

int RunPredict(const Context& ctx, PredictFlags& flags) {
  auto format = ctx.Output();
  if (!format.ok()) return Fail(ctx, format.error());
  auto source = report::ParsePredictSource(flags.source);
  if (!source.ok()) return Fail(ctx, source.error());
  report::PredictRequest request = flags.request;
  request.source = *source;
  request.measure_power = *format == OutputFormat::kWide;
  auto config = ctx.LoadConfig();
  if (!config.ok()) return Fail(ctx, config.error());
  auto client = ConnectToCluster(ctx);
  if (!client.ok()) return Fail(ctx, client.error());
  std::unique_ptr<HttpClient> http = MakeCurlHttpClient();
  report::PredictDependencies deps;
  deps.kube = client->get();
  deps.http = http.get();
  deps.log = ctx.log;
  auto report = report::ReportPower(request, *config, deps);
  if (!report.ok()) return Fail(ctx, report.error());
  for (const std::string& warning : report->warnings) ctx.Warn(warning);

  if (*format == OutputFormat::kJson || *format == OutputFormat::kYaml) {
    nlohmann::json doc = predict::PredictionDocument(report->nodes, report->cpu_added, report->now);
    doc["answeredBy"] = {{"extender", report->from_extender}, {"description", report->answered_by}};
    *ctx.out << (*format == OutputFormat::kJson ? doc.dump(2) + "\n" : EmitYaml(doc));
  } else {
    PrintPredictionTable(ctx, *report, *format == OutputFormat::kWide);
  }
  for (const NodePower& p : report->nodes) {
    if (!p.error.empty()) return kExitCheckFailed;
  }
  return kExitOk;
}

}  // namespace

void RegisterPredict(CLI::App& app, CommandEnv& env) {
  auto flags = std::make_shared<PredictFlags>();
  CLI::App* cmd =
      app.add_subcommand("predict", "Show each node's CPU, temperatures and predicted watts");
  cmd->footer(
      "Per node: CPU in use as the scores count it (measured, plus the requests of pods bound\n"
      "but not yet in the usage metrics; -o wide shows both parts), temperatures (raw; -o wide\n"
      "adds the values normalised with the node's ambient|cpu1|cpu2/min|max labels), predicted\n"
      "watts now and after adding --cpu,\n"
      "the difference (what scoring.objective=marginal ranks by), the fill cost (FILL W/CORE:\n"
      "the cheapest average watts per core of raising the node's load by --cpu or more, what\n"
      "scoring.objective=fill ranks by), the node's model (curve: its measured power-curve\n"
      "annotation; exponent: idle-watts, max-watts and curve; or the model server's model;\n"
      "-o wide shows the numbers) and the age of the oldest telemetry behind it.\n"
      "-o wide also shows MEASURED W, the node's power now from telemetry.powerSource in\n"
      "Prometheus (mean over telemetry.powerRateWindow; a warning when Prometheus fails).\n"
      "--source auto (default) asks the running extender through the API server's service proxy "
      "and\n"
      "computes locally from powerctl.yaml's telemetry and predictor settings when it cannot "
      "answer;\n"
      "the first line says which one answered. Exit 3 when some node could not be predicted.\n"
      "Examples:\n"
      "  powerctl predict\n"
      "  powerctl predict node-a node-b --cpu 500m -o wide\n"
      "  powerctl predict -l node-role.kubernetes.io/worker --source local -o json");
  cmd->add_option("nodes", flags->request.nodes, "Node names (default: all nodes)")
      ->type_name("NODE");
  cmd->add_option("-l,--selector", flags->request.selector, "Label selector for the nodes")
      ->type_name("SELECTOR");
  cmd->add_option("--cpu", flags->request.cpu, "CPU to add for the 'after' prediction (default 1)")
      ->type_name("QUANTITY");
  cmd->add_option("--source", flags->source, "Who computes: auto, local or extender (default auto)")
      ->type_name("SOURCE")
      ->check(Choices(env, "predict --source", {"auto", "local", "extender"}));
  DeclareOutput(
      *cmd, env, OutputFormat::kTable,
      {OutputFormat::kTable, OutputFormat::kWide, OutputFormat::kJson, OutputFormat::kYaml});
  cmd->callback([&env, flags] { env.exit_code = RunPredict(env.ctx, *flags); });
}

}  // namespace powerctl::cli
