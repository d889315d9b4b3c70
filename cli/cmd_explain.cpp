// powerctl explain pod NAME [-n NS] (alias: why): where the pod landed and why, or why it is
// Pending, node by node, with ranked causes and fixes.
#include "cli/app.h"
#include "cli/exit_codes.h"
#include "cli/kube_context.h"
#include "cli/score_format.h"
#include "core/common/encoding.h"
#include "core/common/http_client.h"
#include "core/common/yaml.h"
#include "core/explain/explain_pod.h"

#include <fmt/format.h>

#include <ostream>

namespace powerctl::cli {
namespace {

// Events shown without -o wide (the newest).
constexpr std::size_t kFoldedEvents = 5;

struct ExplainFlags {
  std::string name;
  bool no_recompute = false;
  std::string source = "auto";
};

std::string Mebi(std::int64_t bytes) {
  return fmt::format("{:.0f}Mi", static_cast<double>(bytes) / (1024.0 * 1024.0));
}

void PrintChecks(std::ostream& out, const explain::ExplainReport& r, bool wide) {
  bool all_pass = true;
  for (const setup::CheckResult& c : r.checks) {
    if (c.status != setup::CheckStatus::kPass && c.status != setup::CheckStatus::kSkip)
      all_pass = false;
  }
  if (all_pass && !wide) {
    out << "Scheduler: " << r.pod.scheduler_name << " is running";
    if (!r.checks.empty()) out << " (" << r.checks.front().message << ")";
    out << "\n";
    return;
  }
  out << "Scheduler " << r.pod.scheduler_name << ":\n";
  for (const setup::CheckResult& c : r.checks) {
    if (!wide && c.status == setup::CheckStatus::kPass) continue;
    out << fmt::format("  {:<4}  {:<16}  {}\n", setup::CheckStatusName(c.status), c.id, c.message);
    if (!c.fix.empty()) out << "        fix: " << c.fix << "\n";
  }
}

void PrintVerdict(std::ostream& out, const explain::ExplainReport& r, bool wide) {
  const explain::PodSummary& p = r.pod;
  out << "Scheduler's verdict:\n";
  if (!p.pod_scheduled_status.empty()) {
    out << "  PodScheduled=" << p.pod_scheduled_status;
    if (!p.pod_scheduled_reason.empty()) out << " (" << p.pod_scheduled_reason << ")";
    if (!p.pod_scheduled_message.empty()) out << ": " << p.pod_scheduled_message;
    out << "\n";
  } else {
    out << "  no PodScheduled condition: no scheduler has looked at the pod\n";
  }
  std::size_t first = 0;
  if (!wide && r.events.size() > kFoldedEvents) {
    first = r.events.size() - kFoldedEvents;
    out << fmt::format("  ({} older events; -o wide shows them)\n", first);
  }
  if (r.events.empty()) out << "  Events: <none>\n";
  for (std::size_t i = first; i < r.events.size(); ++i) {
    const explain::PodEvent& e = r.events[i];
    // Anyone who may create Events in the namespace writes these: one printable line each on
    // the terminal (escape bytes and newlines become spaces), cut at 1 KiB; -o json keeps them.
    out << fmt::format("  {} {} from {} (x{}, {}): {}\n", ExcerptForMessage(e.type, 64),
                       ExcerptForMessage(e.reason, 128), ExcerptForMessage(e.from, 128), e.count,
                       ExcerptForMessage(e.last_seen, 64), ExcerptForMessage(e.message, 1024));
  }
}

// The chosen node's model, and how far it is from the node's measured power now.
void PrintNodeModel(std::ostream& out, const explain::ExplainReport::NodeModel& m) {
  out << "Model: " << m.model << "\n";
  if (m.accuracy) {
    const predict::NodeAccuracy& a = *m.accuracy;
    out << fmt::format(
        "Accuracy on {}: {:.0f} W predicted now, {:.0f} W measured ({}), {}{:.0f}% off\n", m.node,
        a.predicted_watts, a.measured_watts, m.power_source, a.error_watts >= 0 ? "+" : "-",
        a.relative_error * 100);
  } else if (!m.note.empty()) {
    out << "Accuracy on " << m.node << ": " << m.note << "\n";
  }
}

void PrintReport(std::ostream& out, const explain::ExplainReport& r, bool wide) {
  const explain::PodSummary& p = r.pod;
  out << fmt::format("Pod {}/{}: {}{}, scheduler {}, requests {}m CPU, {} memory\n", p.namespace_,
                     p.name, p.phase.empty() ? "Unknown" : p.phase,
                     p.node_name.empty() ? "" : " on " + p.node_name, p.scheduler_name,
                     p.cpu_request_millis, Mebi(p.memory_request_bytes));
  PrintChecks(out, r, wide);
  PrintVerdict(out, r, wide);
  out << "Extender's decision: " << r.source_text << "\n";
  if (!r.consulted_note.empty()) out << "Note: " << r.consulted_note << "\n";
  if (!r.nodes.empty()) {
    out << "\n";
    PrintNodeScores(out, r.nodes, wide, p.node_name);
    if (!wide) PrintNotScored(out, r.nodes);
  }
  if (wide && !r.notes.empty()) {
    out << "\nNotes:\n";
    for (const std::string& note : r.notes) out << "  " << note << "\n";
  }
  if (r.scheduled()) {
    out << "\nScheduled on " << p.node_name << " (marked *).\n";
    if (!r.why_chosen.empty()) out << "Why: " << r.why_chosen << "\n";
    if (r.node_model) PrintNodeModel(out, *r.node_model);
    if (r.causes.empty()) return;
    out << "It should not stay there:\n";
  } else {
    out << "\nCauses, most likely first:\n";
  }
  for (std::size_t i = 0; i < r.causes.size(); ++i) {
    const explain::Cause& c = r.causes[i];
    std::string nodes;
    for (std::size_t n = 0; n < c.nodes.size() && n < 5; ++n)
      nodes += (n == 0 ? "" : ", ") + c.nodes[n];
    if (c.nodes.size() > 5) nodes += fmt::format(" and {} more", c.nodes.size() - 5);
    out << fmt::format(
        "  {}. [{}] {}{}\n", i + 1, c.id, c.reason,
        nodes.empty() ? "" : fmt::format(" ({} node(s): {})", c.nodes.size(), nodes));
    if (!c.detail.empty()) out << "     " << c.detail << "\n";
    if (!c.fix.empty()) out << "     fix: " << c.fix << "\n";
  }
}

int RunExplain(const Context& ctx, const ExplainFlags& flags) {
  auto format = ctx.Output();
  if (!format.ok()) return Fail(ctx, format.error());
  explain::ExplainRequest request;
  request.name = flags.name;
  request.recompute = !flags.no_recompute;
  auto source = report::ParsePredictSource(flags.source);
  if (!source.ok()) return Fail(ctx, source.error());
  request.source = *source;
  request.namespace_ = ObjectNamespace(ctx);
  auto config = LoadConfigForObjectCommand(ctx);  // -n is the object's namespace here
  if (!config.ok()) return Fail(ctx, config.error());
  auto client = ConnectToCluster(ctx);
  if (!client.ok()) return Fail(ctx, client.error());
  std::unique_ptr<HttpClient> http = MakeCurlHttpClient();
  explain::ExplainDeps deps;
  deps.kube = client->get();
  deps.http = http.get();
  deps.log = ctx.log;
  auto report = explain::ExplainPod(request, *config, deps);
  if (!report.ok()) return Fail(ctx, report.error());
  for (const std::string& warning : report->warnings) ctx.Warn(warning);
  if (*format == OutputFormat::kJson || *format == OutputFormat::kYaml) {
    nlohmann::json doc = explain::ExplainReportToJson(*report);
    *ctx.out << (*format == OutputFormat::kJson ? doc.dump(2) + "\n" : EmitYaml(doc));
  } else {
    PrintReport(*ctx.out, *report, *format == OutputFormat::kWide);
  }
  return report->problem() ? kExitCheckFailed : kExitOk;
}

}  // namespace

void RegisterExplain(CLI::App& app, CommandEnv& env) {
  CLI::App* explain =
      app.add_subcommand("explain", "Explain a pod's placement or why it is Pending");
  explain->alias("why");
  explain->require_subcommand(1);
  auto flags = std::make_shared<ExplainFlags>();
  CLI::App* pod = explain->add_subcommand("pod", "Why a pod landed where it did, or is Pending");
  pod->footer(
      "Checks the pod's scheduler (its lease, its events; for powerctl's scheduler the\n"
      "extender's /readyz), shows the scheduler's verdict verbatim, the extender's decision\n"
      "as it recorded it (Events PowerDecisions labelled powerctl.io/pod-<uid>) or recomputed now\n"
      "with the same scoring code (labelled so), kube-scheduler's own checks per node\n"
      "(cordon, taints, node selector and affinity, resources) with each node's power cost\n"
      "(DELTA: the pod's watts; FILL: W/core to fill, what scoring.objective=fill ranks by)\n"
      "and, for a scheduled pod, why its node won; for a Pending pod, the causes with a fix\n"
      "each. Healthy detail is folded; -o wide shows everything.\n"
      "Exit 0 when the pod is scheduled, 3 when it is Pending or its node violates its\n"
      "deschedule policy or has a NoExecute taint it does not tolerate.\n"
      "Examples:\n"
      "  powerctl explain pod web-1 -n shop\n"
      "  powerctl why pod web-1 -n shop -o wide\n"
      "  powerctl explain pod web-1 -n shop -o json");
  pod->add_option("name", flags->name, "The pod's name")->required()->type_name("NAME");
  env.hints.cluster["explain pod"] = ClusterNames::kPods;
  pod->add_flag("--no-recompute", flags->no_recompute,
                "Show only recorded decisions; never compute one locally");
  pod->add_option("--source", flags->source,
                  "Who recomputes when no decision was recorded: auto, local or extender")
      ->type_name("SOURCE")
      ->check(Choices(env, "explain pod --source", {"auto", "local", "extender"}));
  DeclareOutput(
      *pod, env, OutputFormat::kTable,
      {OutputFormat::kTable, OutputFormat::kWide, OutputFormat::kJson, OutputFormat::kYaml});
  pod->callback([&env, flags] { env.exit_code = RunExplain(env.ctx, *flags); });
}

}  // namespace powerctl::cli
