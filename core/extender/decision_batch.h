#pragma once
// Decisions recorded in batches: one Event holds the decisions of many pods of one namespace,
// so that under load the API server writes one object per batch instead of one per pod (an
// Event per decision doubled its writes per scheduled pod, and was a quarter of the extender's
// own CPU). `powerctl explain` still reads them with nothing more than permission to list
// Events in the pod's namespace.
//
// The Event (core/v1, in the pods' namespace):
//   reason          PowerDecisions, type Normal, source "powerctl-extender"
//   involvedObject  the batch's first pod (an Event needs one object of its namespace), so a
//                   batch of one is an Event on that pod as before
//   labels          powerctl.io/pod-<uid>: "" for every pod in the batch, the index `explain`
//                   lists by (`kubectl get events -l powerctl.io/pod-<uid>`); a uid that is no
//                   valid label name part is replaced by a hash of it (PodLabel)
//   annotation      powerctl.io/decisions: a JSON array of the decisions, each exactly what a
//                   single Event's powerctl.io/decision holds (decision_events.h), at most
//                   kMaxBatchAnnotationBytes in all (the API server allows 256 KiB of
//                   annotations per object)
//   message         a batch of one: that decision's message; else the pods it holds
// DecisionEvent's one-Event-per-decision form is still read (extenders before batching).

#include "core/common/result.h"
#include "core/extender/decision_events.h"
#include "core/scoring/decision.h"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace powerctl::extender {

inline constexpr const char* kReasonPowerDecisions = "PowerDecisions";
inline constexpr const char* kDecisionsAnnotation = "powerctl.io/decisions";
inline constexpr const char* kDecidedPodLabelPrefix = "powerctl.io/pod-";
inline constexpr std::size_t kMaxBatchAnnotationBytes = 192 * 1024;
inline constexpr std::size_t kMaxBatchDecisions = 100;

// The label that marks a batch as holding a decision about the pod with this uid.
std::string PodLabel(const std::string& pod_uid);

// One decision as a batch holds it.
struct BatchedDecision {
  std::string pod_name;
  std::string pod_uid;
  std::string annotation;  // DecisionAnnotation(decision)
  std::string message;     // DecisionEventMessage(decision), only for a batch's first
};

// The entry for `decision`, or nullopt when it gets no record: the same decisions as
// DecisionEvent (prioritize; filters that rejected a node or failed; with a pod).
// `with_message` computes its message (the first of a batch needs one).
std::optional<BatchedDecision> BatchEntry(const scoring::Decision& decision, bool with_message);

// The decisions of one namespace waiting to be written as one Event.
class DecisionBatch {
 public:
  explicit DecisionBatch(std::string pod_namespace) : namespace_(std::move(pod_namespace)) {}
  // Whether `entry` still fits (count and annotation bytes); an empty batch takes anything.
  bool Fits(const BatchedDecision& entry) const;
  void Add(BatchedDecision entry);
  bool empty() const { return entries_.empty(); }
  std::size_t size() const { return entries_.size(); }
  const std::string& pod_namespace() const { return namespace_; }
  // The Event; `source.name_suffix` makes its name unique.
  nlohmann::json ToEvent(const DecisionEventSource& source) const;

 private:
  std::string namespace_;
  std::vector<BatchedDecision> entries_;
  std::size_t annotation_bytes_ = 2;  // "[" and "]"
};

// The decisions about one pod in a PowerDecisions Event (uid compared when both have one,
// else the pod's name). kNotFound when `event` is not such an Event; kInvalidInput naming the
// field when its annotation is not an array of decisions.
Result<std::vector<RecordedDecision>> DecisionsFromBatchEvent(const nlohmann::json& event,
                                                              const std::string& pod_name,
                                                              const std::string& pod_uid);

}  // namespace powerctl::extender
