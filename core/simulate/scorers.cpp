#include "core/simulate/scorers.h"

#include "core/kube/quantity.h"
#include "core/predict/node_params.h"
#include "core/simulate/baseline_scorers.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <utility>

namespace powerctl::simulate {
namespace {

// MinimizePower's normalised temperature: min-max with the labels, not clamped; nullopt when a
// label or reading is missing or max == min (the plugin's "division by zero" error; see
// docs/reference/minimizepower.md, "Node labels").
std::optional<double> MinimizePowerNormalised(const SimNode& node,
                                              const std::optional<double>& reading,
                                              const std::string& prefix) {
  auto min = node.labels.find(prefix + "/min");
  auto max = node.labels.find(prefix + "/max");
  if (!reading || min == node.labels.end() || max == node.labels.end()) return std::nullopt;
  double lo = std::strtod(min->second.c_str(), nullptr);
  double hi = std::strtod(max->second.c_str(), nullptr);
  if (hi == lo) return std::nullopt;
  return (*reading - lo) / (hi - lo);
}

// The first container's CPU request and limit, in cores (MinimizePower reads nothing else).
MinimizePowerPodCpu FirstContainerCpu(const WorkloadPod& pod) {
  MinimizePowerPodCpu cpu;
  const auto& containers = pod.pod.object["spec"]["containers"];
  if (containers.empty()) return cpu;
  const auto& resources = containers[0].value("resources", nlohmann::json::object());
  auto read = [&](const char* kind) {
    if (!resources.contains(kind) || !resources[kind].contains("cpu") ||
        !resources[kind]["cpu"].is_string())
      return 0.0;
    auto cores = kube::ParseCpuCores(resources[kind]["cpu"].get<std::string>());
    return cores.ok() ? *cores : 0.0;
  };
  cpu.requests_cores = read("requests");
  cpu.limits_cores = read("limits");
  return cpu;
}

class DefaultScorer : public Scorer {
 public:
  std::vector<std::int64_t> Score(const WorkloadPod& pod, const std::vector<std::size_t>& feasible,
                                  const std::vector<NodeRuntime>& nodes) override {
    std::vector<std::int64_t> out;
    for (std::size_t i : feasible) out.push_back(DefaultSchedulerScore(nodes[i].WithPod(pod)));
    return out;
  }
};

// Node-local raw scores of one pod shape, each kept until its node changes: a scorer whose
// raw score of a node depends only on that node and the pod (a normalisation across the
// candidates comes after) re-scores only the nodes a pod was placed on or removed from since.
class RawScoreCache {
 public:
  explicit RawScoreCache(std::size_t nodes) : version_(nodes, 1) {}

  // The raw score of nodes[i] for the shape `key`, from `score(i)` when not kept.
  template <typename Key, typename ScoreFn>
  std::int64_t Get(const Key& key, std::size_t i, const ScoreFn& score) {
    Shape& shape = shapes_[ShapeKey(key)];
    if (shape.raw.empty()) {
      shape.raw.assign(version_.size(), 0);
      shape.version.assign(version_.size(), 0);
    }
    if (shape.version[i] != version_[i]) {
      shape.raw[i] = score(i);
      shape.version[i] = version_[i];
    }
    return shape.raw[i];
  }
  void Changed(std::size_t i) { ++version_[i]; }

 private:
  struct Shape {
    std::vector<std::int64_t> raw;
    std::vector<std::uint64_t> version;  // of the node when raw was computed; 0: never
  };
  static std::pair<double, double> ShapeKey(double key) { return {key, 0}; }
  static std::pair<double, double> ShapeKey(std::pair<double, double> key) { return key; }

  std::vector<std::uint64_t> version_;  // per node, bumped by each change
  std::map<std::pair<double, double>, Shape> shapes_;
};

class MinimizePowerScorer : public Scorer {
 public:
  explicit MinimizePowerScorer(const std::vector<NodeRuntime>& nodes) : cache_(nodes.size()) {
    // The labels are read once: they never change during a run.
    for (const NodeRuntime& n : nodes) {
      Norms norms;
      norms.ambient = MinimizePowerNormalised(*n.node, n.node->ambient, "ambient");
      norms.cpu1 = MinimizePowerNormalised(*n.node, n.node->cpu1, "cpu1");
      norms.cpu2 = MinimizePowerNormalised(*n.node, n.node->cpu2, "cpu2");
      norms_.push_back(norms);
    }
  }
  std::vector<std::int64_t> Score(const WorkloadPod& pod, const std::vector<std::size_t>& feasible,
                                  const std::vector<NodeRuntime>& nodes) override {
    MinimizePowerPodCpu cpu = FirstContainerCpu(pod);
    std::vector<std::int64_t> raw;
    raw.reserve(feasible.size());
    for (std::size_t i : feasible) {
      raw.push_back(
          cache_.Get(std::pair(cpu.requests_cores, cpu.limits_cores), i, [&](std::size_t) {
            const NodeRuntime& n = nodes[i];
            MinimizePowerNodeInputs in;
            in.cpu_used_cores = n.cpu_used;
            in.cpu_capacity_cores = n.node->cpu_cores;
            in.ambient_norm = norms_[i].ambient;
            in.cpu1_norm = norms_[i].cpu1;
            in.cpu2_norm = norms_[i].cpu2;
            in.model = n.belief;
            return MinimizePowerRawScore(in, cpu);
          }));
    }
    std::vector<std::int64_t> normalised = MinimizePowerNormalize(raw);
    for (std::size_t k = 0; k < feasible.size(); ++k) {
      normalised[k] = normalised[k] * kMinimizePowerWeight +
                      DefaultSchedulerScore(nodes[feasible[k]].WithPod(pod));
    }
    return normalised;
  }
  void Placed(const WorkloadPod&, std::size_t index, const std::vector<NodeRuntime>&) override {
    cache_.Changed(index);
  }
  void Removed(const WorkloadPod&, std::size_t index, const std::vector<NodeRuntime>&) override {
    cache_.Changed(index);
  }

 private:
  static constexpr std::int64_t kMinimizePowerWeight = 100;  // as MinimizePower's scheduler config
  struct Norms {
    std::optional<double> ambient, cpu1, cpu2;
  };
  std::vector<Norms> norms_;
  RawScoreCache cache_;
};

class PeaksScorer : public Scorer {
 public:
  explicit PeaksScorer(const std::vector<NodeRuntime>& nodes) : cache_(nodes.size()) {
    for (const NodeRuntime& n : nodes)
      models_.push_back(FitPeaksModel(n.belief, NormalisedTemperature(*n.node)));
  }
  std::vector<std::int64_t> Score(const WorkloadPod& pod, const std::vector<std::size_t>& feasible,
                                  const std::vector<NodeRuntime>& nodes) override {
    std::vector<std::int64_t> raw;
    raw.reserve(feasible.size());
    for (std::size_t i : feasible) {
      raw.push_back(cache_.Get(static_cast<double>(pod.cpu_request_millis), i, [&](std::size_t) {
        const NodeRuntime& n = nodes[i];
        double util = 100 * n.cpu_used / n.node->cpu_cores;
        return PeaksRawScore(util, pod.cpu_request_millis, n.cpu_allocatable_millis, models_[i]);
      }));
    }
    return PeaksNormalize(std::move(raw));
  }
  void Placed(const WorkloadPod&, std::size_t index, const std::vector<NodeRuntime>&) override {
    cache_.Changed(index);
  }
  void Removed(const WorkloadPod&, std::size_t index, const std::vector<NodeRuntime>&) override {
    cache_.Changed(index);
  }

 private:
  std::vector<PeaksModel> models_;
  RawScoreCache cache_;
};

}  // namespace

std::vector<std::string> AllScorers() {
  return {std::string(kScorerPowerctl), std::string(kScorerDefault),
          std::string(kScorerMinimizePower), std::string(kScorerPeaks)};
}

Result<std::vector<NodeRuntime>> InitialNodes(const Snapshot& snapshot, double error,
                                              std::mt19937_64& rng) {
  std::vector<NodeRuntime> nodes;
  for (const SimNode& node : snapshot.nodes) {
    if (auto params = predict::BuiltinParamsFromAnnotations(node.annotations); !params.ok()) {
      return MakeError(ErrorCode::kInvalidInput,
                       snapshot.source + ": node \"" + node.name + "\": " + params.error().message);
    }
    NodeRuntime n;
    n.node = &node;
    n.belief = WithError(BelievedParams(node), error, rng);
    n.cpu_allocatable_millis = std::llround(node.cpu_cores * 1000);
    n.memory_allocatable_bytes = std::llround(node.memory_bytes);
    for (const SimPod& p : node.pods) {
      POWERCTL_TRY(pod, MakeWorkloadPod(p));
      n.Place(pod);
    }
    // Place counted the pods' requests as used; a snapshot's measured use wins.
    n.base_cpu_used = node.cpu_used.value_or(std::min(n.cpu_used, node.cpu_cores));
    n.cpu_used = n.base_cpu_used;
    nodes.push_back(n);
  }
  return nodes;
}

bool NodeRuntime::Fits(const WorkloadPod& pod) const {
  return pod_count + 1 <= node->max_pods &&
         cpu_requested_millis + pod.cpu_request_millis <= cpu_allocatable_millis &&
         memory_requested_bytes + pod.memory_request_bytes <= memory_allocatable_bytes;
}

void NodeRuntime::Place(const WorkloadPod& pod) {
  cpu_requested_millis += pod.cpu_request_millis;
  memory_requested_bytes += pod.memory_request_bytes;
  cpu_nonzero_millis += pod.cpu_nonzero_millis;
  memory_nonzero_bytes += pod.memory_nonzero_bytes;
  ++pod_count;
  cpu_used += static_cast<double>(pod.cpu_request_millis) / 1000.0;
}

RequestedResources NodeRuntime::WithPod(const WorkloadPod& pod) const {
  RequestedResources r;
  r.cpu_millis = cpu_nonzero_millis + pod.cpu_nonzero_millis;
  r.memory_bytes = memory_nonzero_bytes + pod.memory_nonzero_bytes;
  r.cpu_allocatable_millis = cpu_allocatable_millis;
  r.memory_allocatable_bytes = memory_allocatable_bytes;
  return r;
}

Result<std::unique_ptr<Scorer>> MakeScorer(std::string_view name,
                                           const std::vector<NodeRuntime>& nodes,
                                           const config::PowerctlConfig& config,
                                           const ScorerOptions& options) {
  if (name == kScorerPowerctl) return MakePowerctlScorer(nodes, config, options);
  if (name == kScorerDefault) return std::unique_ptr<Scorer>(std::make_unique<DefaultScorer>());
  if (name == kScorerMinimizePower)
    return std::unique_ptr<Scorer>(std::make_unique<MinimizePowerScorer>(nodes));
  if (name == kScorerPeaks) return std::unique_ptr<Scorer>(std::make_unique<PeaksScorer>(nodes));
  return MakeError(
      ErrorCode::kInvalidInput,
      "--scorer \"" + std::string(name) + "\": must be powerctl, default, minimizepower or peaks");
}

}  // namespace powerctl::simulate
