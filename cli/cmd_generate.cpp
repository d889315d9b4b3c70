// powerctl generate [COMPONENT...]: renders manifests to stdout or --output-dir.
#include "cli/app.h"
#include "cli/exit_codes.h"
#include "core/common/kube_version.h"
#include "core/manifests/generate.h"
#include "core/manifests/output.h"

#include <fmt/format.h>

#include <algorithm>
#include <ostream>

namespace powerctl::cli {
namespace {

struct GenerateFlags {
  std::vector<std::string> components;
  std::string kube_version;
  std::string output_dir;
  std::string templates_dir;
  bool out_of_cluster = false;
  std::string extender_url;
  std::string cert_dir;
  std::string export_templates_dir;
};

Result<manifests::GenerateRequest> BuildRequest(const Context& ctx, const GenerateFlags& flags) {
  POWERCTL_TRY(config, ctx.LoadConfig());
  for (const std::string& warning : config.warnings) ctx.Warn(warning);
  manifests::GenerateRequest request;
  std::string version_text =
      flags.kube_version.empty() ? config.kubernetes_version : flags.kube_version;
  auto version = KubeVersion::ParseRelease(version_text);
  if (!version.ok()) {
    return WithContext(version.error(),
                       flags.kube_version.empty() ? "kubernetesVersion" : "--kube-version");
  }
  for (const std::string& warning : version->Warnings(TodayUtc())) ctx.Warn(warning);
  request.config = std::move(config);
  request.version = *version;
  request.components = flags.components;
  request.out_of_cluster = flags.out_of_cluster;
  request.kubeconfig_path = ctx.globals.kubeconfig;
  request.extender_url = flags.extender_url;
  if (!flags.cert_dir.empty()) {
    request.cert_dir = flags.cert_dir;
  } else if (flags.out_of_cluster && !flags.output_dir.empty()) {
    request.cert_dir = std::filesystem::path(flags.output_dir) / "tls";
  }
  if (!flags.templates_dir.empty()) request.templates_dir = flags.templates_dir;
  if (!flags.out_of_cluster && !flags.extender_url.empty()) {
    return MakeError(ErrorCode::kInvalidInput, "--extender-url is only used with --out-of-cluster");
  }
  return request;
}

int RunExportTemplates(const Context& ctx, const std::string& dir) {
  auto written = manifests::ExportTemplates(dir);
  if (!written.ok()) return Fail(ctx, written.error());
  ctx.Note(fmt::format("wrote {} templates to {}; edit them and pass --templates {}",
                       written->size(), dir, dir));
  return kExitOk;
}

int RunGenerate(const Context& ctx, const GenerateFlags& flags) {
  if (!flags.export_templates_dir.empty()) {
    if (!flags.components.empty()) {
      return Fail(ctx, MakeError(ErrorCode::kInvalidInput,
                                 "--export-templates writes the templates; name no components"));
    }
    return RunExportTemplates(ctx, flags.export_templates_dir);
  }
  auto format = ctx.Output();
  if (!format.ok()) return Fail(ctx, format.error());
  auto request = BuildRequest(ctx, flags);
  if (!request.ok()) return Fail(ctx, request.error());
  const std::string config_file = ctx.ConfigFile();
  ctx.log->debug("config: {}", config_file.empty() ? "built-in defaults" : "file " + config_file);
  ctx.log->info(
      "rendering {} for Kubernetes {}{}",
      flags.components.empty() ? "all" : fmt::format("{}", fmt::join(flags.components, ", ")),
      request->version.MinorString(), flags.out_of_cluster ? " (out of cluster)" : "");
  if (request->templates_dir)
    ctx.log->info("templates from {} override the embedded ones", flags.templates_dir);
  auto result = manifests::Generate(*request);
  if (!result.ok()) return Fail(ctx, result.error());
  for (const std::string& note : result->notes) ctx.Note(note);
  for (const std::string& warning : result->warnings) ctx.Warn(warning);

  manifests::ManifestFormat manifest_format = *format == OutputFormat::kJson
                                                  ? manifests::ManifestFormat::kJson
                                                  : manifests::ManifestFormat::kYaml;
  if (!flags.output_dir.empty()) {
    const bool every_component =
        flags.components.empty() || std::find(flags.components.begin(), flags.components.end(),
                                              "all") != flags.components.end();
    auto files = manifests::WriteManifestFiles(flags.output_dir, *result, manifest_format,
                                               flags.out_of_cluster, every_component);
    if (!files.ok()) return Fail(ctx, files.error());
    for (const auto& path : files->written) ctx.Note("wrote " + path.string());
    if (!files->kustomization_skipped.empty()) ctx.Warn(files->kustomization_skipped);
    for (const auto& path : files->removed) {
      ctx.Note("removed " + path.string() + " (powerctl wrote it before; it no longer applies)");
    }
    return kExitOk;
  }
  std::vector<nlohmann::ordered_json> all;
  for (const auto& component : result->components) {
    all.insert(all.end(), component.objects.begin(), component.objects.end());
  }
  // A failed write fails the command in main (cli/main_context.cpp), as for every command.
  *ctx.out << manifests::FormatManifests(all, manifest_format);
  return kExitOk;
}

}  // namespace

void RegisterGenerate(CLI::App& app, CommandEnv& env) {
  auto flags = std::make_shared<GenerateFlags>();
  CLI::App* cmd =
      app.add_subcommand("generate", "Render the manifests of a power-aware scheduling setup");
  cmd->footer(
      "Components: all (default), namespace, rbac, secrets, policies, model, extender, scheduler,\n"
      "lb, consolidate. `all` includes model only when predictor.backend is tfserving-grpc or\n"
      "tfserving-rest, and never lb (the lb-agent DaemonSet, its RBAC and ConfigMap) or\n"
      "consolidate (the ServiceAccount and ClusterRole `consolidate` needs): ask for them by "
      "name.\n"
      "Examples:\n"
      "  powerctl generate all --kube-version 1.30 > powerctl.yaml.out\n"
      "  powerctl generate scheduler rbac -c powerctl.yaml --output-dir manifests/\n"
      "  powerctl generate lb | kubectl apply -f -\n"
      "  powerctl generate scheduler --out-of-cluster --kubeconfig sched.kubeconfig \\\n"
      "      --extender-url https://127.0.0.1:8443/scheduler --output-dir out/");
  cmd->add_option("components", flags->components, "Components to render")->type_name("COMPONENT");
  cmd->add_option("--kube-version", flags->kube_version, "Target Kubernetes version, 1.20 or later")
      ->type_name("VERSION");
  cmd->add_option("--output-dir", flags->output_dir,
                  "Write one file per component here (key files 0600)")
      ->type_name("DIR");
  cmd->add_option("--templates", flags->templates_dir,
                  "Directory whose templates replace the embedded ones")
      ->type_name("DIR");
  cmd->add_option("--export-templates", flags->export_templates_dir,
                  "Write the embedded templates here, to start a --templates directory from")
      ->type_name("DIR");
  cmd->add_flag("--out-of-cluster", flags->out_of_cluster,
                "Render the scheduler configuration for a kube-scheduler run outside the cluster");
  cmd->add_option("--extender-url", flags->extender_url,
                  "Out of cluster: the extender's URL prefix")
      ->type_name("URL");
  cmd->add_option("--cert-dir", flags->cert_dir,
                  "TLS material kept from run to run: reused, completed from your ca.crt and "
                  "ca.key, or created")
      ->type_name("DIR");
  std::vector<std::string> names{"all"};
  for (auto n : manifests::ComponentNames()) names.emplace_back(n);
  env.hints.values["generate"] = names;
  env.hints.values["generate --kube-version"] = KubeVersion::SupportedMinors();
  DeclareOutput(*cmd, env, OutputFormat::kYaml, {OutputFormat::kYaml, OutputFormat::kJson});
  cmd->callback([&env, flags] { env.exit_code = RunGenerate(env.ctx, *flags); });
}

}  // namespace powerctl::cli
