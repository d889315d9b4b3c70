// powerctl's scorer in the simulation: the extender's own prioritize (scoring::SchedulingCore)
// over a cluster snapshot and telemetry built from the simulated nodes, so what simulate
// shows is what the server would decide. Usage telemetry holds the CPU the nodes' original
// pods use; pods the simulation binds are in the snapshot as just-bound (Pending) pods, which
// the core adds to usage exactly as it does for pods that metrics cannot show yet.
#include "core/cluster/node_cache.h"
#include "core/common/kube_version.h"
#include "core/kube/pod_resources.h"
#include "core/predict/builtin_model.h"
#include "core/predict/node_params.h"
#include "core/scoring/node_cpu.h"
#include "core/scoring/pod_slots.h"
#include "core/scoring/power_score.h"
#include "core/scoring/scheduling_core.h"
#include "core/simulate/scorers.h"
#include "core/telemetry/telemetry_service.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

namespace powerctl::simulate {
namespace {

// One fixed moment: the simulation's telemetry is never stale and never refreshed.
const auto kSteadyNow = std::chrono::steady_clock::time_point(std::chrono::hours(1000));
const auto kWallNow = std::chrono::system_clock::time_point(std::chrono::hours(500000));

class SimulatedCpu : public telemetry::CpuSource {
 public:
  explicit SimulatedCpu(std::map<std::string, double> cores) : cores_(std::move(cores)) {}
  Result<std::map<std::string, telemetry::Reading>> Fetch(
      const std::vector<telemetry::NodeInfo>& nodes) override {
    std::map<std::string, telemetry::Reading> out;
    for (const auto& n : nodes)
      out[n.name] = telemetry::CpuReading(cores_[n.name], kSteadyNow, "simulated");
    return out;
  }
  std::string Describe() const override { return "simulated"; }

 private:
  std::map<std::string, double> cores_;
};

class SimulatedTemperatures : public telemetry::TemperatureSource {
 public:
  explicit SimulatedTemperatures(std::map<std::string, telemetry::Temperatures> t)
      : temperatures_(std::move(t)) {}
  Result<std::map<std::string, telemetry::Temperatures>> Fetch(
      const std::vector<telemetry::NodeInfo>&) override {
    return temperatures_;
  }
  std::string Describe() const override { return "simulated"; }

 private:
  std::map<std::string, telemetry::Temperatures> temperatures_;
};

telemetry::Reading Temperature(const std::optional<double>& celsius) {
  if (!celsius) return telemetry::MissingReading("no reading in the snapshot", "simulated");
  return telemetry::TemperatureReading(*celsius, kSteadyNow, "simulated");
}

std::shared_ptr<const cluster::PodInfo> PodOf(const nlohmann::json& object, const std::string& node,
                                              bool running) {
  cluster::PodInfo pod = cluster::PodInfoFromJson(object);
  pod.node_name = node;
  pod.phase = running ? "Running" : "Pending";
  // Running pods started long ago are in the usage telemetry already.
  if (running) pod.started = kWallNow - std::chrono::hours(1);
  return std::make_shared<const cluster::PodInfo>(std::move(pod));
}

// The extender's answer before prioritize rounds it to 0..10: the same weighted mean of the
// components that scoring::CombinedScoreOf rounds.
double UnroundedScore(const scoring::NodeDecision& node, const config::ScoringSettings& settings) {
  double weighted = 0;
  double total_weight = 0;
  for (const scoring::Component& c : node.components) {
    const double w = scoring::ComponentWeight(c.name, settings);
    if (!(w > 0) || !std::isfinite(w) || !std::isfinite(c.value)) continue;
    weighted += w * std::clamp(c.value, 0.0, scoring::kMaxComponentValue);
    total_weight += w;
  }
  if (!(total_weight > 0)) return static_cast<double>(node.score.value_or(0));
  return std::clamp(weighted / total_weight, 0.0, scoring::kMaxComponentValue);
}

// Unrounded totals are kept in thousandths of a kube-scheduler point, so ties stay ties.
constexpr std::int64_t kUnroundedScale = 1000;

// The resource scores scheduler.resourceScoring keeps in the generated profile.
std::int64_t ResourceScore(const std::string& choice, OverAllocatable over,
                           const RequestedResources& r) {
  if (choice == config::kResourceScoringSpread) return DefaultSchedulerScore(r);
  if (choice == config::kResourceScoringPack) return MostAllocatedScore(r, over);
  return 0;
}

class PowerctlScorer : public Scorer {
 public:
  PowerctlScorer(const std::vector<NodeRuntime>& nodes, const config::PowerctlConfig& config,
                 const ScorerOptions& scorer_options)
      : config_(config), options_(scorer_options) {
    // MostAllocated counts requests above allocatable as full from 1.22 (kubernetes PR 102925).
    auto version = KubeVersion::Parse(config.kubernetes_version);
    over_allocatable_ = version.ok() && !version->AtLeast(22) ? OverAllocatable::kScoresZero
                                                              : OverAllocatable::kScoresFull;
    config_.predictor.backend = "builtin";  // the simulation's predictor is the built-in model
    std::map<std::string, double> cores;
    std::map<std::string, telemetry::Temperatures> temperatures;
    std::vector<telemetry::NodeInfo> infos;
    snapshot_ = std::make_shared<cluster::ClusterSnapshot>();
    for (const NodeRuntime& n : nodes) {
      const SimNode& sim = *n.node;
      cluster::NodeState state;
      state.name = sim.name;
      state.cpu_capacity = state.cpu_allocatable = sim.cpu_cores;
      state.memory_capacity = state.memory_allocatable = sim.memory_bytes;
      state.pods_allocatable = sim.max_pods;
      state.info.name = sim.name;
      state.info.cpu_capacity = sim.cpu_cores;
      state.facts.name = sim.name;
      state.facts.labels = sim.labels;
      state.facts.annotations = sim.annotations;
      state.facts.annotations[predict::kIdleWattsAnnotation] =
          fmt::format("{:.3f}", n.belief.idle_watts);
      state.facts.annotations[predict::kMaxWattsAnnotation] =
          fmt::format("{:.3f}", n.belief.max_watts);
      state.facts.annotations[predict::kCurveAnnotation] = fmt::format("{:.3f}", n.belief.curve);
      state.facts.annotations[predict::kTemperatureFactorAnnotation] =
          fmt::format("{:.3f}", n.belief.temperature_factor);
      if (n.belief.points != nullptr) {
        state.facts.annotations[predict::kPowerCurveAnnotation] =
            predict::FormatPowerCurve(*n.belief.points);
      }
      for (const SimPod& p : sim.pods) {
        state.pods.push_back(PodOf(p.object, sim.name, true));
        state.requested.cpu_cores += state.pods.back()->requests.cpu_cores;
      }
      cores[sim.name] = n.base_cpu_used;
      temperatures[sim.name] = {Temperature(sim.ambient), Temperature(sim.cpu1),
                                Temperature(sim.cpu2)};
      infos.push_back(state.info);
      snapshot_->PutNode(std::move(state));
    }
    snapshot_->IndexNodes();
    cpu_ = std::make_unique<SimulatedCpu>(std::move(cores));
    temperature_ = std::make_unique<SimulatedTemperatures>(std::move(temperatures));
    Clock frozen;
    frozen.now = [] { return kSteadyNow; };
    telemetry::TelemetryServiceOptions options;
    options.time.clock = frozen;
    options.time.wall_now = [] { return kWallNow; };
    telemetry_ = std::make_unique<telemetry::TelemetryService>(
        *cpu_, *temperature_, [infos] { return Result<std::vector<telemetry::NodeInfo>>(infos); },
        options);
    (void)telemetry_->Readings(telemetry::Wait::kIfEmpty);  // fetch once, synchronously

    scoring::SchedulingDeps deps;
    deps.config = &config_;
    deps.telemetry = telemetry_.get();
    deps.predictor = &predictor_;
    deps.snapshot = [this] { return std::shared_ptr<const cluster::ClusterSnapshot>(snapshot_); };
    deps.clock = frozen;
    deps.workers = 1;
    deps.wall_now = [] { return kWallNow; };
    core_ = std::make_unique<scoring::SchedulingCore>(std::move(deps));

    incremental_ = !options_.unrounded_extender_scores && !options_.score_every_candidate &&
                   !(config_.scoring.real_usage_weight > 0) && snapshot_->policies.empty() &&
                   snapshot_->invalid_policies.empty();
    for (const NodeRuntime& n : nodes)
      position_.push_back(snapshot_->FindNodePosition(n.node->name));
    version_.assign(nodes.size(), 1);
    inputs_.resize(nodes.size());
  }

  std::vector<std::int64_t> Score(const WorkloadPod& pod, const std::vector<std::size_t>& feasible,
                                  const std::vector<NodeRuntime>& nodes) override {
    if (incremental_) return ScoreIncrementally(pod, feasible, nodes);
    return ScoreThroughPrioritize(pod, feasible, nodes);
  }

  void Placed(const WorkloadPod& pod, std::size_t index,
              const std::vector<NodeRuntime>& nodes) override {
    cluster::NodeState state = *snapshot_->FindNode(nodes[index].node->name);
    state.pods.push_back(PodOf(pod.pod.object, state.name, false));
    state.requested.cpu_cores += static_cast<double>(pod.cpu_request_millis) / 1000.0;
    snapshot_->PutNode(std::move(state));
    ++version_[index];
  }

  void Removed(const WorkloadPod& pod, std::size_t index,
               const std::vector<NodeRuntime>& nodes) override {
    cluster::NodeState state = *snapshot_->FindNode(nodes[index].node->name);
    const cluster::PodInfo removed = cluster::PodInfoFromJson(pod.pod.object);
    for (auto it = state.pods.rbegin(); it != state.pods.rend(); ++it) {
      if ((*it)->Key() == removed.Key() && (*it)->phase == "Pending") {
        state.pods.erase(std::next(it).base());
        state.requested.cpu_cores -= static_cast<double>(pod.cpu_request_millis) / 1000.0;
        break;
      }
    }
    snapshot_->PutNode(std::move(state));
    ++version_[index];
  }

 private:
  // What Prioritize computes for one candidate on its own, kept until the node changes: its
  // prepared power inputs and the CPU its usage metrics cannot show yet.
  struct NodeInputs {
    std::uint64_t version = 0;  // of the node; 0: never computed
    scoring::PreparedPtr prepared;
    double unseen_cpu = 0;
    std::optional<double> used;  // cores, as EstimatePower adds them; nullopt: no reading
    double capacity = 0;
  };
  // One candidate's power estimate for one pod CPU. Besides the node and the pod's CPU, an
  // estimate depends on the cluster (the candidates' average pod, ReachableCpu) only through
  // the fill limit (FillLimitFraction) and whether the reachable CPU is below the node's free
  // CPU (SlotShareFactor): it is reused while both are the same.
  struct CachedEstimate {
    std::uint64_t version = 0;
    double fill_limit = 1.0;
    bool slot_short = false;
    predict::PowerEstimate estimate;
  };

  // Prioritize's verdicts (and so its argmax) without its per-node decision records: each
  // candidate's estimate from EstimatePower and ApplySlotShare as Prioritize calls them,
  // computed again only where the node or its fill limit changed; then every candidate's
  // power value across all of them (PowerScoreValues, ScorePower's numbers) and
  // CombinedScoreOf. Used only where the power component is the only one (see
  // incremental_); a unit test holds it equal to ScoreThroughPrioritize.
  std::vector<std::int64_t> ScoreIncrementally(const WorkloadPod& pod,
                                               const std::vector<std::size_t>& feasible,
                                               const std::vector<NodeRuntime>& nodes) {
    auto pod_resources = kube::EffectivePodResources(pod.pod.object);
    const double pod_cpu = scoring::PodPowerCpuCores(
        pod_resources.ok() ? *pod_resources : kube::PodResources{}, nullptr);
    const bool fill = config_.scoring.objective == config::kObjectiveFill;
    std::vector<const cluster::NodeState*> states(feasible.size());
    for (std::size_t k = 0; k < feasible.size(); ++k)
      states[k] = snapshot_->nodes[position_[feasible[k]]].get();
    std::vector<double> reachable;
    if (fill) reachable = scoring::ReachableCpu(states, pod_cpu);

    std::vector<CachedEstimate>& cache = estimates_[pod_cpu];
    if (cache.empty()) cache.resize(nodes.size());
    std::vector<std::size_t> misses;  // positions in `feasible`
    for (std::size_t k = 0; k < feasible.size(); ++k) {
      const std::size_t i = feasible[k];
      NodeInputs& in = Inputs(i, *states[k]);
      double limit = 1.0;
      bool slot_short = false;
      if (fill) {
        if (in.used) limit = predict::FillLimitFraction(*in.used, in.capacity, reachable[k]);
        if (states[k]->cpu_allocatable) {
          slot_short = reachable[k] < *states[k]->cpu_allocatable - states[k]->requested.cpu_cores;
        }
      }
      CachedEstimate& c = cache[i];
      if (c.version != in.version || c.fill_limit != limit || c.slot_short != slot_short) {
        c.version = in.version;
        c.fill_limit = limit;
        c.slot_short = slot_short;
        misses.push_back(k);
      }
    }
    if (!misses.empty()) {
      std::vector<const predict::PreparedNode*> inputs;
      std::vector<double> unseen, miss_reachable;
      std::vector<const cluster::NodeState*> miss_states;
      for (std::size_t k : misses) {
        const NodeInputs& in = inputs_[feasible[k]];
        inputs.push_back(in.prepared.get());
        unseen.push_back(in.unseen_cpu);
        miss_states.push_back(states[k]);
        if (fill) miss_reachable.push_back(reachable[k]);
      }
      std::vector<predict::PowerEstimate> power =
          predict::EstimatePower(inputs, unseen, pod_cpu, predictor_,
                                 std::chrono::milliseconds(1000), nullptr, fill, miss_reachable);
      if (fill) scoring::ApplySlotShare(power, miss_states, miss_reachable, pod_cpu);
      for (std::size_t m = 0; m < misses.size(); ++m)
        cache[feasible[misses[m]]].estimate = std::move(power[m]);
    }
    std::vector<const predict::PowerEstimate*> power(feasible.size());
    for (std::size_t k = 0; k < feasible.size(); ++k) power[k] = &cache[feasible[k]].estimate;
    const std::vector<double> values = scoring::PowerScoreValues(power, config_.scoring);
    const std::int64_t weight = config_.extender.weight * (kMaxNodeScore / kMaxExtenderPriority);
    std::vector<std::int64_t> out(feasible.size());
    scoring::ComponentList components;
    components.push_back(scoring::Component{std::string(scoring::kPower), 0, {}});
    for (std::size_t k = 0; k < feasible.size(); ++k) {
      components[0].value = values[k];
      const std::int64_t resources = ResourceScore(
          config_.scheduler.resource_scoring, over_allocatable_, nodes[feasible[k]].WithPod(pod));
      out[k] = scoring::CombinedScoreOf(components, config_.scoring) * weight + resources;
    }
    return out;
  }

  // Node i's pod-independent inputs, prepared again after it changed, as Prioritize prepares
  // them (PreparedNodeCache, UnmeasuredCpuOf).
  NodeInputs& Inputs(std::size_t i, const cluster::NodeState& state) {
    NodeInputs& in = inputs_[i];
    if (in.version == version_[i]) return in;
    in.version = version_[i];
    std::optional<telemetry::TelemetryView> view = telemetry_->View(telemetry::Wait::kNever);
    scoring::PreparedNodeCache::Batch batch = prepared_.Begin(snapshot_->index, &*view, config_);
    scoring::NodeSource source;
    source.facts = &state.facts;
    source.cpu_allocatable = state.cpu_allocatable;
    source.slot = position_[i];
    source.owner = snapshot_->nodes[position_[i]];
    in.prepared = batch.Get(source);
    const telemetry::Reading& used = in.prepared->reading.cpu_cores_used;
    in.unseen_cpu = scoring::UnmeasuredCpuOf(state.pods, used, kWallNow).cores;
    in.used.reset();
    const auto& capacity = in.prepared->reading.cpu_capacity;
    if (used.ok() && capacity && *capacity > 0) {
      in.used = *used.value + in.unseen_cpu;
      in.capacity = *capacity;
    }
    return in;
  }

  std::vector<std::int64_t> ScoreThroughPrioritize(const WorkloadPod& pod,
                                                   const std::vector<std::size_t>& feasible,
                                                   const std::vector<NodeRuntime>& nodes) {
    std::vector<std::string> names;
    for (std::size_t i : feasible) names.push_back(nodes[i].node->name);
    scoring::Decision d = core_->Prioritize(pod.pod.object, names, nlohmann::json::array());
    const std::int64_t weight = config_.extender.weight * (kMaxNodeScore / kMaxExtenderPriority);
    std::vector<std::int64_t> out;
    for (std::size_t k = 0; k < feasible.size(); ++k) {
      const std::int64_t resources = ResourceScore(
          config_.scheduler.resource_scoring, over_allocatable_, nodes[feasible[k]].WithPod(pod));
      if (options_.unrounded_extender_scores) {
        const double extender = UnroundedScore(d.nodes[k], config_.scoring) *
                                static_cast<double>(weight * kUnroundedScale);
        out.push_back(std::llround(extender) + resources * kUnroundedScale);
      } else {
        out.push_back(d.nodes[k].score.value_or(0) * weight + resources);
      }
    }
    return out;
  }

  config::PowerctlConfig config_;
  ScorerOptions options_;
  OverAllocatable over_allocatable_ = OverAllocatable::kScoresFull;
  std::shared_ptr<cluster::ClusterSnapshot> snapshot_;
  std::unique_ptr<SimulatedCpu> cpu_;
  std::unique_ptr<SimulatedTemperatures> temperature_;
  std::unique_ptr<telemetry::TelemetryService> telemetry_;
  predict::BuiltinPredictor predictor_;
  std::unique_ptr<scoring::SchedulingCore> core_;
  // The incremental path: where Prioritize's score is the power component alone (no
  // real-usage weight, no policies, the extender's rounded score) and the model is the
  // built-in one, whose estimate of a node depends on no other node.
  bool incremental_ = false;
  std::vector<std::size_t> position_;   // per simulated node: its position in snapshot_
  std::vector<std::uint64_t> version_;  // per simulated node, bumped by each change
  std::vector<NodeInputs> inputs_;      // per simulated node
  std::map<double, std::vector<CachedEstimate>> estimates_;  // per pod CPU, per node
  scoring::PreparedNodeCache prepared_;
};

}  // namespace

std::unique_ptr<Scorer> MakePowerctlScorer(const std::vector<NodeRuntime>& nodes,
                                           const config::PowerctlConfig& config,
                                           const ScorerOptions& options) {
  return std::make_unique<PowerctlScorer>(nodes, config, options);
}

}  // namespace powerctl::simulate
