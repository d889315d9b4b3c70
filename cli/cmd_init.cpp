// powerctl init [FILE]: writes a commented powerctl.yaml, asking on a terminal.
#include "cli/app.h"
#include "cli/exit_codes.h"
#include "cli/kube_context.h"
#include "core/common/kube_version.h"
#include "core/config/config_loader.h"
#include "core/config/config_schema.h"
#include "core/config/config_writer.h"
#include "core/manifests/components.h"
#include "core/manifests/generate.h"
#include "core/manifests/output.h"
#include "core/setup/cluster_facts.h"

#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <istream>
#include <ostream>
#include <variant>

namespace powerctl::cli {
namespace {

struct InitFlags {
  std::string file = "powerctl.yaml";
  bool defaults = false;
  bool force = false;
  bool from_cluster = false;  // ask the cluster even with --defaults (and fail if unreachable)
  // Convenience flags for CI; each is a --set of the named key.
  std::string kube_version, scheduler_name, extender_image, predictor, tls_mode;
};

// Asks for each key marked `prompt` that no flag already set. Returns false on EOF.
Status Prompt(const Context& ctx, config::PowerctlConfig& config,
              const std::vector<std::string>& preset) {
  for (const config::FieldSpec& field : config::ConfigFields()) {
    if (!field.prompt) continue;
    if (std::find(preset.begin(), preset.end(), std::string(field.path)) != preset.end()) continue;
    if (field.ask_if && !field.ask_if(config)) continue;
    const bool yes_no = std::holds_alternative<bool*>(field.ref(config));
    for (int attempt = 0;; ++attempt) {
      std::string current = config::FieldValueText(config, field);
      std::string choices =
          field.choices.empty() ? "" : fmt::format(" ({})", fmt::join(field.choices, "|"));
      if (yes_no) {
        choices = " (yes|no)";
        current = current == "true" ? "yes" : "no";
      }
      *ctx.err << fmt::format("{}{} [{}]: ", field.help, choices, current);
      ctx.err->flush();
      std::string answer;
      if (!std::getline(*ctx.in, answer)) {
        *ctx.err << "\n";
        return MakeError(ErrorCode::kInterrupted, "init cancelled: no answer (end of input)");
      }
      if (answer.empty()) break;
      Status s = config::SetFieldFromText(config, field, answer);
      if (s.ok()) break;
      ctx.PrintError(s.error().message);
      if (attempt >= 4) return s;
    }
  }
  return OkStatus();
}

// Defaults from the cluster: interactive init asks it when a kubeconfig names one (a failure
// is a note); --from-cluster asks it always and fails when it cannot.
Status AskCluster(Context& ctx, const InitFlags& flags, bool interactive,
                  const std::vector<std::string>& preset, config::PowerctlConfig& config) {
  if (!interactive && !flags.from_cluster) return OkStatus();
  auto facts = [&]() -> Result<setup::ClusterFacts> {
    POWERCTL_TRY(client, ConnectToCluster(
                             ctx, {.max_attempts = 1, .connect_timeout = std::chrono::seconds(3)}));
    return setup::DetectClusterFacts(*client);
  }();
  if (!facts.ok()) {
    if (flags.from_cluster) return WithContext(facts.error(), "--from-cluster");
    ctx.Note("Not asking the cluster for defaults: " + facts.error().message);
    return OkStatus();
  }
  ctx.Note(fmt::format("From the cluster: {}.", fmt::join(facts->notes, "; ")));
  std::vector<std::string> set = setup::ApplyClusterFacts(*facts, preset, config);
  if (!set.empty()) ctx.Note(fmt::format("Defaults from the cluster: {}", fmt::join(set, ", ")));
  return OkStatus();
}

int RunInit(Context& ctx, const InitFlags& flags) {
  std::vector<std::pair<std::string, std::string>> convenience = {
      {"kubernetesVersion", flags.kube_version},
      {"scheduler.name", flags.scheduler_name},
      {"extender.image", flags.extender_image},
      {"predictor.backend", flags.predictor},
      {"extender.tlsMode", flags.tls_mode}};
  std::vector<std::string> preset;
  for (const auto& [key, value] : convenience) {
    if (value.empty()) continue;
    ctx.globals.set_flags.push_back(key + "=" + value);
  }
  for (const std::string& s : ctx.globals.set_flags) preset.push_back(s.substr(0, s.find('=')));
  if (!ctx.globals.namespace_.empty()) preset.push_back("namespace");

  bool to_stdout = flags.file == "-";
  std::error_code ec;
  if (!to_stdout && std::filesystem::exists(flags.file, ec) && !flags.force) {
    return Fail(
        ctx, MakeError(ErrorCode::kConflict,
                       fmt::format("{} already exists; use --force to overwrite it", flags.file)));
  }
  // init writes a new file: the layers are defaults, environment and flags, not an existing -c
  // file.
  ctx.globals.config_file.clear();
  config::ConfigSources sources;
  sources.environment = ctx.environment;
  sources.set_flags = ctx.globals.set_flags;
  if (!ctx.globals.namespace_.empty())
    sources.set_flags.push_back("namespace=" + ctx.globals.namespace_);
  auto config = config::LoadConfig(sources);
  if (!config.ok()) return Fail(ctx, config.error());
  for (const std::string& warning : config->warnings) ctx.Warn(warning);

  bool interactive = !flags.defaults && ctx.stdin_is_tty;
  if (Status asked = AskCluster(ctx, flags, interactive, preset, *config); !asked.ok()) {
    return Fail(ctx, asked.error());
  }
  if (interactive) {
    ctx.Note("Answer each question or press Enter to keep the value in brackets.");
    Status s = Prompt(ctx, *config, preset);
    if (!s.ok()) return Fail(ctx, s.error());
    Status valid = config::ValidateConfig(*config);
    if (!valid.ok()) return Fail(ctx, valid.error());
  }
  std::string text = config::WriteConfigYaml(*config, config::ConfigStyle::kCommented);
  // What init writes must load back to the same configuration.
  config::PowerctlConfig check;
  Status reread = config::ApplyConfigText(check, text, flags.file);
  if (!reread.ok())
    return Fail(ctx, MakeError(ErrorCode::kInternal,
                               "init wrote an invalid file: " + reread.error().message));

  if (to_stdout) {
    *ctx.out << text;
    return kExitOk;
  }
  Status written = manifests::WriteFileAtomically(flags.file, text, 0644);
  if (!written.ok()) return Fail(ctx, written.error());
  // A file `generate all` would reject is still worth writing (the rest is chosen), but the
  // next step must say what is missing rather than suggest a command that fails.
  std::vector<std::string> missing;
  if (auto components = manifests::ResolveComponents({"all"}, *config); components.ok()) {
    missing = manifests::MissingSettings(*config, *components);
  }
  if (!missing.empty()) {
    ctx.Warn(fmt::format("wrote {}; before `powerctl generate all -c {}` set: {}", flags.file,
                         flags.file, fmt::join(missing, "; ")));
    return kExitOk;
  }
  ctx.Note(fmt::format("wrote {}; next: powerctl generate all -c {}", flags.file, flags.file));
  return kExitOk;
}

}  // namespace

void RegisterInit(CLI::App& app, CommandEnv& env) {
  auto flags = std::make_shared<InitFlags>();
  CLI::App* cmd =
      app.add_subcommand("init", "Write a commented powerctl.yaml (asks on a terminal)");
  cmd->footer(
      "On a terminal, init asks for the main settings; with --defaults, or when standard input\n"
      "is not a terminal, it uses defaults, POWERCTL_* variables and flags without asking.\n"
      "On a terminal, or with --from-cluster, it first asks the cluster of the current kubeconfig\n"
      "context for its Kubernetes version and whether metrics-server or a Prometheus Service\n"
      "is there, and offers those as the defaults.\n"
      "Examples:\n"
      "  powerctl init\n"
      "  powerctl init --defaults --kube-version 1.29 --extender-image "
      "registry.example.com/powerctl:0.1.0\n"
      "  powerctl init - --defaults --set extender.weight=10 > powerctl.yaml\n"
      "  powerctl init --defaults --from-cluster --extender-image "
      "registry.example.com/powerctl:0.1.0");
  cmd->add_option("file", flags->file, "File to write, or - for standard output")
      ->type_name("FILE");
  cmd->add_flag("--defaults", flags->defaults, "Do not ask; use defaults, environment and flags");
  cmd->add_flag("--force", flags->force, "Overwrite an existing file");
  cmd->add_flag("--from-cluster", flags->from_cluster,
                "Take the Kubernetes version and telemetry source from the cluster, even with "
                "--defaults (fails if it is unreachable)");
  cmd->add_option("--kube-version", flags->kube_version, "Sets kubernetesVersion")
      ->type_name("VERSION");
  env.hints.values["init --kube-version"] = KubeVersion::SupportedMinors();
  cmd->add_option("--scheduler-name", flags->scheduler_name, "Sets scheduler.name")
      ->type_name("NAME");
  cmd->add_option("--extender-image", flags->extender_image, "Sets extender.image")
      ->type_name("IMAGE");
  cmd->add_option("--predictor", flags->predictor, "Sets predictor.backend")->type_name("BACKEND");
  cmd->add_option("--tls-mode", flags->tls_mode, "Sets extender.tlsMode")->type_name("MODE");
  env.hints.values["init --predictor"] = {"builtin", "tfserving-grpc", "tfserving-rest", "v2"};
  env.hints.values["init --tls-mode"] = {"mtls", "tls", "insecure"};
  cmd->callback([&env, flags] { env.exit_code = RunInit(env.ctx, *flags); });
}

}  // namespace powerctl::cli
