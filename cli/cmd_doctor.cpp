// powerctl doctor: preflight and health checks, PASS/WARN/FAIL with a fix for each problem.
#include "cli/app.h"
#include "cli/component_targets.h"
#include "cli/exit_codes.h"
#include "core/common/yaml.h"
#include "core/setup/doctor.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <ostream>

namespace powerctl::cli {
namespace {

std::string Colour(const Context& ctx, setup::CheckStatus status) {
  std::string name(setup::CheckStatusName(status));
  if (!ctx.UseColor() || !ctx.stdout_is_tty) return name;
  const char* code = status == setup::CheckStatus::kPass   ? "32"
                     : status == setup::CheckStatus::kWarn ? "33"
                     : status == setup::CheckStatus::kFail ? "31"
                                                           : "90";
  return fmt::format("\033[{}m{}\033[0m", code, name);
}

int RunDoctor(const Context& ctx, const ComponentTargetFlags& flags) {
  auto format = ctx.Output();
  if (!format.ok()) return Fail(ctx, format.error());
  auto targets = MakeComponentTargets(ctx, flags);
  if (!targets.ok()) return Fail(ctx, targets.error());
  const setup::DoctorInput& input = (*targets)->input;
  setup::DoctorReport report = setup::RunDoctor(input);

  if (*format != OutputFormat::kTable) {
    nlohmann::ordered_json doc = {{"checks", nlohmann::ordered_json::array()},
                                  {"failed", report.failed()}};
    for (const auto& c : report.checks) {
      doc["checks"].push_back({{"id", c.id},
                               {"status", std::string(setup::CheckStatusName(c.status))},
                               {"message", c.message},
                               {"fix", c.fix}});
    }
    *ctx.out << (*format == OutputFormat::kJson ? doc.dump(2) + "\n" : EmitYaml(doc));
  } else {
    std::size_t width = 5;
    for (const auto& c : report.checks) width = std::max(width, c.id.size());
    *ctx.out << fmt::format("{:<{}}  {:<6}  {}\n", "CHECK", width, "STATUS", "MESSAGE");
    for (const auto& c : report.checks) {
      std::string status = Colour(ctx, c.status);
      std::size_t pad = 6 + status.size() - setup::CheckStatusName(c.status).size();
      *ctx.out << fmt::format("{:<{}}  {:<{}}  {}\n", c.id, width, status, pad, c.message);
      if (!c.fix.empty() &&
          (c.status == setup::CheckStatus::kFail || c.status == setup::CheckStatus::kWarn)) {
        *ctx.out << fmt::format("{:<{}}  {:<6}  fix: {}\n", "", width, "", c.fix);
      }
    }
  }
  return report.failed() ? kExitCheckFailed : kExitOk;
}

}  // namespace

void RegisterDoctor(CLI::App& app, CommandEnv& env) {
  auto flags = std::make_shared<ComponentTargetFlags>();
  CLI::App* cmd =
      app.add_subcommand("doctor", "Check the cluster and powerctl's setup (exit 3 on failures)");
  cmd->footer(
      "Checks, in order: api-reachable, permissions, scheduler-ready, scheduler-lease, "
      "extender-ready,\n"
      "model-ready, node-labels, telemetry, lb-agent (only when the lb-agent DaemonSet exists),\n"
      "extender-tls, model-accuracy (with telemetry.modelAccuracy), drained-nodes (nodes\n"
      "consolidate drained).\n"
      "Each failure comes with a fix line.\n"
      "Out of the cluster (kube-scheduler and schedule-server run as processes), "
      "--scheduler-config\n"
      "and --extender-url say where: the extender is checked at its /healthz and /readyz,\n"
      "kube-scheduler at the /healthz its configuration binds (1.20 to 1.22), else by its Lease.\n"
      "Exit codes: 0 no failures (warnings allowed), 3 a check failed.\n"
      "Examples:\n"
      "  powerctl doctor\n"
      "  powerctl doctor --scheduler-config out/scheduler-config.yaml\n"
      "  powerctl doctor --extender-url http://127.0.0.1:8080 -o json");
  DeclareOutput(*cmd, env, OutputFormat::kTable,
                {OutputFormat::kTable, OutputFormat::kJson, OutputFormat::kYaml});
  AddComponentTargetFlags(*cmd, *flags);
  cmd->callback([&env, flags] { env.exit_code = RunDoctor(env.ctx, *flags); });
}

}  // namespace powerctl::cli
