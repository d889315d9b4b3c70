#include "core/scoring/node_cpu.h"

#include "core/scoring/prepared_nodes.h"

namespace powerctl::scoring {

bool MissingFromUsageMetrics(const cluster::PodInfo& pod,
                             std::chrono::system_clock::time_point now) {
  return pod.phase == "Pending" || !pod.started || now - *pod.started < kUsageMetricsLag;
}

predict::UnmeasuredCpu UnmeasuredCpuOf(
    const std::vector<std::shared_ptr<const cluster::PodInfo>>& pods,
    const telemetry::Reading& measured, std::chrono::system_clock::time_point now) {
  predict::UnmeasuredCpu out;
  if (!measured.ok()) return out;
  for (const std::shared_ptr<const cluster::PodInfo>& pod : pods) {
    // Pods requesting no CPU add nothing (and are not counted as adding something).
    if (!MissingFromUsageMetrics(*pod, now) || !(pod->requests.cpu_cores > 0)) continue;
    out.cores += pod->requests.cpu_cores;
    ++out.pods;
  }
  return out;
}

NodeCpu NodeCpuOf(const cluster::NodeState& node, const telemetry::TelemetryView* view,
                  std::chrono::system_clock::time_point now) {
  NodeSource source;
  source.facts = &node.facts;
  source.cpu_allocatable = node.cpu_allocatable;
  NodeCpu out;
  out.reading = ReadingForNode(source, view);
  out.unmeasured = UnmeasuredCpuOf(node.pods, out.reading.cpu_cores_used, now);
  return out;
}

}  // namespace powerctl::scoring
