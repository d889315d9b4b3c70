#include "core/scoring/scheduling_core.h"

#include "core/predict/node_power.h"
#include "core/scoring/combine.h"
#include "core/scoring/pod_groups.h"
#include "core/scoring/pod_resources.h"
#include "core/scoring/policies.h"
#include "core/scoring/power_score.h"
#include "core/scoring/real_usage.h"
#include "core/telemetry/metrics_api.h"
#include "core/telemetry/quantity.h"

#include <fmt/format.h>

#include <map>

namespace powerctl::scoring {
namespace {

using json = nlohmann::json;

// What one candidate looks like, from the cache or else from the request's Node object.
struct Candidate {
  const cluster::NodeState* cached = nullptr;
  predict::NodeFacts facts;
  telemetry::NodeInfo info;
  std::optional<double> cpu_allocatable;
  std::optional<double> memory_allocatable;
};

std::optional<double> Allocatable(const json& node, const char* resource, bool cpu) {
  const json* value = nullptr;
  if (node.contains("status") && node["status"].is_object()) {
    const json& status = node["status"];
    if (status.contains("allocatable") && status["allocatable"].is_object() &&
        status["allocatable"].contains(resource) && status["allocatable"][resource].is_string()) {
      value = &status["allocatable"][resource];
    }
  }
  if (value == nullptr) return std::nullopt;
  auto parsed = cpu ? telemetry::ParseCpuCores(value->get<std::string>())
                    : telemetry::ParseBytes(value->get<std::string>());
  if (!parsed.ok()) return std::nullopt;
  return *parsed;
}

std::vector<Candidate> Candidates(const std::vector<std::string>& nodes, const json& node_items,
                                  const cluster::ClusterSnapshot* snapshot) {
  std::map<std::string, const json*> items;
  if (node_items.is_array()) {
    for (const json& item : node_items) {
      predict::NodeFacts facts = predict::NodeFactsFromJson(item);
      if (!facts.name.empty()) items[facts.name] = &item;
    }
  }
  std::vector<Candidate> out;
  for (const std::string& name : nodes) {
    Candidate c;
    c.facts.name = name;
    c.info.name = name;
    auto it = snapshot != nullptr ? snapshot->nodes.find(name) : decltype(snapshot->nodes.end()){};
    if (snapshot != nullptr && it != snapshot->nodes.end()) {
      c.cached = &it->second;
      c.facts = it->second.facts;
      c.info = it->second.info;
      c.cpu_allocatable = it->second.cpu_allocatable;
      c.memory_allocatable = it->second.memory_allocatable;
    } else if (auto item = items.find(name); item != items.end()) {
      c.facts = predict::NodeFactsFromJson(*item->second);
      c.info = telemetry::NodeInfoFromJson(*item->second);
      c.cpu_allocatable = Allocatable(*item->second, "cpu", true);
      c.memory_allocatable = Allocatable(*item->second, "memory", false);
    }
    out.push_back(std::move(c));
  }
  return out;
}

Decision NewDecision(const char* verb, const json& pod, const SchedulingDeps& deps) {
  Decision d;
  d.verb = verb;
  SetPodIdentity(d, pod);
  d.at_unix_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(deps.wall_now().time_since_epoch())
          .count();
  return d;
}

// CPU requested on the node by pods the usage metrics cannot include yet.
double PendingCpu(const cluster::NodeState& node, std::chrono::system_clock::time_point now,
                  int* count) {
  double cores = 0;
  for (const cluster::PodInfo& pod : node.pods) {
    bool recent = pod.phase == "Pending" || pod.start_time.empty();
    if (!recent) {
      auto started = telemetry::ParseRfc3339(pod.start_time);
      recent = !started || now - *started < kUsageMetricsLag;
    }
    if (recent) {
      cores += pod.requests.cpu_cores;
      ++*count;
    }
  }
  return cores;
}

MetricValues PolicyValues(const manifests::Policy& policy, const std::vector<Candidate>& candidates,
                          MetricSource* source) {
  std::vector<telemetry::NodeInfo> infos;
  for (const Candidate& c : candidates) infos.push_back(c.info);
  if (source != nullptr) return CollectMetricValues(*source, PolicyMetrics(policy), infos);
  MetricValues values;
  for (const std::string& metric : PolicyMetrics(policy)) {
    for (const Candidate& c : candidates)
      values[metric][c.info.name] = {std::nullopt, "no policy metric source"};
  }
  return values;
}

}  // namespace

SchedulingCore::SchedulingCore(SchedulingDeps deps) : deps_(std::move(deps)) {}

Decision SchedulingCore::Filter(const json& pod, const std::vector<std::string>& nodes,
                                const json& node_items) const {
  Decision d = NewDecision(kVerbFilter, pod, deps_);
  auto snapshot = deps_.snapshot ? deps_.snapshot() : nullptr;
  std::map<std::string, std::pair<std::string, bool>> rejected;  // node -> (reason, unresolvable)

  cluster::PodInfo self = cluster::PodInfoFromJson(pod);
  if (snapshot != nullptr) {
    PodGroupVerdict group =
        EvaluatePodGroup(self, snapshot->PodGroup(self.namespace_, self.labels["podGroup"]));
    if (!group.note.empty()) d.notes.push_back(group.note);
    // Waiting for the rest of the group is resolvable: preemption cannot help, but it must not
    // mark the pod unschedulable for a reason it will never recover from.
    for (const auto& [node, reason] : PodGroupFailedNodes(group, nodes))
      rejected[node] = {reason, false};
    PodPolicy policy =
        FindPodPolicy(self.namespace_, self.labels, snapshot->policies, snapshot->invalid_policies);
    if (!policy.note.empty()) d.notes.push_back(policy.note);
    if (policy.policy != nullptr && rejected.empty()) {
      std::vector<Candidate> candidates = Candidates(nodes, node_items, snapshot.get());
      PolicyFilterResult result = FilterNodes(
          *policy.policy, nodes, PolicyValues(*policy.policy, candidates, deps_.policy_metrics));
      for (const auto& [node, reason] : result.failed) rejected[node] = {reason, false};
      for (const auto& [node, note] : result.notes) d.notes.push_back(node + ": " + note);
    }
  } else {
    d.notes.push_back("no cluster cache: pod groups and policies not checked");
  }
  for (const std::string& node : nodes) {
    NodeDecision n;
    n.node = node;
    auto it = rejected.find(node);
    n.passed = it == rejected.end();
    if (it != rejected.end()) {
      n.reason = it->second.first;
      n.unresolvable = it->second.second;
    }
    d.nodes.push_back(std::move(n));
  }
  return d;
}

Decision SchedulingCore::Prioritize(const json& pod, const std::vector<std::string>& nodes,
                                    const json& node_items) const {
  Decision d = NewDecision(kVerbPrioritize, pod, deps_);
  const manifests::PowerctlConfig& config = *deps_.config;
  auto snapshot = deps_.snapshot ? deps_.snapshot() : nullptr;
  std::vector<Candidate> candidates = Candidates(nodes, node_items, snapshot.get());

  auto resources = EffectivePodResources(pod);
  PodResources pod_resources = resources.ok() ? *resources : PodResources{};
  if (!resources.ok()) d.notes.push_back("pod resources: " + resources.error().message);
  std::string cpu_note;
  double pod_cpu = PodPowerCpuCores(pod_resources, &cpu_note);
  if (!cpu_note.empty()) d.notes.push_back(cpu_note);

  // Telemetry as cached (never waits), plus CPU the metrics cannot show yet.
  std::map<std::string, telemetry::NodeReading> readings;
  if (deps_.telemetry != nullptr) {
    auto cached = deps_.telemetry->Readings(telemetry::Wait::kNever, nodes);
    if (cached.ok())
      readings = std::move(*cached);
    else
      d.notes.push_back("telemetry: " + cached.error().message);
  }
  auto wall_now = deps_.wall_now();
  for (const Candidate& c : candidates) {
    telemetry::NodeReading& r = readings[c.facts.name];
    r.node = c.facts.name;
    if (!r.cpu_capacity) r.cpu_capacity = c.cpu_allocatable;
    if (deps_.telemetry == nullptr && r.cpu_cores_used.missing_reason.empty()) {
      r.cpu_cores_used = telemetry::MissingReading("no telemetry configured");
    }
    int pending = 0;
    if (c.cached != nullptr && r.cpu_cores_used.ok()) {
      double extra = PendingCpu(*c.cached, wall_now, &pending);
      if (pending > 0) *r.cpu_cores_used.value += extra;
    }
  }

  std::vector<predict::NodeFacts> facts;
  for (const Candidate& c : candidates) facts.push_back(c.facts);
  std::vector<predict::NodePower> power;
  if (deps_.predictor != nullptr) {
    predict::PowerQuery query;
    query.extra_cpu_cores = pod_cpu;
    query.deadline = deps_.deadline;
    query.now = deps_.clock.now();
    power = predict::PredictNodePower(facts, readings, config, *deps_.predictor, query);
  } else {
    for (const auto& f : facts)
      power.push_back(predict::NodePower{.node = f.name, .error = "no predictor"});
  }
  std::vector<PowerScore> power_scores = ScorePower(power, config.scoring);

  // scheduleonmetric of the pod's policy, if it has one.
  PolicyScores policy_scores;
  if (snapshot != nullptr) {
    cluster::PodInfo self = cluster::PodInfoFromJson(pod);
    PodPolicy policy =
        FindPodPolicy(self.namespace_, self.labels, snapshot->policies, snapshot->invalid_policies);
    if (!policy.note.empty()) d.notes.push_back(policy.note);
    if (policy.policy != nullptr) {
      policy_scores = ScoreNodes(*policy.policy, nodes,
                                 PolicyValues(*policy.policy, candidates, deps_.policy_metrics),
                                 static_cast<double>(config.scoring.unknown_score));
    }
  }

  std::vector<RealUsageScore> usage_scores;
  if (config.scoring.real_usage_weight > 0) {
    std::vector<NodeUsage> usage;
    for (const Candidate& c : candidates) {
      const telemetry::NodeReading& r = readings[c.facts.name];
      NodeUsage u;
      u.node = c.facts.name;
      u.cpu_used_cores = r.cpu_cores_used.value;
      u.cpu_allocatable_cores = c.cpu_allocatable;
      u.memory_allocatable_bytes = c.memory_allocatable;
      if (!r.cpu_cores_used.ok()) u.missing_reason = r.cpu_cores_used.missing_reason;
      usage.push_back(u);
    }
    usage_scores = ScoreRealUsage(usage, config.scoring);
  }

  for (std::size_t i = 0; i < nodes.size(); ++i) {
    std::vector<Component> components = {power_scores[i].component};
    if (policy_scores.applies) {
      auto it = policy_scores.nodes.find(nodes[i]);
      if (it != policy_scores.nodes.end()) {
        components.push_back(Component{std::string(kPolicy), it->second.score, it->second.reason});
      }
    }
    if (!usage_scores.empty()) components.push_back(usage_scores[i].component);
    CombinedScore combined = Combine(std::move(components), config.scoring);
    NodeDecision n;
    n.node = nodes[i];
    n.components = std::move(combined.components);
    n.score = combined.score;
    d.nodes.push_back(std::move(n));
  }
  return d;
}

}  // namespace powerctl::scoring
