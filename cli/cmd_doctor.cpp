// powerctl doctor: preflight and health checks, PASS/WARN/FAIL with a fix for each problem.
#include "cli/app.h"
#include "cli/exit_codes.h"
#include "cli/kube_context.h"
#include "core/common/yaml.h"
#include "core/kube/connection.h"
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

int RunDoctor(const Context& ctx) {
  auto format = ctx.Output();
  if (!format.ok()) return Fail(ctx, format.error());
  auto config = ctx.LoadConfig();
  if (!config.ok()) return Fail(ctx, config.error());
  setup::DoctorInput input;
  input.config = *config;
  auto client = ConnectToCluster(ctx);
  if (client.ok()) {
    input.client = client->get();
    kube::ConnectionRequest request{ctx.globals.kubeconfig, ctx.globals.context, ctx.environment};
    auto connection = kube::ResolveConnection(request);
    if (connection.ok()) input.server = connection->server;
  } else {
    input.connection_error = client.error().message;
  }
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
  CLI::App* cmd =
      app.add_subcommand("doctor", "Check the cluster and powerctl's setup (exit 3 on failures)");
  cmd->footer(
      "Checks, in order: api-reachable, permissions, scheduler-ready, scheduler-lease, "
      "extender-ready,\n"
      "model-ready, node-labels, telemetry, lb-agent (only when the lb-agent DaemonSet exists).\n"
      "Each failure comes with a fix line.\n"
      "Exit codes: 0 no failures (warnings allowed), 3 a check failed.");
  DeclareOutput(*cmd, env, OutputFormat::kTable,
                {OutputFormat::kTable, OutputFormat::kJson, OutputFormat::kYaml});
  cmd->callback([&env] { env.exit_code = RunDoctor(env.ctx); });
}

}  // namespace powerctl::cli
