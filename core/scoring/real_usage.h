#pragma once
// The real-usage component, after the MemRealUsage / CpuRealUsage score plugins of
// devops-Hunter/real-usage-scheduler (docs/reference/real-usage.md): nodes that actually use
// less of their memory and CPU score higher, whatever the pods on them requested.
//
// Per node, utilisation = the mean of the fractions that are known: memory used / allocatable
// and CPU used / allocatable (the plugins score one resource each, and the memory one is the
// one usually run; both count equally here). A fraction needs a used value >= 0 and an
// allocatable > 0; above 1 is kept (system daemons can use more than allocatable), so fuller
// nodes still rank lower. Scores are proportional, as the plugins' NormalizeScore: the lowest
// utilisation gets 10, the highest 0, linear in between.
//
// Differences from the plugins, on purpose ("What powerctl does instead"):
//   * all-equal utilisations score 10 (the plugins give every node MinNodeScore 0);
//   * a node without data gets ScoringSettings.unknown_score with the reason (the plugins
//     return a framework error, which aborts the pod's whole scheduling attempt);
//   * the plugins' memory figure is relative to MemTotal from node_exporter; callers here pass
//     allocatable, which is what the scheduler can place against.

#include "core/config/config.h"
#include "core/scoring/combine.h"

#include <optional>
#include <string>
#include <vector>

namespace powerctl::scoring {

struct NodeUsage {
  std::string node;
  std::optional<double> cpu_used_cores;
  std::optional<double> cpu_allocatable_cores;
  std::optional<double> memory_used_bytes;
  std::optional<double> memory_allocatable_bytes;
  std::string missing_reason;  // why usage is missing, when the caller knows (e.g. "stale")
};

struct RealUsageScore {
  std::string node;
  Component component;                // name kRealUsage
  std::optional<double> utilization;  // 0.. (1 = fully used)
};

// One result per element of `nodes`, in order.
std::vector<RealUsageScore> ScoreRealUsage(const std::vector<NodeUsage>& nodes,
                                           const config::ScoringSettings& settings);

}  // namespace powerctl::scoring
