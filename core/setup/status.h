#pragma once
// `powerctl status`: one screen on an install, in the cluster or out of it: versions, the
// scheduler's and the extender's readiness, the model server and how fresh telemetry is. The
// verdicts are doctor's (CheckComponents), so the two commands never disagree.

#include "core/common/clock.h"
#include "core/setup/doctor.h"

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace powerctl::setup {

struct ComponentStatus {
  std::string name;   // "scheduler", "extender", "model"
  std::string where;  // "deployment powerctl/powerctl-extender", "process http://..."
  bool ready = false;
  bool checked = true;  // false: nothing to check (no model server), counts as ready
  std::string detail;   // doctor's message
  std::string fix;      // doctor's fix when not ready
};

struct TelemetryStatus {
  std::string source;                 // "cpu", "temperature"
  std::optional<double> age_seconds;  // of the extender's newest snapshot
  bool failing = false;
};

// The nodes `consolidate apply` drained (doctor's drained-nodes check has the details).
struct ConsolidationStatus {
  bool known = false;  // false: the nodes could not be read (`error` says why)
  std::string error;
  int drained = 0, draining = 0;
  double expected_watts_saved = 0;   // the drained nodes' plans, summed
  std::vector<std::string> drifted;  // "node: what no longer holds"
};

struct StatusReport {
  std::string client_version;  // this binary
  // What runs: the extender Deployment's image tag in the cluster; out of the cluster the
  // version the extender's /metrics reports (powerctl_build_info), "" when unknown.
  std::string installed_version;
  std::string installed_image;
  std::string mode;  // "in-cluster" | "out-of-cluster"
  std::string api;   // "Kubernetes v1.20.2 at https://..." or why it is unreachable
  // doctor's kube-version verdict: "1.36, maintained until 2027-06-28; kube-scheduler ...".
  std::string kubernetes_line;
  bool kubernetes_line_ok = true;  // false: ended, newer than known, or the scheduler skewed
  bool api_reachable = false;
  std::vector<ComponentStatus> components;  // scheduler, extender, model
  // Out of the cluster, from the extender's /metrics; in the cluster, not read.
  std::vector<TelemetryStatus> telemetry;
  bool telemetry_known = false;
  std::vector<std::string> degraded;  // the extender's degraded dependencies, "name: reason"
  ConsolidationStatus consolidation;

  bool AllReady() const;
  // "scheduler (reason); extender (reason)": what is not ready, for a timeout's message.
  std::string NotReady() const;
};

// One look; never fails (what cannot be read is reported as not ready, with why).
StatusReport CollectStatus(const DoctorInput& input);

// Looks every `interval` until AllReady or `timeout` has passed; calls `on_report` after each
// look. kCheckFailed naming what is still not ready when the time is up; the last report
// either way in `last`.
Status WaitForStatus(const DoctorInput& input, std::chrono::milliseconds timeout,
                     const Clock& clock, StatusReport& last,
                     const std::function<void(const StatusReport&)>& on_report = {},
                     std::chrono::milliseconds interval = std::chrono::milliseconds(1000));

}  // namespace powerctl::setup
