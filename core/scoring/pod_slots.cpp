#include "core/scoring/pod_slots.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace powerctl::scoring {

double TypicalPodCpu(double average) {
  if (!(average > 0) || !std::isfinite(average)) return average;
  // Six significant bits: a step of 0.8-1.6 % of the value, and a millicore at least.
  const double step = std::max(0.001, std::exp2(std::floor(std::log2(average))) / 64);
  return std::max(step, std::round(average / step) * step);
}

std::vector<double> ReachableCpu(const std::vector<const cluster::NodeState*>& nodes,
                                 double pod_cpu) {
  // The average, not this pod's CPU: a small pod must not make a large node look unfillable
  // when the pods that follow it will be larger.
  double cpu = 0, pods = 0;
  for (const cluster::NodeState* node : nodes) {
    if (node == nullptr) continue;
    cpu += node->requested.cpu_cores;
    pods += static_cast<double>(node->pods.size());
  }
  const double typical = pods > 0 ? TypicalPodCpu(cpu / pods) : pod_cpu;
  std::vector<double> out(nodes.size(), std::numeric_limits<double>::infinity());
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const cluster::NodeState* node = nodes[i];
    if (node == nullptr || !node->pods_allocatable) continue;
    const double free = *node->pods_allocatable - static_cast<double>(node->pods.size());
    out[i] = pod_cpu + std::max(0.0, free - 1) * typical;
  }
  return out;
}

double SlotShareFactor(const cluster::NodeState& node, double reachable_cpu, double pod_cpu) {
  if (!node.pods_allocatable || !node.cpu_allocatable || !(*node.pods_allocatable > 0) ||
      !(pod_cpu > 0)) {
    return 1.0;
  }
  const double pods = static_cast<double>(node.pods.size());
  const double free_slots = *node.pods_allocatable - pods;
  const double free_cpu = *node.cpu_allocatable - node.requested.cpu_cores;
  if (free_slots < 1 || !(free_cpu > 0) || !(reachable_cpu < free_cpu)) return 1.0;
  const double slot_cpu = free_cpu / free_slots;
  if (pod_cpu >= slot_cpu) return 1.0;
  const double used = std::clamp(pods / *node.pods_allocatable, 0.0, 1.0);
  return 1.0 + (slot_cpu / pod_cpu - 1.0) * used * used * used;
}

void ApplySlotShare(std::vector<predict::PowerEstimate>& power,
                    const std::vector<const cluster::NodeState*>& nodes,
                    const std::vector<double>& reachable_cpu, double pod_cpu) {
  const std::size_t count = std::min({power.size(), nodes.size(), reachable_cpu.size()});
  for (std::size_t i = 0; i < count; ++i) {
    predict::PowerEstimate& estimate = power[i];
    if (nodes[i] == nullptr || estimate.overcommitted || !estimate.fill_watts_per_core ||
        !std::isfinite(*estimate.fill_watts_per_core)) {
      continue;
    }
    const double factor = SlotShareFactor(*nodes[i], reachable_cpu[i], pod_cpu);
    estimate.fill_slot_factor = factor;
    *estimate.fill_watts_per_core *= factor;
  }
}

}  // namespace powerctl::scoring
