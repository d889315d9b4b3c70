#include "core/consolidate/wake_metrics.h"

namespace powerctl::consolidate {
namespace {

constexpr const char* kWoken = "woken";
constexpr const char* kHookFailed = "hook_failed";
constexpr const char* kNotBroughtBack = "not_brought_back";

}  // namespace

WakeMetrics::WakeMetrics(server::MetricsRegistry& registry)
    : pending_(registry.Gauge("powerctl_consolidate_pending_pods",
                              "Pods Pending because no node had room for them")),
      drained_(registry.Gauge("powerctl_consolidate_drained_nodes",
                              "Nodes marked drained by powerctl consolidate")),
      candidates_(registry.Gauge("powerctl_consolidate_wake_candidate_pods",
                                 "Pending pods a drained node would take once switched on",
                                 {"node"})),
      wakes_(registry.Counter("powerctl_consolidate_wakes_total",
                              "Drained nodes the --on-wake hook was run for, by result",
                              {"result"})),
      errors_(registry.Counter("powerctl_consolidate_pass_errors_total",
                               "Wake passes that failed before planning (API errors)")),
      last_pass_(registry.Gauge("powerctl_consolidate_last_pass_timestamp_seconds",
                                "Unix time the last wake pass completed")) {
  for (const char* result : {kWoken, kHookFailed, kNotBroughtBack}) wakes_.Inc({result}, 0);
  errors_.Inc({}, 0);
}

void WakeMetrics::RecordPass(const WakeReport& report, std::chrono::system_clock::time_point at) {
  std::size_t pending = report.no_room.size();
  // Node names are bounded by the cluster's drained nodes and replaced each pass, so the
  // series never outgrow the cluster.
  candidates_.Clear();
  for (const NodeWakeOutcome& n : report.nodes) {
    pending += n.wake.pods.size();
    candidates_.Set({n.wake.node}, static_cast<double>(n.wake.pods.size()));
    if (!n.hook.attempted()) continue;  // no hook, or a dry run
    if (n.hook.failed()) {
      wakes_.Inc({kHookFailed});
    } else if (n.brought_back) {
      wakes_.Inc({kWoken});
    } else {
      wakes_.Inc({kNotBroughtBack});
    }
  }
  pending_.Set(static_cast<double>(pending));
  drained_.Set(report.drained_nodes);
  last_pass_.Set(std::chrono::duration<double>(at.time_since_epoch()).count());
}

void WakeMetrics::RecordFailedPass() {
  errors_.Inc();
}

}  // namespace powerctl::consolidate
