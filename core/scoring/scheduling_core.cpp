#include "core/scoring/scheduling_core.h"

#include "core/common/json_fields.h"
#include "core/common/worker_pool.h"
#include "core/kube/pod_resources.h"
#include "core/kube/quantity.h"
#include "core/predict/node_power.h"
#include "core/scoring/combine.h"
#include "core/scoring/node_cpu.h"
#include "core/scoring/pod_groups.h"
#include "core/scoring/pod_slots.h"
#include "core/scoring/policies.h"
#include "core/scoring/power_score.h"
#include "core/scoring/real_usage.h"
#include "core/telemetry/metrics_api.h"

#include <fmt/format.h>

#include <limits>
#include <map>

namespace powerctl::scoring {
namespace {

using json = nlohmann::json;

// Below this many nodes per chunk, starting a thread costs more than it saves.
constexpr std::size_t kNodesPerChunk = 1024;

// What one candidate looks like, from the cache or else from the request's Node object.
struct Candidate {
  const cluster::NodeState* cached = nullptr;  // owned by source.owner
  struct FromRequest {
    predict::NodeFacts facts;
    telemetry::NodeInfo info;
  };
  std::unique_ptr<FromRequest> from_request;  // set when not cached
  NodeSource source;
  const telemetry::NodeInfo* info = nullptr;
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
  auto parsed = cpu ? kube::ParseCpuCores(value->get<std::string>())
                    : kube::ParseBytes(value->get<std::string>());
  if (!parsed.ok()) return std::nullopt;
  return *parsed;
}

// The request's Node objects by name, for nodes the cache lacks (full Nodes mode).
class RequestNodes {
 public:
  explicit RequestNodes(const json& node_items) {
    if (!node_items.is_array()) return;
    for (const json& item : node_items) {
      const json* n = FindField(item, {"metadata", "name"});
      if (n != nullptr && n->is_string()) items_[n->get<std::string>()] = &item;
    }
  }
  const json* Find(const std::string& name) const {
    auto it = items_.find(name);
    return it == items_.end() ? nullptr : it->second;
  }

 private:
  std::map<std::string, const json*, std::less<>> items_;
};

// Cached candidates hold their node (not the snapshot: prepared inputs outlive the request,
// and must not pin whole old snapshots); only nodes the cache lacks are built from the request.
void FillCandidate(Candidate& c, const std::string& name, const RequestNodes& items,
                   const cluster::ClusterSnapshot* snapshot) {
  std::size_t at = snapshot != nullptr ? snapshot->FindNodePosition(name) : cluster::kNoNode;
  if (at != cluster::kNoNode) {
    const cluster::NodePtr& cached = snapshot->nodes[at];
    c.cached = cached.get();
    c.source.facts = &cached->facts;
    c.source.cpu_allocatable = cached->cpu_allocatable;
    c.source.slot = at;
    c.info = &cached->info;
    c.memory_allocatable = cached->memory_allocatable;
    c.source.owner = cached;
    return;
  }
  c.from_request = std::make_unique<Candidate::FromRequest>();
  if (const json* item = items.Find(name); item != nullptr) {
    c.from_request->facts = predict::NodeFactsFromJson(*item);
    c.from_request->info = telemetry::NodeInfoFromJson(*item);
    c.source.cpu_allocatable = Allocatable(*item, "cpu", true);
    c.memory_allocatable = Allocatable(*item, "memory", false);
  }
  c.from_request->facts.name = name;
  c.from_request->info.name = name;
  c.source.facts = &c.from_request->facts;
  c.info = &c.from_request->info;
}

std::vector<Candidate> Candidates(const std::vector<std::string>& nodes, const json& node_items,
                                  const cluster::ClusterSnapshot* snapshot, WorkerPool& pool) {
  RequestNodes items(node_items);
  std::vector<Candidate> out(nodes.size());
  pool.ForEachChunk(nodes.size(), kNodesPerChunk, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) FillCandidate(out[i], nodes[i], items, snapshot);
  });
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

MetricValues PolicyValues(const config::Policy& policy, const std::vector<Candidate>& candidates,
                          MetricSource* source) {
  std::vector<telemetry::NodeInfo> infos;
  for (const Candidate& c : candidates) infos.push_back(*c.info);
  if (source != nullptr) return CollectMetricValues(*source, config::PolicyMetrics(policy), infos);
  MetricValues values;
  for (const std::string& metric : config::PolicyMetrics(policy)) {
    for (const Candidate& c : candidates)
      values[metric][c.info->name] = {std::nullopt, "no policy metric source"};
  }
  return values;
}

}  // namespace

SchedulingCore::SchedulingCore(SchedulingDeps deps)
    : deps_(std::move(deps)),
      prepared_(std::make_shared<PreparedNodeCache>()),
      pool_(std::make_shared<WorkerPool>((deps_.workers > 0 ? deps_.workers : DefaultWorkers()) -
                                         1)) {}

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
      std::vector<Candidate> candidates = Candidates(nodes, node_items, snapshot.get(), *pool_);
      PolicyFilterResult result = FilterNodes(
          *policy.policy, nodes, PolicyValues(*policy.policy, candidates, deps_.policy_metrics));
      for (const auto& [node, reason] : result.failed) rejected[node] = {reason, false};
      for (const auto& [node, note] : result.notes) d.notes.push_back(node + ": " + note);
    }
  } else {
    d.notes.push_back("no cluster cache: pod groups and policies not checked");
  }
  d.nodes.reserve(nodes.size());
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

Decision SchedulingCore::Prioritize(const json& pod, std::vector<std::string> nodes,
                                    const json& node_items, PrioritizeStats* stats) const {
  Decision d = NewDecision(kVerbPrioritize, pod, deps_);
  const config::PowerctlConfig& config = *deps_.config;
  auto snapshot = deps_.snapshot ? deps_.snapshot() : nullptr;

  auto resources = kube::EffectivePodResources(pod);
  kube::PodResources pod_resources = resources.ok() ? *resources : kube::PodResources{};
  if (!resources.ok()) d.notes.push_back("pod resources: " + resources.error().message);
  std::string cpu_note;
  double pod_cpu = PodPowerCpuCores(pod_resources, &cpu_note);
  if (!cpu_note.empty()) d.notes.push_back(cpu_note);

  // One pass per node: find it, take its prepared inputs (from cached telemetry, never
  // waiting), and add the CPU the usage metrics cannot show yet. (One pass, not three: each
  // pass wakes the pool's threads, which cost more than the work of a small cluster.)
  std::optional<telemetry::TelemetryView> view;
  if (deps_.telemetry != nullptr) view = deps_.telemetry->View(telemetry::Wait::kNever);
  RequestNodes items(node_items);
  std::vector<Candidate> candidates(nodes.size());
  std::vector<PreparedPtr> prepared(nodes.size());
  std::vector<double> unseen_cpu(nodes.size(), 0.0);
  std::vector<const predict::PreparedNode*> inputs(nodes.size());
  const auto wall_now = deps_.wall_now();
  std::size_t prepared_now = 0;
  const bool fill = config.scoring.objective == config::kObjectiveFill;
  std::vector<const cluster::NodeState*> cached;
  std::vector<double> reachable;
  // Nodes whose estimate is remembered from an earlier call (pods of a Deployment are alike),
  // and the others, which the model is asked about.
  std::vector<predict::PowerEstimate> power(nodes.size());
  std::vector<std::size_t> ask;
  std::vector<EstimateKey> keys(nodes.size());
  const bool builtin_repeats =
      deps_.predictor != nullptr && deps_.predictor->RepeatsAnswers(predict::BuiltinEndpoint());
  auto remembers = [&](std::size_t i) {
    const predict::PreparedNode& p = *prepared[i];
    return builtin_repeats && candidates[i].cached != nullptr &&
           (p.model == nullptr || p.model->backend == "builtin");
  };
  {
    PreparedNodeCache::Batch batch = prepared_->Begin(
        snapshot != nullptr ? snapshot->index : nullptr, view ? &*view : nullptr, config);
    pool_->ForEachChunk(nodes.size(), kNodesPerChunk, [&](std::size_t begin, std::size_t end) {
      for (std::size_t i = begin; i < end; ++i) {
        Candidate& c = candidates[i];
        FillCandidate(c, nodes[i], items, snapshot.get());
        prepared[i] = batch.Get(c.source);
        inputs[i] = prepared[i].get();
        if (c.cached != nullptr) {
          unseen_cpu[i] =
              UnmeasuredCpuOf(c.cached->pods, prepared[i]->reading.cpu_cores_used, wall_now).cores;
        }
      }
    });
    prepared_now = batch.misses();
    if (deps_.predictor != nullptr) {
      if (fill) {
        cached.reserve(candidates.size());
        for (const Candidate& c : candidates) cached.push_back(c.cached);
        reachable = ReachableCpu(cached, pod_cpu);
      }
      ask.reserve(nodes.size());
      for (std::size_t i = 0; i < nodes.size(); ++i) {
        keys[i] = EstimateKey{unseen_cpu[i], pod_cpu, fill ? reachable[i] : 0.0, fill};
        std::optional<predict::PowerEstimate> kept;
        if (remembers(i)) kept = batch.Remembered(candidates[i].source.slot, inputs[i], keys[i]);
        if (kept) {
          power[i] = std::move(*kept);
        } else {
          ask.push_back(i);
        }
      }
    }
  }

  if (deps_.predictor != nullptr) {
    if (!ask.empty()) {
      std::vector<const predict::PreparedNode*> ask_inputs;
      std::vector<double> ask_unseen, ask_reachable;
      ask_inputs.reserve(ask.size());
      ask_unseen.reserve(ask.size());
      for (std::size_t i : ask) {
        ask_inputs.push_back(inputs[i]);
        ask_unseen.push_back(unseen_cpu[i]);
        if (fill) ask_reachable.push_back(reachable[i]);
      }
      std::vector<predict::PowerEstimate> asked =
          predict::EstimatePower(ask_inputs, ask_unseen, pod_cpu, *deps_.predictor, deps_.deadline,
                                 pool_.get(), fill, ask_reachable);
      const cluster::NodeIndexPtr index = snapshot != nullptr ? snapshot->index : nullptr;
      for (std::size_t k = 0; k < ask.size(); ++k) {
        const std::size_t i = ask[k];
        if (remembers(i))
          prepared_->Remember(index, candidates[i].source.slot, inputs[i], keys[i], asked[k]);
        power[i] = std::move(asked[k]);
      }
    }
    // What is remembered is the model's estimate; the pod-slot factor is applied to every
    // estimate, remembered or new.
    if (fill) ApplySlotShare(power, cached, reachable, pod_cpu);
  } else {
    for (auto& p : power) p.error = "no predictor";
  }
  std::string power_range;
  std::vector<PowerScore> power_scores = ScorePower(power, config.scoring, &power_range);
  if (!power_range.empty()) d.notes.push_back(std::move(power_range));
  if (stats != nullptr) {
    stats->prepared = prepared_now;
    stats->reused = nodes.size() - prepared_now;
    for (const predict::PowerEstimate& p : power) {
      if (p.overcommitted) ++stats->overcommitted;
      if (p.delta()) {
        ++stats->predicted;
      } else {
        ++stats->unknown;
      }
    }
  }

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
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      const Candidate& c = candidates[i];
      const telemetry::Reading& used = prepared[i]->reading.cpu_cores_used;
      NodeUsage u;
      u.node = nodes[i];
      u.cpu_used_cores = used.value;
      if (used.ok()) *u.cpu_used_cores += unseen_cpu[i];
      u.cpu_allocatable_cores = c.source.cpu_allocatable;
      u.memory_allocatable_bytes = c.memory_allocatable;
      if (!used.ok()) u.missing_reason = used.missing_reason;
      usage.push_back(u);
    }
    usage_scores = ScoreRealUsage(usage, config.scoring);
  }

  d.nodes.resize(nodes.size());
  pool_->ForEachChunk(nodes.size(), kNodesPerChunk, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) {
      NodeDecision& n = d.nodes[i];
      ComponentList& components = n.components;  // built in place: 5,000 of them per call
      components.push_back(std::move(power_scores[i].component));
      if (policy_scores.applies) {
        auto it = policy_scores.nodes.find(nodes[i]);
        if (it != policy_scores.nodes.end()) {
          components.push_back(
              Component{std::string(kPolicy), it->second.score, it->second.reason});
        }
      }
      if (!usage_scores.empty()) components.push_back(usage_scores[i].component);
      n.score = CombinedScoreOf(components, config.scoring);
      n.node = std::move(nodes[i]);  // its last use
      n.watts_now = power[i].watts_now;
      n.watts_after = power[i].watts_after;
    }
  });
  return d;
}

}  // namespace powerctl::scoring
