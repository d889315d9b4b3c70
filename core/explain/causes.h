#pragma once
// Why a pod is Pending, as ranked causes: each with a stable id and reason (no per-node
// numbers, so scripts and docs can rely on them), the nodes it blocks, a detail with the
// specifics, and a concrete fix. Pure: built from the node rows and checks `explain` gathered.
//
// Per-node causes are given only when no node could take the pod; otherwise (and when nothing
// else is found) the scheduler's own message is the cause.
//
// Ranking: the pod's scheduler not running comes first (nothing else happens without it);
// then causes by how many nodes they block. The pod's own node selector and required affinity
// rank last when some node matches them: excluding the other nodes is what the pod asked for,
// and the cause worth fixing is on the nodes it wants (the other failures of the nodes it
// excludes are then left out).

#include "core/explain/score.h"
#include "core/setup/doctor.h"

#include <optional>
#include <string>
#include <vector>

namespace powerctl::explain {

// Stable cause ids.
inline constexpr const char* kCauseSchedulerNotRunning = "scheduler-not-running";
inline constexpr const char* kCauseUnschedulable = "node-unschedulable";
inline constexpr const char* kCauseUntoleratedTaint = "untolerated-taint";
inline constexpr const char* kCauseNodeAffinity = "node-affinity";
inline constexpr const char* kCauseInsufficientResources = "insufficient-resources";
inline constexpr const char* kCausePodGroup = "pod-group-incomplete";
inline constexpr const char* kCauseDontSchedule = "dontschedule-policy";
inline constexpr const char* kCauseExtenderRejected = "extender-rejected";
inline constexpr const char* kCauseExtenderError = "extender-error";
inline constexpr const char* kCauseNoNodes = "no-nodes";
inline constexpr const char* kCauseDrainedNodeWouldFit = "drained-node-would-fit";
inline constexpr const char* kCauseUnknown = "scheduler-reports-unschedulable";
// A scheduled pod on a node it should leave:
inline constexpr const char* kCauseDeschedule = "deschedule-policy";
inline constexpr const char* kCauseNoExecuteTaint = "untolerated-noexecute-taint";

struct Cause {
  std::string id;                  // kCause*
  std::string reason;              // stable text
  std::vector<std::string> nodes;  // the nodes it blocks (empty: it is not about nodes)
  std::string detail;              // specifics, from the first node or the check
  std::string fix;                 // a concrete next step

  bool operator==(const Cause&) const = default;
};

struct CauseInputs {
  std::string pod_namespace;
  std::string pod_name;
  std::string scheduler_name;
  bool scheduler_running = true;  // false: no sign of a scheduler with that name
  std::string scheduler_fix;
  std::string pod_group;         // the pod's podGroup label
  std::string telemetry_policy;  // the pod's telemetry-policy label
  const std::vector<NodeScore>* nodes = nullptr;
  std::string extender_error;     // a decision that failed as a whole
  std::string scheduler_message;  // the PodScheduled condition's message, verbatim
  // The pod's group as the cluster has it at explain time (a pod group with minAvailable > 1):
  // a recorded gate quotes the count of its own time.
  struct PodGroupNow {
    int present = 0;
    int min_available = 0;
  };
  std::optional<PodGroupNow> pod_group_now;
  std::string decision_age;  // how long ago the decision shown was recorded ("" made now)
  // Nodes `consolidate apply` drained that would take the pod once switched on and
  // uncordoned, cheapest to run first (consolidate::DrainedNodesThatFit).
  std::vector<std::string> drained_nodes_that_fit;
};

// The causes of a Pending pod, most likely first.
std::vector<Cause> RankCauses(const CauseInputs& inputs);

// Whether `message` (the scheduler's FailedScheduling message or PodScheduled condition) is
// kube-scheduler 1.20 failing to call an extender that is not ignorable. It then reports the
// call's Go error verbatim: `Post "URL": <transport error>` (unreachable, refused, TLS,
// timeout), `failed <verb> with extender at URL <url>, code <status>`, or `extender "<url>"
// claims a filtered node ...`.
bool IsExtenderCallFailure(const std::string& message);

// Why a scheduled pod is misplaced on `node` (the Node object): its node carries the
// `<policy>=violating` label of the pod's telemetry policy (a deschedule strategy), or a
// NoExecute taint it does not tolerate. Empty: it is where it may stay.
std::vector<Cause> MisplacedCauses(const nlohmann::json& pod, const nlohmann::json& node);

// The cause id an extender gate reason belongs to (pod group, dontschedule, other).
std::string ClassifyGateReason(const std::string& reason);

}  // namespace powerctl::explain
