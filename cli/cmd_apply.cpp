// powerctl apply [COMPONENT...]: server-side apply of the generated manifests.
#include "cli/app.h"
#include "cli/dry_run.h"
#include "cli/exit_codes.h"
#include "cli/kube_context.h"
#include "core/common/duration.h"
#include "core/common/kube_version.h"
#include "core/common/yaml.h"
#include "core/manifests/components.h"
#include "core/setup/apply.h"

#include <fmt/format.h>

#include <ostream>

namespace powerctl::cli {
namespace {

struct ApplyFlags {
  std::vector<std::string> components;
  std::string kube_version;
  std::string templates_dir;
  std::string cert_dir;
  std::string dry_run;
  bool force_conflicts = false;
  bool rotate_certs = false;
  bool wait = false;
  std::string timeout = "5m";
};

Result<setup::ApplyRequest> BuildRequest(const Context& ctx, const ApplyFlags& flags) {
  POWERCTL_TRY(config, ctx.LoadConfig());
  setup::ApplyRequest request;
  request.config = std::move(config);
  if (!flags.kube_version.empty()) {
    auto version = KubeVersion::ParseRelease(flags.kube_version);
    if (!version.ok()) return WithContext(version.error(), "--kube-version");
    request.kube_version = *version;
  }
  request.components = flags.components;
  if (!flags.templates_dir.empty()) request.templates_dir = flags.templates_dir;
  if (!flags.cert_dir.empty()) request.cert_dir = flags.cert_dir;
  request.dry_run = ParseDryRun(flags.dry_run);
  request.force_conflicts = flags.force_conflicts;
  request.rotate_certs = flags.rotate_certs;
  request.wait = flags.wait;
  auto timeout = ParseDuration(flags.timeout);
  if (!timeout.ok()) return WithContext(timeout.error(), "--timeout");
  request.timeout = *timeout;
  return request;
}

// A live progress line on a terminal, plain lines (only when something changes) otherwise.
class RolloutPrinter {
 public:
  explicit RolloutPrinter(const Context& ctx) : ctx_(ctx) {}
  ~RolloutPrinter() {
    if (ctx_.stderr_is_tty && !last_.empty()) *ctx_.err << "\n";
  }
  void operator()(const std::vector<setup::RolloutProgress>& progress) {
    std::vector<std::string> parts;
    for (const auto& p : progress) {
      std::string part = fmt::format("{} {}/{}", p.name, p.available, p.replicas);
      if (!p.done && !p.waiting_for.empty()) part += " (" + p.waiting_for + ")";
      parts.push_back(part);
    }
    std::string line = fmt::format("waiting for rollout: {}", fmt::join(parts, ", "));
    if (line == last_) return;
    if (ctx_.stderr_is_tty) {
      *ctx_.err << "\r\033[K" << line;
      ctx_.err->flush();
    } else {
      *ctx_.err << line << "\n";
    }
    last_ = line;
  }

 private:
  const Context& ctx_;
  std::string last_;
};

int RunApply(const Context& ctx, const ApplyFlags& flags) {
  auto format = ctx.Output();
  if (!format.ok()) return Fail(ctx, format.error());
  auto request = BuildRequest(ctx, flags);
  if (!request.ok()) return Fail(ctx, request.error());
  // A mistyped component is a usage error, told before the cluster is asked anything.
  if (auto known = manifests::ResolveComponents(request->components, request->config); !known.ok())
    return Fail(ctx, known.error());
  auto client = ConnectToCluster(ctx);
  if (!client.ok()) return Fail(ctx, client.error());

  std::string suffix = DryRunSuffix(request->dry_run);
  RolloutPrinter printer(ctx);
  setup::ApplyObserver observer;
  observer.note = [&](const std::string& m) { ctx.Note(m); };
  observer.warn = [&](const std::string& m) { ctx.Warn(m); };
  observer.applied = [&](const setup::AppliedObject& o) {
    if (*format == OutputFormat::kTable)
      *ctx.out << o.name << " " << setup::ApplyActionName(o.action) << suffix << "\n";
    if (*format == OutputFormat::kName) *ctx.out << o.name << "\n";
    ctx.out->flush();
  };
  observer.rollout = [&](const std::vector<setup::RolloutProgress>& p) { printer(p); };
  auto report = setup::Apply(**client, *request, observer);
  if (!report.ok()) return Fail(ctx, report.error());
  if (report->version_from_server)
    ctx.log->info("target Kubernetes {} (from the server)", report->version.MinorString());
  if (*format == OutputFormat::kJson || *format == OutputFormat::kYaml) {
    nlohmann::ordered_json list = {
        {"apiVersion", "v1"}, {"kind", "List"}, {"items", nlohmann::ordered_json::array()}};
    for (const auto& o : report->objects) list["items"].push_back(nlohmann::ordered_json(o.object));
    *ctx.out << (*format == OutputFormat::kJson ? list.dump(2) + "\n" : EmitYaml(list));
  }
  if (!report->changed()) ctx.Note("nothing changed" + suffix);
  return kExitOk;
}

}  // namespace

void RegisterApply(CLI::App& app, CommandEnv& env) {
  auto flags = std::make_shared<ApplyFlags>();
  CLI::App* cmd =
      app.add_subcommand("apply", "Apply the setup to the cluster (server-side apply, idempotent)");
  cmd->footer(
      "Applies the objects `powerctl generate` renders, CRDs and namespaces first, with field "
      "manager\n"
      "powerctl. Permissions are checked first: without them nothing is changed. Existing TLS "
      "Secrets\n"
      "are kept unless --rotate-certs. The Kubernetes version comes from the server unless given.\n"
      "The lb-agent (component lb) and consolidate's RBAC (consolidate) are opt-in: `all` leaves\n"
      "them out.\n"
      "Examples:\n"
      "  powerctl apply -c powerctl.yaml --wait\n"
      "  powerctl apply lb --wait\n"
      "  powerctl apply scheduler --dry-run=server");
  cmd->add_option("components", flags->components, "Components to apply (default all)")
      ->type_name("COMPONENT");
  cmd->add_option("--kube-version", flags->kube_version,
                  "Render for this version instead of the server's")
      ->type_name("VERSION");
  env.hints.values["apply --kube-version"] = KubeVersion::SupportedMinors();
  cmd->add_option("--templates", flags->templates_dir,
                  "Directory whose templates replace the embedded ones")
      ->type_name("DIR");
  cmd->add_option("--cert-dir", flags->cert_dir, "Use the TLS material in this directory")
      ->type_name("DIR");
  AddDryRunFlag(*cmd, flags->dry_run, env, "apply");
  cmd->add_flag("--force-conflicts", flags->force_conflicts,
                "Take over fields another manager owns");
  cmd->add_flag("--rotate-certs", flags->rotate_certs,
                "Replace the TLS Secrets with new key material");
  cmd->add_flag("--wait", flags->wait, "Wait until the Deployments and DaemonSets have rolled out");
  cmd->add_option("--timeout", flags->timeout, "How long --wait waits (default 5m)")
      ->type_name("DURATION");
  env.hints.values["apply"] = env.hints.values["generate"];
  DeclareOutput(
      *cmd, env, OutputFormat::kTable,
      {OutputFormat::kTable, OutputFormat::kName, OutputFormat::kJson, OutputFormat::kYaml});
  cmd->callback([&env, flags] { env.exit_code = RunApply(env.ctx, *flags); });
}

}  // namespace powerctl::cli
