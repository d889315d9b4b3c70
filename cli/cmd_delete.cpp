// powerctl delete [COMPONENT...]: removes what powerctl applied, found by its labels.
#include "cli/app.h"
#include "cli/dry_run.h"
#include "cli/exit_codes.h"
#include "cli/kube_context.h"
#include "core/common/duration.h"
#include "core/manifests/components.h"
#include "core/setup/delete.h"

#include <ostream>

namespace powerctl::cli {
namespace {

struct DeleteFlags {
  std::vector<std::string> components;
  std::string dry_run;
  bool include_crds = false;
  bool wait = false;
  std::string timeout = "5m";
};

int RunDelete(const Context& ctx, const DeleteFlags& flags) {
  auto format = ctx.Output();
  if (!format.ok()) return Fail(ctx, format.error());
  auto config = ctx.LoadConfig();
  if (!config.ok()) return Fail(ctx, config.error());
  auto timeout = ParseDuration(flags.timeout);
  if (!timeout.ok()) return Fail(ctx, WithContext(timeout.error(), "--timeout"));
  setup::DeleteRequest request;
  request.config = *config;
  request.components = flags.components;
  request.dry_run = ParseDryRun(flags.dry_run);
  request.include_crds = flags.include_crds;
  request.wait = flags.wait;
  request.timeout = *timeout;
  // A mistyped component is a usage error, told before the cluster is asked anything.
  if (auto known = manifests::ResolveComponents(request.components, request.config); !known.ok())
    return Fail(ctx, known.error());
  auto client = ConnectToCluster(ctx);
  if (!client.ok()) return Fail(ctx, client.error());
  std::string suffix = DryRunSuffix(request.dry_run);
  auto report = setup::Delete(**client, request, [&](const setup::DeletedObject& o) {
    if (*format == OutputFormat::kName) {
      if (!o.kept) *ctx.out << o.name << "\n";
    } else if (o.kept) {
      *ctx.out << o.name
               << " kept (--include-crds deletes it and every TASPolicy in the cluster)\n";
    } else {
      *ctx.out << o.name << " deleted" << suffix << "\n";
    }
    ctx.out->flush();
  });
  if (!report.ok()) return Fail(ctx, report.error());
  bool deleted_any = false;
  for (const auto& o : report->objects) deleted_any = deleted_any || !o.kept;
  if (!deleted_any) {
    ctx.Note("nothing to delete: no objects of instance " + config->namespace_ +
             " labelled app.kubernetes.io/managed-by=powerctl");
  }
  return kExitOk;
}

}  // namespace

void RegisterDelete(CLI::App& app, CommandEnv& env) {
  auto flags = std::make_shared<DeleteFlags>();
  CLI::App* cmd =
      app.add_subcommand("delete", "Remove what powerctl applied (found by its labels)");
  cmd->footer(
      "Deletes objects labelled app.kubernetes.io/managed-by=powerctl of the given components, in\n"
      "reverse dependency order. The TASPolicy CRD stays unless --include-crds. `all` (the\n"
      "default) also deletes the opt-in lb and consolidate, which `apply all` leaves out.\n"
      "Examples:\n"
      "  powerctl delete --wait\n"
      "  powerctl delete lb\n"
      "  powerctl delete scheduler extender --dry-run=server");
  cmd->add_option("components", flags->components, "Components to delete (default all)")
      ->type_name("COMPONENT");
  AddDryRunFlag(*cmd, flags->dry_run, env, "delete");
  cmd->add_flag("--include-crds", flags->include_crds,
                "Also delete the TASPolicy CRD (and so every TASPolicy)");
  cmd->add_flag("--wait", flags->wait, "Wait until the objects are gone");
  cmd->add_option("--timeout", flags->timeout, "How long --wait waits (default 5m)")
      ->type_name("DURATION");
  env.hints.values["delete"] = env.hints.values["generate"];
  DeclareOutput(*cmd, env, OutputFormat::kTable, {OutputFormat::kTable, OutputFormat::kName});
  cmd->callback([&env, flags] { env.exit_code = RunDelete(env.ctx, *flags); });
}

}  // namespace powerctl::cli
