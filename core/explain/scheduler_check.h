#pragma once
// Is the pod's scheduler there at all? A pod whose spec.schedulerName names no running
// scheduler has no Events whatsoever, so `explain` checks this first: the scheduler's Lease
// (leader election; powerctl's scheduler in powerctl's namespace, the default scheduler in
// kube-system) and whether that scheduler reported on the pod; for powerctl's scheduler, also
// the extender's /readyz through the API server's service proxy.

#include "core/config/config.h"
#include "core/explain/pod_events.h"
#include "core/kube/client.h"
#include "core/setup/doctor.h"

#include <chrono>
#include <string>
#include <vector>

namespace powerctl::explain {

struct SchedulerStatus {
  bool running = false;                    // a lease holder renews it, or it reported on this pod
  std::vector<setup::CheckResult> checks;  // scheduler-lease, scheduler-events, extender-ready
  std::string fix;                         // what to do when it is not running
};

SchedulerStatus CheckScheduler(kube::Client& kube, const std::string& scheduler_name,
                               const config::PowerctlConfig& config,
                               const std::vector<PodEvent>& events,
                               std::chrono::system_clock::time_point now);

}  // namespace powerctl::explain
