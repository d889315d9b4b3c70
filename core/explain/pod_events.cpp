#include "core/explain/pod_events.h"

#include "core/common/json_fields.h"
#include "core/extender/decision_batch.h"

#include <algorithm>

namespace powerctl::explain {
namespace {

using json = nlohmann::json;

std::string LastSeen(const json& event) {
  for (auto path : {std::initializer_list<std::string_view>{"lastTimestamp"},
                    std::initializer_list<std::string_view>{"series", "lastObservedTime"},
                    std::initializer_list<std::string_view>{"eventTime"},
                    std::initializer_list<std::string_view>{"firstTimestamp"}}) {
    std::string value = StringField(event, path);
    if (!value.empty()) return value;
  }
  return StringField(event, {"metadata", "creationTimestamp"});
}

}  // namespace

PodEvent PodEventFromJson(const json& event) {
  PodEvent out;
  out.type = StringField(event, {"type"});
  out.reason = StringField(event, {"reason"});
  out.from = StringField(event, {"source", "component"});
  if (out.from.empty()) out.from = StringField(event, {"reportingComponent"});
  out.message = StringField(event, {"message"});
  long count = IntField(event, {"count"}, 0);
  if (count <= 0) count = IntField(event, {"series", "count"}, 1);
  out.count = count;
  out.last_seen = LastSeen(event);
  return out;
}

Result<std::vector<json>> ListPodEvents(kube::Client& kube, const std::string& ns,
                                        const std::string& name, const std::string& uid) {
  kube::ListOptions options;
  options.field_selector = "involvedObject.kind=Pod,involvedObject.name=" + name;
  POWERCTL_TRY(items, kube.List("/api/v1/namespaces/" + ns + "/events", options));
  std::vector<json> out;
  for (json& event : items) {
    // Events of an earlier pod with the same name are not about this one.
    const std::string involved = StringField(event, {"involvedObject", "uid"});
    if (!uid.empty() && !involved.empty() && involved != uid) continue;
    out.push_back(std::move(event));
  }
  // RFC 3339 in UTC sorts as text (fractions only in eventTime; same prefix sorts first).
  std::stable_sort(out.begin(), out.end(),
                   [](const json& a, const json& b) { return LastSeen(a) < LastSeen(b); });
  return out;
}

Result<std::vector<json>> ListDecisionBatches(kube::Client& kube, const std::string& ns,
                                              const std::string& uid) {
  if (uid.empty()) return std::vector<json>{};
  kube::ListOptions options;
  options.label_selector = extender::PodLabel(uid);
  return kube.List("/api/v1/namespaces/" + ns + "/events", options);
}

RecordedDecisions LatestDecisions(const std::vector<json>& events, const std::string& pod_name,
                                  const std::string& pod_uid) {
  RecordedDecisions out;
  auto keep = [&](extender::RecordedDecision recorded) {
    const scoring::Decision& d = recorded.decision;
    if (!pod_uid.empty() && !d.pod_uid.empty() && d.pod_uid != pod_uid) return;
    auto& slot = d.verb == scoring::kVerbPrioritize ? out.prioritize : out.filter;
    if (!slot || slot->decision.at_unix_ms <= d.at_unix_ms) slot = std::move(recorded);
  };
  for (const json& event : events) {
    if (auto batch = extender::DecisionsFromBatchEvent(event, pod_name, pod_uid); batch.ok()) {
      for (extender::RecordedDecision& recorded : *batch) keep(std::move(recorded));
    } else if (auto recorded = extender::DecisionFromEvent(event); recorded.ok()) {
      keep(std::move(*recorded));
    }
  }
  return out;
}

}  // namespace powerctl::explain
