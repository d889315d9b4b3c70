#include "core/extender/decision_batch.h"

#include "core/common/encoding.h"
#include "core/common/json_bounds.h"
#include "core/common/json_fields.h"
#include "core/common/names.h"
#include "core/kube/events.h"

#include <fmt/format.h>

#include <cstdint>
#include <string_view>

namespace powerctl::extender {
namespace {

using json = nlohmann::json;

// Pod names in a batch's message; more are counted.
constexpr std::size_t kMessagePods = 5;

}  // namespace

std::string PodLabel(const std::string& pod_uid) {
  // The key's name part ("pod-" + uid) follows a label value's rules: at most 63 characters,
  // alphanumerics, '-', '_' and '.', alphanumeric at both ends (an API server's uids fit).
  std::string_view prefix_name = kDecidedPodLabelPrefix;
  prefix_name.remove_prefix(prefix_name.find('/') + 1);
  if (!pod_uid.empty() && ValidateLabelValue(std::string(prefix_name) + pod_uid).empty())
    return kDecidedPodLabelPrefix + pod_uid;
  // FNV-1a: stable across versions and replicas, which `explain` relies on.
  std::uint64_t hash = 14695981039346656037ULL;
  for (char c : pod_uid) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ULL;
  }
  return fmt::format("{}h{:016x}", kDecidedPodLabelPrefix, hash);
}

std::optional<BatchedDecision> BatchEntry(const scoring::Decision& decision, bool with_message) {
  if (DecisionEventReason(decision) == nullptr) return std::nullopt;
  BatchedDecision entry{decision.pod_name, decision.pod_uid, DecisionAnnotation(decision), ""};
  if (with_message) entry.message = DecisionEventMessage(decision);
  return entry;
}

bool DecisionBatch::Fits(const BatchedDecision& entry) const {
  if (entries_.empty()) return true;
  return entries_.size() < kMaxBatchDecisions &&
         annotation_bytes_ + 1 + entry.annotation.size() <= kMaxBatchAnnotationBytes;
}

void DecisionBatch::Add(BatchedDecision entry) {
  annotation_bytes_ += entry.annotation.size() + (entries_.empty() ? 0 : 1);
  entries_.push_back(std::move(entry));
}

json DecisionBatch::ToEvent(const DecisionEventSource& source) const {
  const BatchedDecision& first = entries_.front();
  // Each entry is already JSON: joined, not parsed and dumped again.
  std::string decisions = "[";
  json labels = json::object();
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    if (i > 0) decisions += ',';
    decisions += entries_[i].annotation;
    labels[PodLabel(entries_[i].pod_uid)] = "";
  }
  decisions += ']';
  std::string message = first.message;
  if (entries_.size() > 1) {
    message = fmt::format("Power decisions for {} pods: ", entries_.size());
    for (std::size_t i = 0; i < entries_.size() && i < kMessagePods; ++i) {
      message += (i == 0 ? "" : ", ") + entries_[i].pod_name;
    }
    if (entries_.size() > kMessagePods) {
      message += fmt::format(" and {} more", entries_.size() - kMessagePods);
    }
    message += " (powerctl explain pod NAME shows each)";
    message = TruncateUtf8(std::move(message), kube::kMaxEventMessageBytes);
  }
  const std::string when = kube::EventTimestamp(source.now);
  json involved = {
      {"apiVersion", "v1"}, {"kind", "Pod"}, {"namespace", namespace_}, {"name", first.pod_name}};
  if (!first.pod_uid.empty()) involved["uid"] = first.pod_uid;
  return json{{"apiVersion", "v1"},
              {"kind", "Event"},
              {"metadata",
               {{"name", kube::EventName(first.pod_name, source.name_suffix)},
                {"namespace", namespace_},
                {"labels", std::move(labels)},
                {"annotations", {{kDecisionsAnnotation, std::move(decisions)}}}}},
              {"involvedObject", std::move(involved)},
              {"reason", kReasonPowerDecisions},
              {"message", std::move(message)},
              {"type", "Normal"},
              {"source", {{"component", kEventComponent}}},
              {"reportingComponent", kEventComponent},
              {"reportingInstance", source.instance},
              {"action", "Decide"},
              {"firstTimestamp", when},
              {"lastTimestamp", when},
              {"count", 1}};
}

Result<std::vector<RecordedDecision>> DecisionsFromBatchEvent(const json& event,
                                                              const std::string& pod_name,
                                                              const std::string& pod_uid) {
  if (StringField(event, {"reason"}) != kReasonPowerDecisions) {
    return MakeError(ErrorCode::kNotFound, "event: not a batch of decisions");
  }
  const std::string annotation =
      StringField(event, {"metadata", "annotations", kDecisionsAnnotation});
  if (annotation.empty()) {
    return MakeError(ErrorCode::kNotFound,
                     std::string("event: no ") + kDecisionsAnnotation + " annotation");
  }
  json documents = ParseJsonBounded(annotation);  // anyone who may write Events wrote this
  if (documents.is_discarded() || !documents.is_array()) {
    return MakeError(ErrorCode::kInvalidInput,
                     std::string("event: annotation ") + kDecisionsAnnotation +
                         " is not a JSON array (or is nested too deeply)");
  }
  const RecordedDecision from = RecordedFrom(event);
  std::vector<RecordedDecision> out;
  for (const json& document : documents) {
    POWERCTL_TRY(decision, scoring::DecisionFromJson(document));
    const bool same = !pod_uid.empty() && !decision.pod_uid.empty() ? decision.pod_uid == pod_uid
                                                                    : decision.pod_name == pod_name;
    if (!same) continue;
    RecordedDecision recorded = from;
    recorded.decision = std::move(decision);
    out.push_back(std::move(recorded));
  }
  return out;
}

}  // namespace powerctl::extender
