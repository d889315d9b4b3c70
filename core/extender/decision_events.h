#pragma once
// A scheduling decision as a Kubernetes Event on the pod, so that `powerctl explain` (and
// `kubectl get events`) can read it with the user's own RBAC: the ops port's /v1/decisions is
// reachable only through the API server's service proxy, which neither presents a client
// certificate nor forwards the user's credentials, and it only holds what one replica saw.
//
// One Event per prioritize (reason PowerScored) and per filter that rejected a node
// (PowerFiltered); preempt and filters that passed every node get none. The Event carries:
//   message      a human summary (the best nodes and their power deltas, or the rejections),
//                at most 1,024 bytes (cut on a UTF-8 boundary, ending in "…");
//   annotation   `powerctl.io/decision`: the compact decision JSON (scoring/decision.h) of
//                the 20 best-scored and first 50 rejected nodes, "omitted" counting the rest;
//                shrunk further until it fits in 16 KiB (fewer nodes, then reasons dropped
//                except each node's power cost, "+30.0 W, 15.00 W/core to fill", then those
//                and the notes too).
// Events are core/v1 in the pod's namespace, written without eventTime (the legacy form every
// API server since 1.0 validates the same way), source and reportingComponent
// "powerctl-extender", reportingInstance the replica's identity.

#include "core/common/result.h"
#include "core/extender/tls_failure_log.h"
#include "core/scoring/decision.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

namespace powerctl::extender {

inline constexpr const char* kDecisionAnnotation = "powerctl.io/decision";
inline constexpr const char* kReasonPowerScored = "PowerScored";
inline constexpr const char* kReasonPowerFiltered = "PowerFiltered";
inline constexpr const char* kEventComponent = "powerctl-extender";
inline constexpr const char* kReasonTlsHandshakeFailed = "TLSHandshakeFailed";
inline constexpr std::size_t kMaxDecisionAnnotationBytes = 16 * 1024;
inline constexpr std::size_t kEventScoredNodes = 20;
inline constexpr std::size_t kEventRejectedNodes = 50;

struct DecisionEventSource {
  std::string instance;     // reportingInstance: this replica's identity
  std::string name_suffix;  // makes metadata.name unique: "<pod>.<suffix>"
  std::chrono::system_clock::time_point now;
};

// A Warning Event on the extender's own pod for failed TLS handshakes on the scheduler port
// (reason TLSHandshakeFailed), so `kubectl get events` and `kubectl describe pod` show what
// the log says. metadata.generateName lets the API server pick a unique name.
nlohmann::json TlsFailureEvent(const std::string& pod_namespace, const std::string& pod_name,
                               const TlsWarning& warning, const DecisionEventSource& source);

// The reason of the record `decision` gets (kReasonPowerScored or kReasonPowerFiltered), or
// nullptr when it gets none (see above).
const char* DecisionEventReason(const scoring::Decision& decision);

// The Event for `decision`, or nullopt when it gets none (see above, and decisions without a
// pod name or namespace, which have no object to attach to).
std::optional<nlohmann::json> DecisionEvent(const scoring::Decision& decision,
                                            const DecisionEventSource& source);

// What of a decision its Event needs: every rejected node and the kEventScoredNodes best
// scored, `omitted_nodes` counting the rest. The Event built from it is the Event built from
// the whole decision; the writer queues this instead of a 5,000-node decision.
scoring::Decision DecisionForEvent(const scoring::Decision& decision);

// The Event's message and annotation, exposed for tests and for `explain`.
std::string DecisionEventMessage(const scoring::Decision& decision);
std::string DecisionAnnotation(const scoring::Decision& decision);

// A decision read back from one of these Events (what `explain` shows).
struct RecordedDecision {
  scoring::Decision decision;
  std::string event_reason;    // kReasonPowerScored, kReasonPowerFiltered or a batch's reason
  std::string instance;        // the replica that decided (reportingInstance)
  std::string message;         // the Event's message
  std::string last_timestamp;  // the Event's lastTimestamp (RFC 3339), "" when absent
};

// The parser of DecisionEvent's output. kNotFound when `event` is not a decision Event
// (another reason or source, or no annotation); kInvalidInput naming the field when its
// annotation is not a decision.
Result<RecordedDecision> DecisionFromEvent(const nlohmann::json& event);

// What an Event that records decisions says beside them, for every decision it holds: its
// reason, the replica that wrote it, its message and when (lastTimestamp, else eventTime).
RecordedDecision RecordedFrom(const nlohmann::json& event);

}  // namespace powerctl::extender
