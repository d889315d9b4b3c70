#pragma once
// The scorers powerctl is compared with, as pure functions reproducing their published code:
//
//  * kube-scheduler's default scoring (v1.20): NodeResourcesLeastAllocated and
//    NodeResourcesBalancedAllocation, weight 1 each, on requests with the scheduler's
//    defaults (100m CPU, 200 MiB) for containers that request nothing.
//  * kube-scheduler's MostAllocated (NodeResourcesMostAllocated in 1.20/1.21, NodeResourcesFit's
//    scoringStrategy from 1.22), which the generated profile uses with resourceScoring: pack.
//  * WAO's MinimizePower v1 (docs/reference/minimizepower.md, "CPU before and after" and
//    "Score and normalisation"), bugs included: only the first container's CPU, model inputs
//    rounded to 0.1, the delta truncated to whole watts, errors and power decreases both -1,
//    and its integer normalisation.
//  * PEAKS (kubernetes-sigs/scheduler-plugins pkg/trimaran/peaks; docs/reference/peaks.md,
//    "Score"): the jump in k0 + k1*exp(k2*x) from the current CPU% to the CPU% with the pod,
//    times 1e15, and its normalisation; a pod that would take the node past 100% scores raw 0,
//    the *best* value.

#include "core/simulate/power_model.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace powerctl::simulate {

// kube-scheduler's MaxNodeScore and MaxExtenderPriority.
inline constexpr std::int64_t kMaxNodeScore = 100;
inline constexpr std::int64_t kMaxExtenderPriority = 10;

// A node's requests (non-zero, i.e. with the scheduler's defaults) with the pod included.
struct RequestedResources {
  std::int64_t cpu_millis = 0;
  std::int64_t memory_bytes = 0;
  std::int64_t cpu_allocatable_millis = 0;
  std::int64_t memory_allocatable_bytes = 0;
};

// ((allocatable - requested) * 100 / allocatable) per resource, averaged, in integers.
std::int64_t LeastAllocatedScore(const RequestedResources& r);
// requested * 100 / allocatable per resource (cpu and memory, weight 1 each), averaged, in
// integers. Requests above allocatable (possible only through the non-zero defaults) score 0
// up to 1.21; from 1.22 they count as full (kubernetes PR 102925).
enum class OverAllocatable { kScoresZero, kScoresFull };
std::int64_t MostAllocatedScore(const RequestedResources& r,
                                OverAllocatable over = OverAllocatable::kScoresFull);
// (1 - |cpu fraction - memory fraction|) * 100; 0 when either fraction reaches 1.
std::int64_t BalancedAllocationScore(const RequestedResources& r);
// The two summed: the default profile's resource scores.
std::int64_t DefaultSchedulerScore(const RequestedResources& r);

// MinimizePower v1's raw score for one node: int64(after - before) watts, or -1.
struct MinimizePowerNodeInputs {
  double cpu_used_cores = 0;  // metrics-server usage
  double cpu_capacity_cores = 0;
  std::optional<double> ambient_norm, cpu1_norm, cpu2_norm;  // min-max, not clamped
  BuiltinParams model;                                       // the model it asks
};
struct MinimizePowerPodCpu {
  double requests_cores = 0;  // containers[0] only
  double limits_cores = 0;    // containers[0] only
};
std::int64_t MinimizePowerRawScore(const MinimizePowerNodeInputs& node,
                                   const MinimizePowerPodCpu& pod);
// NormalizeScore: negatives -> 0; else 100 - 100*(s - lowest)/(highest - lowest) with integer
// division (lowest over scores >= 0, highest from 0); all valid equal -> 10.
std::vector<std::int64_t> MinimizePowerNormalize(const std::vector<std::int64_t>& raw);
// Half up to 0.1, as Go's math.Round(x*10)/10.
double RoundTenth(double value);

// PEAKS' raw score for one node.
std::int64_t PeaksRawScore(double cpu_util_percent, std::int64_t pod_cpu_request_millis,
                           std::int64_t cpu_capacity_millis, const PeaksModel& model);
std::vector<std::int64_t> PeaksNormalize(std::vector<std::int64_t> raw);

}  // namespace powerctl::simulate
