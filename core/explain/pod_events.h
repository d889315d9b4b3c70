#pragma once
// A pod's Events as `explain` reads them: the scheduler's verdicts (Scheduled,
// FailedScheduling) shown verbatim, and the extender's decisions (batched in PowerDecisions
// Events; PowerScored and PowerFiltered from earlier versions) parsed back into Decisions. Both
// legacy core/v1 Events (count, lastTimestamp, source) and events.k8s.io ones seen through core/v1
// (series, eventTime, reportingComponent; kube-scheduler 1.20 writes these) are read.

#include "core/common/result.h"
#include "core/extender/decision_events.h"
#include "core/kube/client.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace powerctl::explain {

struct PodEvent {
  std::string type;     // Normal, Warning
  std::string reason;   // FailedScheduling, Scheduled, PowerScored, ...
  std::string from;     // source.component, else reportingComponent
  std::string message;  // verbatim
  std::int64_t count = 1;
  std::string last_seen;  // RFC 3339: lastTimestamp, series.lastObservedTime or eventTime
};

PodEvent PodEventFromJson(const nlohmann::json& event);

// The Events whose involvedObject is the pod (by uid when the Event names one), oldest first.
Result<std::vector<nlohmann::json>> ListPodEvents(kube::Client& kube, const std::string& ns,
                                                  const std::string& name, const std::string& uid);

// The Events that batch the extender's decisions about the pod with this uid (labelled
// extender::PodLabel(uid); decision_batch.h), wherever their involvedObject points. None for
// a pod without a uid.
Result<std::vector<nlohmann::json>> ListDecisionBatches(kube::Client& kube, const std::string& ns,
                                                        const std::string& uid);

// The extender's decisions about this pod among `events` (uid checked when both have one,
// else the name): the latest prioritize and filter, from single decision Events and from
// batches alike. Undecodable ones are skipped.
struct RecordedDecisions {
  std::optional<extender::RecordedDecision> prioritize;
  std::optional<extender::RecordedDecision> filter;
};
RecordedDecisions LatestDecisions(const std::vector<nlohmann::json>& events,
                                  const std::string& pod_name, const std::string& pod_uid);

}  // namespace powerctl::explain
