// powerctl score (--pod FILE | --cpu Q [--memory Q]) [NODE...]: what the extender would
// answer for that pod right now, per node, best first.
#include "cli/app.h"
#include "cli/exit_codes.h"
#include "cli/kube_context.h"
#include "cli/score_format.h"
#include "core/common/http_client.h"
#include "core/common/yaml.h"
#include "core/explain/power_cost.h"
#include "core/explain/score.h"

#include <fmt/format.h>

#include <fstream>
#include <ostream>
#include <sstream>

namespace powerctl::cli {
namespace {

struct ScoreFlags {
  std::string pod_file;
  std::string source = "auto";
  explain::ScoreRequest request;
};

Result<nlohmann::json> ReadPodFile(const Context& ctx, const std::string& path) {
  std::stringstream text;
  if (path == "-") {
    text << ctx.in->rdbuf();
  } else {
    std::ifstream file(path);
    if (!file)
      return MakeError(ErrorCode::kInvalidInput, "--pod " + path + ": cannot read the file");
    text << file.rdbuf();
  }
  POWERCTL_TRY(docs, ParseYamlDocuments(text.str(), path));
  if (docs.size() != 1) {
    return MakeError(
        ErrorCode::kInvalidInput,
        fmt::format("--pod {}: expected one Pod manifest, found {} documents", path, docs.size()));
  }
  return nlohmann::json(docs[0]);
}

int RunScore(const Context& ctx, ScoreFlags& flags) {
  auto format = ctx.Output();
  if (!format.ok()) return Fail(ctx, format.error());
  explain::ScoreRequest request = flags.request;
  auto source = report::ParsePredictSource(flags.source);
  if (!source.ok()) return Fail(ctx, source.error());
  request.source = *source;
  if (!flags.pod_file.empty()) {
    auto pod = ReadPodFile(ctx, flags.pod_file);
    if (!pod.ok()) return Fail(ctx, pod.error());
    request.pod = std::move(*pod);
  }
  if (auto pod = explain::PodToScore(request); !pod.ok()) return Fail(ctx, pod.error());
  auto config = ctx.LoadConfig();
  if (!config.ok()) return Fail(ctx, config.error());
  auto client = ConnectToCluster(ctx);
  if (!client.ok()) return Fail(ctx, client.error());
  std::unique_ptr<HttpClient> http = MakeCurlHttpClient();
  explain::LocalScoringDeps deps;
  deps.kube = client->get();
  deps.http = http.get();
  deps.log = ctx.log;
  auto report = explain::ScorePod(request, *config, deps);
  if (!report.ok()) return Fail(ctx, report.error());
  for (const std::string& warning : report->warnings) ctx.Warn(warning);

  if (*format == OutputFormat::kJson || *format == OutputFormat::kYaml) {
    nlohmann::json doc = explain::ScoreReportToJson(*report);
    *ctx.out << (*format == OutputFormat::kJson ? doc.dump(2) + "\n" : EmitYaml(doc));
    return kExitOk;
  }
  const bool wide = *format == OutputFormat::kWide;
  *ctx.out << "Answered by: " << report->answered_by << "\n";
  if (report->objective == config::kObjectiveFill) {
    *ctx.out << "Power ranked by: fill (FILL: the cheapest W/core of raising each node's load by "
                "the pod or more)\n";
  } else if (report->objective == config::kObjectiveMarginal) {
    *ctx.out << "Power ranked by: marginal (DELTA: the watts the pod adds)\n";
  }
  PrintNodeScores(*ctx.out, report->nodes, wide, "");
  if (wide && !report->notes.empty()) {
    *ctx.out << "\nNotes:\n";
    for (const std::string& note : report->notes) *ctx.out << "  " << note << "\n";
  }
  PrintNotScored(*ctx.out, report->nodes);
  return kExitOk;
}

}  // namespace

void RegisterScore(CLI::App& app, CommandEnv& env) {
  auto flags = std::make_shared<ScoreFlags>();
  CLI::App* cmd = app.add_subcommand(
      "score", "Show what the extender would answer for a pod now: gates, watts, scores per node");
  cmd->footer(
      "Per node, best first: kube-scheduler's own checks (taints, node selector and affinity,\n"
      "resources, cordon), the extender's gates (pod group, dontschedule policies), the\n"
      "predicted watts the pod adds (DELTA), the fill cost (FILL: the cheapest W/core of\n"
      "raising the node's load by the pod or more, what scoring.objective=fill ranks by; nodes\n"
      "within scoring.tieTolerance of the cheapest tie), each score component and the final\n"
      "0..10. --source auto (default) asks the running extender (POST /v1/score on its ops\n"
      "port, through the API server's service proxy) and computes here with the same scoring\n"
      "code from powerctl.yaml's telemetry and model when it cannot answer; the first line\n"
      "says which one answered. -o wide adds every reason; -o json|yaml for scripts.\n"
      "Examples:\n"
      "  powerctl score --cpu 500m\n"
      "  powerctl score --cpu 2 --memory 4Gi node-a node-b -o wide\n"
      "  powerctl score --pod pod.yaml -o json");
  cmd->add_option("nodes", flags->request.nodes, "Node names (default: all nodes)")
      ->type_name("NODE");
  cmd->add_option("--pod", flags->pod_file, "A Pod manifest (YAML or JSON; - reads stdin)")
      ->type_name("FILE");
  cmd->add_option("--cpu", flags->request.cpu, "CPU the pod requests, without --pod")
      ->type_name("QUANTITY");
  cmd->add_option("--memory", flags->request.memory, "Memory the pod requests, with --cpu")
      ->type_name("QUANTITY");
  cmd->add_option("--source", flags->source,
                  "Who computes: auto (the extender, else here), local or extender")
      ->type_name("SOURCE")
      ->check(Choices(env, "score --source", {"auto", "local", "extender"}));
  DeclareOutput(
      *cmd, env, OutputFormat::kTable,
      {OutputFormat::kTable, OutputFormat::kWide, OutputFormat::kJson, OutputFormat::kYaml});
  cmd->callback([&env, flags] { env.exit_code = RunScore(env.ctx, *flags); });
}

}  // namespace powerctl::cli
