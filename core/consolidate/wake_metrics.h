#pragma once
// What `consolidate wake --watch` publishes on its ops port's /metrics after each pass: how
// many pods wait for room, how many nodes are drained, which drained node would take how many
// of them, what the --on-wake hook achieved, and when the last pass finished.
//
//   powerctl_consolidate_pending_pods                  gauge: Pending for lack of room
//   powerctl_consolidate_drained_nodes                 gauge: nodes marked drained
//   powerctl_consolidate_wake_candidate_pods{node}     gauge: pods that node would take; the
//                                                      series are replaced every pass
//   powerctl_consolidate_wakes_total{result}           counter: woken | hook_failed |
//                                                      not_brought_back
//   powerctl_consolidate_pass_errors_total             counter: passes that failed (API errors)
//   powerctl_consolidate_last_pass_timestamp_seconds   gauge: Unix time of the last good pass

#include "core/consolidate/wake_run.h"
#include "core/server/metrics_registry.h"

#include <chrono>

namespace powerctl::consolidate {

class WakeMetrics {
 public:
  // Registers every family; the counters start at zero, so they show before the first wake.
  explicit WakeMetrics(server::MetricsRegistry& registry);

  // A pass that completed at `at`.
  void RecordPass(const WakeReport& report, std::chrono::system_clock::time_point at);
  // A pass that failed before it could plan: the gauges keep what the last good pass saw.
  void RecordFailedPass();

 private:
  server::GaugeFamily& pending_;
  server::GaugeFamily& drained_;
  server::GaugeFamily& candidates_;
  server::CounterFamily& wakes_;
  server::CounterFamily& errors_;
  server::GaugeFamily& last_pass_;
};

}  // namespace powerctl::consolidate
