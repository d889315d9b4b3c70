#include "core/explain/explain_pod.h"

#include "core/common/json_fields.h"
#include "core/consolidate/wake.h"
#include "core/explain/pod_events.h"
#include "core/explain/power_cost.h"
#include "core/explain/scheduler_check.h"
#include "core/extender/decision_batch.h"
#include "core/kube/pod_resources.h"
#include "core/scoring/pod_groups.h"
#include "core/setup/doctor_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <ctime>
#include <set>

namespace powerctl::explain {
namespace {

using json = nlohmann::json;

// A filter and a prioritize belong to the same scheduling attempt when they are this close.
constexpr std::int64_t kSameAttemptMs = 5000;

PodSummary Summarise(const json& pod) {
  PodSummary s;
  s.namespace_ = StringField(pod, {"metadata", "namespace"});
  s.name = StringField(pod, {"metadata", "name"});
  s.uid = StringField(pod, {"metadata", "uid"});
  s.phase = StringField(pod, {"status", "phase"});
  s.scheduler_name = StringField(pod, {"spec", "schedulerName"});
  if (s.scheduler_name.empty()) s.scheduler_name = "default-scheduler";
  s.node_name = StringField(pod, {"spec", "nodeName"});
  if (auto r = kube::EffectivePodResources(pod); r.ok()) {
    s.cpu_request_millis = r->cpu_request_millis;
    s.memory_request_bytes = r->memory_request_bytes;
  }
  if (const json* conditions = FindField(pod, {"status", "conditions"});
      conditions != nullptr && conditions->is_array()) {
    for (const json& c : *conditions) {
      if (StringField(c, {"type"}) != "PodScheduled") continue;
      s.pod_scheduled_status = StringField(c, {"status"});
      s.pod_scheduled_reason = StringField(c, {"reason"});
      s.pod_scheduled_message = StringField(c, {"message"});
    }
  }
  return s;
}

bool SchedulingEvent(const PodEvent& e, const std::string& scheduler) {
  return e.from == scheduler || e.reason == "FailedScheduling" || e.reason == "Scheduled" ||
         e.reason == extender::kReasonPowerScored || e.reason == extender::kReasonPowerFiltered ||
         e.reason == extender::kReasonPowerDecisions;
}

std::string FormatUnixMs(std::int64_t ms) {
  const std::time_t seconds = static_cast<std::time_t>(ms / 1000);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z", utc.tm_year + 1900, utc.tm_mon + 1,
                     utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec);
}

std::string Describe(const extender::RecordedDecision& r) {
  const std::string where = r.event_reason == extender::kReasonPowerDecisions
                                ? fmt::format("a {} Event labelled {}", r.event_reason,
                                              extender::PodLabel(r.decision.pod_uid))
                                : fmt::format("Event {} on the pod", r.event_reason);
  return fmt::format("recorded by the extender{} at {} ({})",
                     r.instance.empty() ? "" : " replica " + r.instance,
                     FormatUnixMs(r.decision.at_unix_ms), where);
}

// Picks the recorded decisions that explain the pod's current state; false when none.
bool UseRecorded(const RecordedDecisions& recorded, bool scheduled, ExplainReport& report) {
  const auto& p = recorded.prioritize;
  const auto& f = recorded.filter;
  if (scheduled || (p && (!f || p->decision.at_unix_ms >= f->decision.at_unix_ms))) {
    if (!p) return false;
    report.prioritize = p->decision;
    report.source_text = Describe(*p);
    // The rejecting filter of the same attempt, if it was recorded.
    if (f && f->decision.at_unix_ms <= p->decision.at_unix_ms &&
        p->decision.at_unix_ms - f->decision.at_unix_ms <= kSameAttemptMs) {
      report.filter = f->decision;
    }
    return true;
  }
  if (!f) return false;
  report.filter = f->decision;
  report.source_text = Describe(*f);
  return true;
}

// "45s", "12m", "3h": how long ago `at_unix_ms` was, at `now`.
std::string AgeText(std::int64_t at_unix_ms, std::chrono::system_clock::time_point now) {
  const std::int64_t now_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
  const std::int64_t s = std::max<std::int64_t>(0, (now_ms - at_unix_ms) / 1000);
  if (s < 120) return fmt::format("{}s", s);
  if (s < 7200) return fmt::format("{}m", s / 60);
  return fmt::format("{}h", s / 3600);
}

// The pod's group as the cluster has it now; nullopt when the pod is in no gated group.
std::optional<CauseInputs::PodGroupNow> GroupNow(const json& pod, const ClusterObjects& objects) {
  cluster::PodInfo self = cluster::PodInfoFromJson(pod);
  auto group = self.labels.find(cluster::kPodGroupLabel);
  if (group == self.labels.end() || group->second.empty()) return std::nullopt;
  std::vector<cluster::PodInfo> members;
  for (const json& object : objects.pods) {
    cluster::PodInfo other = cluster::PodInfoFromJson(object);
    auto label = other.labels.find(cluster::kPodGroupLabel);
    if (other.namespace_ == self.namespace_ && label != other.labels.end() &&
        label->second == group->second) {
      members.push_back(std::move(other));
    }
  }
  scoring::PodGroupVerdict verdict = scoring::EvaluatePodGroup(self, members);
  if (!verdict.gated) return std::nullopt;
  return CauseInputs::PodGroupNow{verdict.present, verdict.min_available};
}

// A scheduled pod with no decision recorded by the extender: was the extender consulted? Its
// Events are written with the scheduler's (up to a second later), and expire with them, so while
// the scheduler's Scheduled Event is still on the pod, a missing record means the extender was not
// asked (kube-scheduler skips an ignorable extender it cannot reach) — unless only one node
// fit, when kube-scheduler asks no scores and a filter that rejects nothing records nothing.
void JudgeConsulted(const std::vector<PodEvent>& events, std::size_t fitting_nodes,
                    ExplainReport& report) {
  const bool scheduled_event = std::any_of(
      events.begin(), events.end(), [](const PodEvent& e) { return e.reason == "Scheduled"; });
  if (!scheduled_event) return;  // expired: nothing to tell from
  if (fitting_nodes <= 1) {
    report.consulted_note =
        "no decision of the extender is recorded on the pod: either the extender was not "
        "consulted, or only one node fit (kube-scheduler then asks for no scores, and a filter "
        "that rejects nothing records nothing).";
    return;
  }
  report.extender_consulted = false;
  report.consulted_note =
      "the extender was not consulted when this pod was scheduled: the scheduler's Scheduled "
      "Event is on the pod, but the extender recorded no decision about it (it writes its "
      "records up to a second after deciding; with extender.ignorable true, kube-scheduler places "
      "pods without the extender when it "
      "cannot reach it or its call fails; powerctl doctor checks it; and a kube-scheduler 1.35 "
      "or later started without powerctl's --feature-gates=OpportunisticBatching=false may place "
      "a pod like the one before it on that pod's ranking without asking the extender)";
  if (report.source == DecisionSource::kLocal || report.source == DecisionSource::kExtender)
    report.consulted_note += ". The table below is recomputed now; it is not what placed the pod";
  report.consulted_note += ".";
}

const scoring::NodeDecision* BestScored(const scoring::Decision& d) {
  const scoring::NodeDecision* best = nullptr;
  for (const scoring::NodeDecision& n : d.nodes) {
    if (n.score && (best == nullptr || *n.score > *best->score)) best = &n;
  }
  return best;
}

// The model that predicts `node`'s power and, with telemetry.modelAccuracy, how far it is from
// the node's measured power now (doctor's comparison, for this node alone).
ExplainReport::NodeModel ModelOnNode(const json& node, const config::PowerctlConfig& config,
                                     const ExplainDeps& deps) {
  ExplainReport::NodeModel out;
  const predict::NodeFacts facts = predict::NodeFactsFromJson(node);
  out.node = facts.name;
  out.model = predict::DescribeNodeModel(facts, config);
  if (!config.telemetry.model_accuracy) {
    out.note = "not compared with measured power: telemetry.modelAccuracy is off";
    return out;
  }
  out.power_source = config.telemetry.power_source;
  if (deps.http == nullptr) {
    out.note = "not compared with measured power: no HTTP client";
    return out;
  }
  auto accuracy = setup::MeasureModelAccuracy(*deps.kube, *deps.http, config, {facts.name});
  if (!accuracy.ok()) {
    out.note = "not compared with measured power: " + accuracy.error().message;
  } else if (const predict::NodeAccuracy* a = accuracy->Find(facts.name)) {
    out.accuracy = *a;
  } else {
    out.note = "not compared with measured power: " + (accuracy->not_compared.empty()
                                                           ? std::string("no numbers")
                                                           : accuracy->not_compared[0].reason);
  }
  return out;
}

json NodeModelToJson(const std::optional<ExplainReport::NodeModel>& m) {
  if (!m) return nullptr;
  json out = {
      {"node", m->node}, {"model", m->model}, {"powerSource", m->power_source}, {"note", m->note}};
  if (m->accuracy) {
    out["predictedWatts"] = m->accuracy->predicted_watts;
    out["measuredWatts"] = m->accuracy->measured_watts;
    out["errorWatts"] = m->accuracy->error_watts;
    out["relativeError"] = m->accuracy->relative_error;
  }
  return out;
}

}  // namespace

std::string_view DecisionSourceName(DecisionSource source) {
  switch (source) {
    case DecisionSource::kRecorded:
      return "recorded";
    case DecisionSource::kExtender:
      return "extender";
    case DecisionSource::kLocal:
      return "local";
    case DecisionSource::kNone:
      break;
  }
  return "none";
}

Result<ExplainReport> ExplainPod(const ExplainRequest& request,
                                 const config::PowerctlConfig& config, const ExplainDeps& deps) {
  if (deps.kube == nullptr) return MakeError(ErrorCode::kInternal, "ExplainPod: no kube client");
  kube::Client& kube = *deps.kube;
  auto pod = kube.Get("/api/v1/namespaces/" + request.namespace_ + "/pods/" + request.name);
  if (!pod.ok()) {
    if (pod.error().code == ErrorCode::kNotFound) {
      return MakeError(ErrorCode::kNotFound,
                       fmt::format("pod {}/{} not found", request.namespace_, request.name));
    }
    return pod.error();
  }
  ExplainReport report;
  report.pod = Summarise(*pod);
  const PodSummary& summary = report.pod;
  POWERCTL_TRY(raw_events, ListPodEvents(kube, summary.namespace_, summary.name, summary.uid));
  // The extender's decisions: single Events on the pod (earlier versions) and batches.
  POWERCTL_TRY(batches, ListDecisionBatches(kube, summary.namespace_, summary.uid));
  // A batch of one decision is also an Event on the pod: each Event is read once.
  std::vector<json> decision_events = raw_events;
  std::set<std::string> listed;
  for (const json& e : raw_events) listed.insert(StringField(e, {"metadata", "uid"}));
  for (json& batch : batches) {
    const std::string uid = StringField(batch, {"metadata", "uid"});
    if (uid.empty() || listed.count(uid) == 0) decision_events.push_back(std::move(batch));
  }
  for (const json& e : raw_events) {
    PodEvent event = PodEventFromJson(e);
    if (SchedulingEvent(event, summary.scheduler_name)) report.events.push_back(std::move(event));
  }
  SchedulerStatus scheduler =
      CheckScheduler(kube, summary.scheduler_name, config, report.events, deps.now);
  report.checks = scheduler.checks;

  POWERCTL_TRY(objects, ListClusterObjects(kube));
  const std::string key = PodKey(*pod);
  std::map<std::string, scoring::NodeLoad> loads = scoring::NodeLoadsOf(objects.pods, key);
  auto resources = kube::EffectivePodResources(*pod);
  if (!resources.ok()) report.notes.push_back("pod resources: " + resources.error().message);
  std::vector<std::string> names, candidates;
  std::map<std::string, std::vector<scoring::FitFailure>> fit;
  for (const json& node : objects.nodes) {
    const std::string name = StringField(node, {"metadata", "name"});
    names.push_back(name);
    fit[name] = scoring::CheckNodeFit(*pod, resources.ok() ? *resources : kube::PodResources{},
                                      node, loads[name]);
    if (fit[name].empty()) candidates.push_back(name);
  }

  if (summary.scheduler_name != config.scheduler.name) {
    report.source_text = fmt::format(
        "none: the pod's scheduler {} does not call powerctl's extender (scheduler {} does)",
        summary.scheduler_name, config.scheduler.name);
  } else if (UseRecorded(LatestDecisions(decision_events, summary.name, summary.uid),
                         report.scheduled(), report)) {
    report.source = DecisionSource::kRecorded;
    if (report.scheduled()) report.extender_consulted = true;
  } else if (request.recompute && deps.http != nullptr && !candidates.empty()) {
    LocalScoringDeps local{deps.kube, deps.http, deps.clock, deps.log};
    POWERCTL_TRY(decided, Decide(request.source, *pod, candidates, objects, config, local));
    report.source = decided.from_extender ? DecisionSource::kExtender : DecisionSource::kLocal;
    report.source_text = fmt::format(
        "recomputed now {} (no decision recorded on the pod; events expire after an hour): {}",
        decided.from_extender ? "by the running extender" : "locally", decided.answered_by);
    report.filter = std::move(decided.filter);
    report.prioritize = std::move(decided.prioritize);
    report.warnings = std::move(decided.warnings);
  } else {
    report.source_text = "none: no decision recorded on the pod";
  }
  if (report.scheduled() && summary.scheduler_name == config.scheduler.name &&
      report.source != DecisionSource::kRecorded) {
    JudgeConsulted(report.events, candidates.size(), report);
  }
  for (const auto* d : {&report.filter, &report.prioritize}) {
    report.notes.insert(report.notes.end(), d->notes.begin(), d->notes.end());
  }
  report.nodes = RankNodes(names, fit, report.filter, report.prioritize);
  report.objective = RankingObjective(report.nodes);

  if (report.scheduled()) {
    const scoring::NodeDecision* best = BestScored(report.prioritize);
    const NodeScore* chosen = nullptr;
    for (const NodeScore& n : report.nodes) {
      if (n.node == summary.node_name) chosen = &n;
    }
    const std::int64_t chosen_score =
        chosen != nullptr && chosen->scored ? chosen->scored->score.value_or(-1) : -1;
    if (best != nullptr && best->score.value_or(0) > chosen_score) {
      report.notes.push_back(fmt::format(
          "the extender scored {} best; kube-scheduler added its own plugins' scores and chose {}",
          best->node, summary.node_name));
    }
    report.why_chosen = WhyChosen(report.nodes, summary.node_name);
    for (const json& node : objects.nodes) {
      if (StringField(node, {"metadata", "name"}) != summary.node_name) continue;
      report.causes = MisplacedCauses(*pod, node);
      report.node_model = ModelOnNode(node, config, deps);
    }
    return report;
  }
  CauseInputs causes;
  causes.pod_namespace = summary.namespace_;
  causes.pod_name = summary.name;
  causes.scheduler_name = summary.scheduler_name;
  causes.scheduler_running = scheduler.running;
  causes.scheduler_fix = scheduler.fix;
  causes.pod_group = StringField(*pod, {"metadata", "labels", "podGroup"});
  causes.telemetry_policy = StringField(*pod, {"metadata", "labels", "telemetry-policy"});
  causes.nodes = &report.nodes;
  causes.extender_error = report.filter.error;
  causes.scheduler_message = summary.pod_scheduled_message;
  if (causes.scheduler_message.empty()) {
    for (const PodEvent& e : report.events) {
      if (e.reason == "FailedScheduling") causes.scheduler_message = e.message;  // the newest
    }
  }
  causes.pod_group_now = GroupNow(*pod, objects);
  causes.drained_nodes_that_fit = consolidate::DrainedNodesThatFit(*pod, objects.nodes, loads);
  if (report.source == DecisionSource::kRecorded) {
    const scoring::Decision& shown = report.filter.verb.empty() ? report.prioritize : report.filter;
    causes.decision_age = AgeText(shown.at_unix_ms, deps.now);
  }
  report.causes = RankCauses(causes);
  return report;
}

json ExplainReportToJson(const ExplainReport& r) {
  json checks = json::array();
  for (const setup::CheckResult& c : r.checks) {
    checks.push_back({{"id", c.id},
                      {"status", setup::CheckStatusName(c.status)},
                      {"message", c.message},
                      {"fix", c.fix}});
  }
  json events = json::array();
  for (const PodEvent& e : r.events) {
    events.push_back({{"type", e.type},
                      {"reason", e.reason},
                      {"from", e.from},
                      {"count", e.count},
                      {"lastSeen", e.last_seen},
                      {"message", e.message}});
  }
  json nodes = json::array();
  for (const NodeScore& n : r.nodes) {
    json row = NodeScoreToJson(n);
    row["chosen"] = n.node == r.pod.node_name;
    nodes.push_back(std::move(row));
  }
  json causes = json::array();
  for (const Cause& c : r.causes) {
    causes.push_back({{"id", c.id},
                      {"reason", c.reason},
                      {"nodes", c.nodes},
                      {"detail", c.detail},
                      {"fix", c.fix}});
  }
  auto decision = [](const scoring::Decision& d) {
    return d.verb.empty() ? json(nullptr) : scoring::DecisionToJson(d);
  };
  const PodSummary& p = r.pod;
  const json consulted = r.extender_consulted ? json(*r.extender_consulted) : json(nullptr);
  return {{"kind", "PodExplanation"},
          {"pod",
           {{"namespace", p.namespace_},
            {"name", p.name},
            {"uid", p.uid},
            {"phase", p.phase},
            {"schedulerName", p.scheduler_name},
            {"nodeName", p.node_name},
            {"cpuRequestMillis", p.cpu_request_millis},
            {"memoryRequestBytes", p.memory_request_bytes},
            {"podScheduled",
             {{"status", p.pod_scheduled_status},
              {"reason", p.pod_scheduled_reason},
              {"message", p.pod_scheduled_message}}}}},
          {"scheduled", r.scheduled()},
          {"problem", r.problem()},
          {"checks", checks},
          {"events", events},
          {"decision",
           {{"source", DecisionSourceName(r.source)},
            {"description", r.source_text},
            {"extenderConsulted", consulted},
            {"consultedNote", r.consulted_note},
            {"objective", r.objective},
            {"whyChosen", r.why_chosen},
            {"nodeModel", NodeModelToJson(r.node_model)},
            {"filter", decision(r.filter)},
            {"prioritize", decision(r.prioritize)}}},
          {"nodes", nodes},
          {"causes", causes},
          {"notes", r.notes},
          {"warnings", r.warnings}};
}

}  // namespace powerctl::explain
