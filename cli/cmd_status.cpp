// powerctl status [--wait [--timeout D]]: versions, scheduler and extender readiness, the model
// server and telemetry freshness on one screen.
#include "cli/app.h"
#include "cli/component_targets.h"
#include "cli/exit_codes.h"
#include "core/common/duration.h"
#include "core/common/yaml.h"
#include "core/setup/status.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <memory>
#include <ostream>

namespace powerctl::cli {
namespace {

struct StatusFlags {
  ComponentTargetFlags targets;
  bool wait = false;
  std::string timeout = "5m";
};

std::string FormatAge(const std::optional<double>& seconds) {
  if (!seconds) return "no snapshot yet";
  return fmt::format("{:.0f}s old", *seconds);
}

nlohmann::ordered_json ToJson(const setup::StatusReport& r) {
  using ojson = nlohmann::ordered_json;
  ojson components = ojson::array();
  for (const auto& c : r.components) {
    components.push_back({{"name", c.name},
                          {"ready", c.ready},
                          {"checked", c.checked},
                          {"where", c.where},
                          {"detail", c.detail},
                          {"fix", c.fix}});
  }
  ojson sources = ojson::array();
  for (const auto& t : r.telemetry) {
    sources.push_back({{"source", t.source},
                       {"ageSeconds", t.age_seconds ? ojson(*t.age_seconds) : ojson(nullptr)},
                       {"failing", t.failing}});
  }
  return {{"ready", r.AllReady()},
          {"mode", r.mode},
          {"clientVersion", r.client_version},
          {"installedVersion", r.installed_version},
          {"installedImage", r.installed_image},
          {"api", {{"reachable", r.api_reachable}, {"message", r.api}}},
          {"kubernetesLine", {{"ok", r.kubernetes_line_ok}, {"message", r.kubernetes_line}}},
          {"components", components},
          {"telemetry", {{"known", r.telemetry_known}, {"sources", sources}}},
          {"degraded", r.degraded},
          {"consolidation",
           r.consolidation.known
               ? ojson{{"drained", r.consolidation.drained},
                       {"draining", r.consolidation.draining},
                       {"expectedWattsSaved", std::round(r.consolidation.expected_watts_saved)},
                       {"drifted", r.consolidation.drifted}}
               : ojson{{"error", r.consolidation.error}}}};
}

std::string Colour(const Context& ctx, bool ok, const std::string& text) {
  if (!ctx.UseColor() || !ctx.stdout_is_tty) return text;
  return fmt::format("\033[{}m{}\033[0m", ok ? "32" : "31", text);
}

void PrintStatusTable(const Context& ctx, const setup::StatusReport& r) {
  std::ostream& out = *ctx.out;
  std::string installed = "unknown";
  if (!r.installed_version.empty() && !r.installed_image.empty()) {
    installed = fmt::format("powerctl {} ({})", r.installed_version, r.installed_image);
  } else if (!r.installed_version.empty()) {
    installed = fmt::format("powerctl {} (the running extender's build)", r.installed_version);
  } else if (r.mode == "out-of-cluster") {
    installed = "unknown (the extender is not reachable)";
  }
  out << fmt::format("Mode:        {}\n", r.mode);
  out << fmt::format("Client:      powerctl {}\n", r.client_version);
  out << fmt::format("Installed:   {}\n", installed);
  out << fmt::format("Kubernetes:  {}\n",
                     r.api_reachable ? r.api : Colour(ctx, false, "unreachable: ") + r.api);
  if (!r.kubernetes_line.empty())
    out << fmt::format("Line:        {}\n", Colour(ctx, r.kubernetes_line_ok, r.kubernetes_line));
  out << "\n";
  std::size_t where_width = 5;
  for (const auto& c : r.components) where_width = std::max(where_width, c.where.size());
  out << fmt::format("{:<10} {:<9} {:<{}}  {}\n", "COMPONENT", "READY", "WHERE", where_width,
                     "DETAIL");
  for (const auto& c : r.components) {
    std::string ready = !c.checked ? "-" : c.ready ? "yes" : "no";
    std::size_t pad = 9 + Colour(ctx, c.ready, ready).size() - ready.size();
    out << fmt::format("{:<10} {:<{}} {:<{}}  {}\n", c.name, Colour(ctx, c.ready, ready), pad,
                       c.where, where_width, c.detail);
    if (!c.ready && !c.fix.empty())
      out << fmt::format("{:<10} {:<9} {:<{}}  fix: {}\n", "", "", "", where_width, c.fix);
  }
  out << "\nTelemetry:   ";
  if (!r.telemetry_known) {
    out << (r.mode == "out-of-cluster"
                ? "unknown (the extender is not ready)\n"
                : "see `powerctl doctor` (telemetry) and the extender's /readyz\n");
  } else if (r.telemetry.empty()) {
    out << "the extender reports no telemetry sources\n";
  } else {
    bool first = true;
    for (const auto& t : r.telemetry) {
      out << (first ? "" : "             ")
          << fmt::format("{:<12} {}{}\n", t.source, FormatAge(t.age_seconds),
                         t.failing ? ", " + Colour(ctx, false, "last refresh failed") : "");
      first = false;
    }
  }
  for (const auto& d : r.degraded) out << fmt::format("Degraded:    {}\n", d);
  const setup::ConsolidationStatus& c = r.consolidation;
  if (!r.api_reachable) return;
  if (!c.known) {
    out << fmt::format("Drained:     unknown ({})\n", c.error);
  } else if (c.drained + c.draining == 0) {
    out << "Drained:     no nodes (powerctl consolidate plan shows what could be)\n";
  } else {
    out << fmt::format(
        "Drained:     {} node(s), about {:.0f} W saved once off{}{}\n", c.drained,
        c.expected_watts_saved, c.draining > 0 ? fmt::format(", {} draining", c.draining) : "",
        c.drifted.empty() ? ""
                          : ", " + Colour(ctx, false, fmt::format("{} drifted", c.drifted.size())) +
                                " (powerctl doctor)");
  }
}

int RunStatus(const Context& ctx, const StatusFlags& flags) {
  auto format = ctx.Output();
  if (!format.ok()) return Fail(ctx, format.error());
  auto timeout = ParseDuration(flags.timeout);
  if (!timeout.ok()) return Fail(ctx, WithContext(timeout.error(), "--timeout"));
  auto targets = MakeComponentTargets(ctx, flags.targets);
  if (!targets.ok()) return Fail(ctx, targets.error());
  const setup::DoctorInput& input = (*targets)->input;

  setup::StatusReport report;
  Status waited = OkStatus();
  if (flags.wait) {
    std::string last_line;
    waited = setup::WaitForStatus(input, *timeout, Clock{}, report,
                                  [&ctx, &last_line](const setup::StatusReport& r) {
                                    if (r.AllReady()) return;
                                    std::string line = "waiting for: " + r.NotReady();
                                    if (line != last_line) ctx.Note(line);
                                    last_line = line;
                                  });
  } else {
    report = setup::CollectStatus(input);
  }
  if (*format == OutputFormat::kTable) {
    PrintStatusTable(ctx, report);
  } else {
    nlohmann::ordered_json doc = ToJson(report);
    *ctx.out << (*format == OutputFormat::kJson ? doc.dump(2) + "\n" : EmitYaml(doc));
  }
  if (!waited.ok()) {
    ctx.PrintError(waited.error().message);
    return kExitCheckFailed;
  }
  return report.AllReady() ? kExitOk : kExitCheckFailed;
}

}  // namespace

void RegisterStatus(CLI::App& app, CommandEnv& env) {
  auto flags = std::make_shared<StatusFlags>();
  CLI::App* cmd = app.add_subcommand(
      "status", "Show versions, readiness and telemetry freshness (exit 3 when not all ready)");
  cmd->footer(
      "The scheduler, the extender and the model server are judged as `doctor` judges them, in\n"
      "the cluster or, with --scheduler-config or --extender-url, as processes out of it.\n"
      "Installed is the extender Deployment's image tag, or a process extender's build (its\n"
      "powerctl_build_info metric); telemetry ages come from a process\n"
      "extender's /metrics. --wait looks every second until all are ready.\n"
      "Exit codes: 0 all ready; 3 something is not ready (with --wait: still not ready when\n"
      "--timeout passed); 2 bad flags or powerctl.yaml.\n"
      "Examples:\n"
      "  powerctl status\n"
      "  powerctl status --wait --timeout 2m\n"
      "  powerctl status --scheduler-config out/scheduler-config.yaml -o json");
  AddComponentTargetFlags(*cmd, flags->targets);
  cmd->add_flag("--wait", flags->wait, "Wait until every component is ready");
  cmd->add_option("--timeout", flags->timeout, "How long --wait waits (default 5m)")
      ->type_name("DURATION");
  DeclareOutput(*cmd, env, OutputFormat::kTable,
                {OutputFormat::kTable, OutputFormat::kJson, OutputFormat::kYaml});
  cmd->callback([&env, flags] { env.exit_code = RunStatus(env.ctx, *flags); });
}

}  // namespace powerctl::cli
