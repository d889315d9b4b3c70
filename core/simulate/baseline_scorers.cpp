#include "core/simulate/baseline_scorers.h"

#include "core/predict/builtin_model.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace powerctl::simulate {
namespace {

std::int64_t LeastRequested(std::int64_t requested, std::int64_t capacity) {
  if (capacity == 0 || requested > capacity) return 0;
  return ((capacity - requested) * kMaxNodeScore) / capacity;
}

std::int64_t MostRequested(std::int64_t requested, std::int64_t capacity, OverAllocatable over) {
  if (capacity == 0) return 0;
  if (requested > capacity) {
    if (over == OverAllocatable::kScoresZero) return 0;
    requested = capacity;
  }
  return (requested * kMaxNodeScore) / capacity;
}

double Fraction(std::int64_t requested, std::int64_t capacity) {
  if (capacity == 0) return 1;
  return static_cast<double>(requested) / static_cast<double>(capacity);
}

std::optional<double> Predict(const MinimizePowerNodeInputs& node, double cpu_fraction) {
  predict::ModelInputs in;
  in.cpu_fraction = static_cast<float>(RoundTenth(cpu_fraction));
  in.ambient = static_cast<float>(RoundTenth(*node.ambient_norm));
  in.cpu1 = static_cast<float>(RoundTenth(*node.cpu1_norm));
  in.cpu2 = static_cast<float>(RoundTenth(*node.cpu2_norm));
  auto watts = predict::BuiltinWatts(in, node.model);
  if (!watts.ok()) return std::nullopt;
  return static_cast<float>(*watts);  // MinimizePower reads a DT_FLOAT
}

}  // namespace

std::int64_t LeastAllocatedScore(const RequestedResources& r) {
  return (LeastRequested(r.cpu_millis, r.cpu_allocatable_millis) +
          LeastRequested(r.memory_bytes, r.memory_allocatable_bytes)) /
         2;
}

std::int64_t MostAllocatedScore(const RequestedResources& r, OverAllocatable over) {
  return (MostRequested(r.cpu_millis, r.cpu_allocatable_millis, over) +
          MostRequested(r.memory_bytes, r.memory_allocatable_bytes, over)) /
         2;
}

std::int64_t BalancedAllocationScore(const RequestedResources& r) {
  double cpu = Fraction(r.cpu_millis, r.cpu_allocatable_millis);
  double memory = Fraction(r.memory_bytes, r.memory_allocatable_bytes);
  if (cpu >= 1 || memory >= 1) return 0;
  return static_cast<std::int64_t>((1 - std::abs(cpu - memory)) *
                                   static_cast<double>(kMaxNodeScore));
}

std::int64_t DefaultSchedulerScore(const RequestedResources& r) {
  return LeastAllocatedScore(r) + BalancedAllocationScore(r);
}

double RoundTenth(double value) {
  return std::round(value * 10) / 10;
}

std::int64_t MinimizePowerRawScore(const MinimizePowerNodeInputs& node,
                                   const MinimizePowerPodCpu& pod) {
  if (pod.requests_cores == 0 && pod.limits_cores == 0) return -1;  // "no requests or limits"
  if (!node.ambient_norm || !node.cpu1_norm || !node.cpu2_norm) return -1;  // missing labels
  if (node.cpu_capacity_cores <= 0) return -1;
  if (node.cpu_used_cores + pod.limits_cores > node.cpu_capacity_cores) return -1;  // overload
  double before = node.cpu_used_cores / node.cpu_capacity_cores;
  double added = pod.requests_cores != 0 ? pod.requests_cores : pod.limits_cores * 0.85;
  double after = (node.cpu_used_cores + added) / node.cpu_capacity_cores;
  auto watts_before = Predict(node, before);
  auto watts_after = Predict(node, after);
  if (!watts_before || !watts_after) return -1;
  return static_cast<std::int64_t>(*watts_after - *watts_before);
}

std::vector<std::int64_t> MinimizePowerNormalize(const std::vector<std::int64_t>& raw) {
  std::int64_t highest = 0;
  std::int64_t lowest = std::numeric_limits<std::int64_t>::max();
  for (std::int64_t s : raw) {
    highest = std::max(highest, s);
    if (s >= 0) lowest = std::min(lowest, s);
  }
  std::vector<std::int64_t> out;
  for (std::int64_t s : raw) {
    if (s < 0) {
      out.push_back(0);
    } else if (highest != lowest) {
      out.push_back(100 - 100 * (s - lowest) / (highest - lowest));
    } else {
      out.push_back(10);
    }
  }
  return out;
}

std::int64_t PeaksRawScore(double cpu_util_percent, std::int64_t pod_cpu_request_millis,
                           std::int64_t cpu_capacity_millis, const PeaksModel& model) {
  double capacity = static_cast<double>(cpu_capacity_millis);
  double util_millis = cpu_util_percent / 100 * capacity;
  double predicted = 0;
  if (capacity != 0)
    predicted = 100 * (util_millis + static_cast<double>(pod_cpu_request_millis)) / capacity;
  if (predicted > 100) return 0;
  double jump = model.k1 * (std::exp(model.k2 * predicted) - std::exp(model.k2 * cpu_util_percent));
  return static_cast<std::int64_t>(jump * 1e15);
}

std::vector<std::int64_t> PeaksNormalize(std::vector<std::int64_t> raw) {
  if (raw.empty()) return raw;
  auto [min_it, max_it] = std::minmax_element(raw.begin(), raw.end());
  std::int64_t min = *min_it, max = *max_it;
  if (min == 0 && max == 0) return raw;
  for (std::int64_t& s : raw) {
    double cost = max != min ? static_cast<double>(kMaxNodeScore) * static_cast<double>(s - min) /
                                   static_cast<double>(max - min)
                             : static_cast<double>(s - min);
    s = kMaxNodeScore - static_cast<std::int64_t>(cost);
  }
  return raw;
}

}  // namespace powerctl::simulate
