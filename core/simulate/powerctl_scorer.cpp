// powerctl's scorer in the simulation: the extender's own prioritize (scoring::SchedulingCore)
// over a cluster snapshot and telemetry built from the simulated nodes, so what simulate
// shows is what the server would decide. Usage telemetry holds the CPU the nodes' original
// pods use; pods the simulation binds are in the snapshot as just-bound (Pending) pods, which
// the core adds to usage exactly as it does for pods that metrics cannot show yet.
#include "core/cluster/node_cache.h"
#include "core/common/kube_version.h"
#include "core/predict/builtin_model.h"
#include "core/predict/node_params.h"
#include "core/scoring/scheduling_core.h"
#include "core/simulate/scorers.h"
#include "core/telemetry/telemetry_service.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

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
  }

  std::vector<std::int64_t> Score(const WorkloadPod& pod, const std::vector<std::size_t>& feasible,
                                  const std::vector<NodeRuntime>& nodes) override {
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

  void Placed(const WorkloadPod& pod, std::size_t index,
              const std::vector<NodeRuntime>& nodes) override {
    cluster::NodeState state = *snapshot_->FindNode(nodes[index].node->name);
    state.pods.push_back(PodOf(pod.pod.object, state.name, false));
    state.requested.cpu_cores += static_cast<double>(pod.cpu_request_millis) / 1000.0;
    snapshot_->PutNode(std::move(state));
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
  }

 private:
  config::PowerctlConfig config_;
  ScorerOptions options_;
  OverAllocatable over_allocatable_ = OverAllocatable::kScoresFull;
  std::shared_ptr<cluster::ClusterSnapshot> snapshot_;
  std::unique_ptr<SimulatedCpu> cpu_;
  std::unique_ptr<SimulatedTemperatures> temperature_;
  std::unique_ptr<telemetry::TelemetryService> telemetry_;
  predict::BuiltinPredictor predictor_;
  std::unique_ptr<scoring::SchedulingCore> core_;
};

}  // namespace

std::unique_ptr<Scorer> MakePowerctlScorer(const std::vector<NodeRuntime>& nodes,
                                           const config::PowerctlConfig& config,
                                           const ScorerOptions& options) {
  return std::make_unique<PowerctlScorer>(nodes, config, options);
}

}  // namespace powerctl::simulate
