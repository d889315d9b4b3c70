// powerctl label nodes NODE...|-l SELECTOR|--all: temperature-range and model labels.
#include <ostream>

#include <fmt/format.h>

#include "cli/app.h"
#include "cli/dry_run.h"
#include "cli/exit_codes.h"
#include "cli/kube_context.h"
#include "core/setup/label_nodes.h"

namespace powerctl::cli {
namespace {

struct LabelFlags {
  setup::LabelNodesRequest request;
  std::string dry_run;
  std::string ambient, cpu1, cpu2, model_host, model_port, model_name, model_version, model_signature;
};

std::optional<std::string> Given(const CLI::App* cmd, const char* flag, const std::string& value) {
  if (cmd->count(flag) == 0) return std::nullopt;
  return value;
}

int RunLabelNodes(const Context& ctx, const CLI::App* cmd, LabelFlags& flags) {
  auto format = ctx.Output(OutputFormat::kTable, {OutputFormat::kTable, OutputFormat::kName});
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
  request.dry_run = ParseDryRun(flags.dry_run);
  // Bad input is refused before the cluster is even contacted.
  auto labels = setup::DesiredNodeLabels(request);
  if (!labels.ok()) return Fail(ctx, labels.error());
  auto client = ConnectToCluster(ctx);
  if (!client.ok()) return Fail(ctx, client.error());
  auto results = setup::LabelNodes(**client, request);
  if (!results.ok()) return Fail(ctx, results.error());
  std::string suffix = DryRunSuffix(request.dry_run);
  for (const auto& r : *results) {
    if (*format == OutputFormat::kName) {
      *ctx.out << "node/" << r.node << "\n";
    } else {
      *ctx.out << "node/" << r.node << (r.changed ? " labeled" : " unchanged") << suffix << "\n";
    }
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
      "Writes the labels the MinimizePower plugin reads: ambient/min|max, cpu1/min|max, cpu2/min|max\n"
      "(degrees Celsius) and tensorflow/host|port|name|version|signature. Everything is validated and\n"
      "every node checked before any node is changed.\n"
      "Examples:\n"
      "  powerctl label nodes node-a node-b --ambient 18:35 --cpu1 30:90 --cpu2 30:90\n"
      "  powerctl label nodes -l node-role.kubernetes.io/worker --model-host tfs.power.svc \\\n"
      "      --model-port 8500 --model-name power --overwrite");
  cmd->add_option("nodes", flags->request.nodes, "Node names")->type_name("NODE");
  cmd->add_option("-l,--selector", flags->request.selector, "Label selector for the nodes")->type_name("SELECTOR");
  cmd->add_flag("--all", flags->request.all, "All nodes");
  cmd->add_option("--ambient", flags->ambient, "Ambient temperature range MIN:MAX")->type_name("MIN:MAX");
  cmd->add_option("--cpu1", flags->cpu1, "CPU1 temperature range MIN:MAX")->type_name("MIN:MAX");
  cmd->add_option("--cpu2", flags->cpu2, "CPU2 temperature range MIN:MAX")->type_name("MIN:MAX");
  cmd->add_option("--model-host", flags->model_host, "TensorFlow Serving host")->type_name("HOST");
  cmd->add_option("--model-port", flags->model_port, "TensorFlow Serving gRPC port")->type_name("PORT");
  cmd->add_option("--model-name", flags->model_name, "Model name")->type_name("NAME");
  cmd->add_option("--model-version", flags->model_version, "Model version")->type_name("VERSION");
  cmd->add_option("--model-signature", flags->model_signature, "Model signature")->type_name("NAME");
  cmd->add_flag("--overwrite", flags->request.overwrite, "Change labels that already have another value");
  AddDryRunFlag(*cmd, flags->dry_run, env, "label nodes");
  cmd->callback([&env, flags, cmd] { env.exit_code = RunLabelNodes(env.ctx, cmd, *flags); });
}

}  // namespace powerctl::cli
