#pragma once
// The CPU a node is counted as using: its measured usage plus the requests of the pods bound to
// it that the usage metrics cannot include yet. metrics-server averages over 15-30 s and scrapes
// with a delay, so a pod just bound is missing from its node's usage for up to a minute;
// counting only the measurement would make a node that was just filled look empty. One rule for
// every caller: the power and real-usage scores, `powerctl predict` and the extender's
// /v1/predictions all read a node's CPU through these functions, so they show the same numbers.

#include "core/cluster/node_cache.h"
#include "core/cluster/pod_info.h"
#include "core/predict/node_power.h"
#include "core/telemetry/readings.h"
#include "core/telemetry/telemetry_service.h"

#include <chrono>
#include <memory>
#include <vector>

namespace powerctl::scoring {

// Pods bound to a node within this long (or still Pending, or not started) are assumed not to
// be in usage metrics yet; their CPU requests stand in for their usage.
inline constexpr std::chrono::seconds kUsageMetricsLag{60};

// Whether `pod` (bound to a node) is assumed missing from its node's usage metrics at `now`.
bool MissingFromUsageMetrics(const cluster::PodInfo& pod,
                             std::chrono::system_clock::time_point now);

// What is added to a node's `measured` CPU usage: the requests of its `pods` (bound to it, not
// terminal) that are missing from the usage metrics at `now`. Nothing when the usage is not
// measured: there is no usage to add to (and no prediction).
predict::UnmeasuredCpu UnmeasuredCpuOf(
    const std::vector<std::shared_ptr<const cluster::PodInfo>>& pods,
    const telemetry::Reading& measured, std::chrono::system_clock::time_point now);

// One node's CPU inputs as prioritize reads them: its reading (ReadingForNode: telemetry's,
// with the Node's allocatable standing in for a missing capacity) and the unmeasured CPU of
// its pods. For callers that show a node's power rather than score it (`predict`).
struct NodeCpu {
  telemetry::NodeReading reading;
  predict::UnmeasuredCpu unmeasured;
};
// `view` null: telemetry is not configured.
NodeCpu NodeCpuOf(const cluster::NodeState& node, const telemetry::TelemetryView* view,
                  std::chrono::system_clock::time_point now);

}  // namespace powerctl::scoring
