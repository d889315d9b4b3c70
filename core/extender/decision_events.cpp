#include "core/extender/decision_events.h"

#include "core/common/encoding.h"
#include "core/common/json_bounds.h"
#include "core/common/json_fields.h"
#include "core/kube/events.h"

#include <fmt/format.h>

#include <algorithm>
#include <ctime>
#include <limits>

namespace powerctl::extender {
namespace {

using json = nlohmann::json;

// Node names in a message; more are summarised as "and N more".
constexpr std::size_t kMessageNodes = 5;
// A power reason kept when the other reasons do not fit: its cost fits in this (a model's
// error may not, and is cut).
constexpr std::size_t kKeptPowerReasonBytes = 96;
const scoring::Component* PowerComponent(const scoring::NodeDecision& node) {
  for (const scoring::Component& c : node.components) {
    if (c.name == scoring::kPower) return &c;
  }
  return nullptr;
}

bool Rejects(const scoring::Decision& decision) {
  return std::any_of(decision.nodes.begin(), decision.nodes.end(),
                     [](const scoring::NodeDecision& n) { return n.passed == false; });
}

// Whether TopNodes(decision, max_scored, max_rejected) would keep every node.
bool KeepsEveryNode(const scoring::Decision& decision, std::size_t max_scored,
                    std::size_t max_rejected) {
  std::size_t scored = 0, rejected = 0;
  for (const scoring::NodeDecision& n : decision.nodes) {
    if (n.passed == false) {
      ++rejected;
    } else if (n.score) {
      ++scored;
    } else {
      return false;  // a mere pass, which TopNodes leaves out
    }
  }
  return scored <= max_scored && rejected <= max_rejected;
}

std::string ScoredMessage(const scoring::Decision& d) {
  scoring::Decision top = scoring::TopNodes(d, kMessageNodes, 0);
  std::stable_sort(top.nodes.begin(), top.nodes.end(), [](const auto& a, const auto& b) {
    return a.score.value_or(0) > b.score.value_or(0);
  });
  const std::size_t total = d.nodes.size() + d.omitted_nodes;
  std::string out = fmt::format("Scored {} node{} for power", total, total == 1 ? "" : "s");
  for (std::size_t i = 0; i < top.nodes.size(); ++i) {
    const scoring::NodeDecision& n = top.nodes[i];
    out += i == 0 ? "; best " : ", ";
    out += fmt::format("{} {}", n.node, n.score.value_or(0));
    if (const scoring::Component* power = PowerComponent(n); power != nullptr) {
      out += " (" + power->reason + ")";
    }
  }
  if (total > top.nodes.size()) out += fmt::format(" and {} more", total - top.nodes.size());
  return out;
}

std::string FilteredMessage(const scoring::Decision& d) {
  std::size_t rejected = 0;
  std::string list;
  for (const scoring::NodeDecision& n : d.nodes) {
    if (n.passed != false) continue;
    if (++rejected <= kMessageNodes) {
      list += rejected == 1 ? "" : "; ";
      list += n.node + ": " + n.reason;
    }
  }
  const std::size_t total = d.nodes.size() + d.omitted_nodes;
  std::string out =
      fmt::format("Rejected {} of {} node{}: {}", rejected, total, total == 1 ? "" : "s", list);
  if (rejected > kMessageNodes) out += fmt::format(" and {} more", rejected - kMessageNodes);
  return out;
}

}  // namespace

const char* DecisionEventReason(const scoring::Decision& decision) {
  if (decision.pod_name.empty() || decision.pod_namespace.empty()) return nullptr;
  if (decision.verb == scoring::kVerbPrioritize) return kReasonPowerScored;
  if (decision.verb == scoring::kVerbFilter && (Rejects(decision) || !decision.error.empty())) {
    return kReasonPowerFiltered;
  }
  return nullptr;
}

scoring::Decision DecisionForEvent(const scoring::Decision& decision) {
  return scoring::TopNodes(decision, kEventScoredNodes, std::numeric_limits<std::size_t>::max());
}

std::string DecisionEventMessage(const scoring::Decision& d) {
  std::string message;
  if (!d.error.empty()) {
    message = d.verb + " failed: " + d.error;
  } else {
    message = d.verb == scoring::kVerbPrioritize ? ScoredMessage(d) : FilteredMessage(d);
    for (const std::string& note : d.notes) message += "; " + note;
  }
  message = TruncateUtf8(std::move(message), kube::kMaxEventMessageBytes);
  // Reasons can quote what a request carried: invalid UTF-8 becomes U+FFFD here, so the
  // Event always serialises.
  return json::parse(json(message).dump(-1, ' ', false, json::error_handler_t::replace))
      .get<std::string>();
}

std::string DecisionAnnotation(const scoring::Decision& decision) {
  // Usually the decision was already cut to what its Event holds (DecisionForEvent) and fits.
  if (KeepsEveryNode(decision, kEventScoredNodes, kEventRejectedNodes)) {
    std::string text = scoring::DecisionJsonText(decision);
    if (text.size() <= kMaxDecisionAnnotationBytes) return text;
  }
  // Fewer nodes, then only the power reasons (cut short), then no per-component reasons, then
  // no notes: whatever still fits. A power reason is the node's cost ("+30.0 W, 15.00 W/core
  // to fill"), which `explain` shows per node and compares to say why the chosen node won.
  for (std::size_t scale : {1, 2, 4, 8, 20}) {
    scoring::Decision top =
        scoring::TopNodes(decision, kEventScoredNodes / scale, kEventRejectedNodes / scale);
    for (int pass = 0; pass < 4; ++pass) {
      if (pass >= 1) {
        for (auto& n : top.nodes) {
          for (auto& c : n.components) {
            if (pass == 1 && c.name == scoring::kPower) {
              c.reason = TruncateUtf8(std::move(c.reason), kKeptPowerReasonBytes);
            } else {
              c.reason.clear();
            }
          }
        }
      }
      if (pass >= 3) top.notes.clear();
      std::string text = scoring::DecisionJsonText(top);
      if (text.size() <= kMaxDecisionAnnotationBytes) return text;
    }
  }
  scoring::Decision bare = scoring::TopNodes(decision, 0, 0);
  bare.notes.clear();
  bare.error = TruncateUtf8(bare.error, 1024);
  return scoring::DecisionJsonText(bare);
}

json TlsFailureEvent(const std::string& pod_namespace, const std::string& pod_name,
                     const TlsWarning& warning, const DecisionEventSource& source) {
  kube::PodEventFields fields;
  fields.pod_namespace = pod_namespace;
  fields.pod_name = pod_name;
  fields.reason = kReasonTlsHandshakeFailed;
  fields.type = "Warning";
  fields.action = "Handshake";
  fields.component = kEventComponent;
  fields.instance = source.instance;
  fields.count = warning.count;
  fields.now = source.now;
  fields.message =
      warning.count <= 1
          ? fmt::format("TLS handshake with {} failed on the scheduler port ({}): {}",
                        warning.remote, warning.reason, warning.message)
          : fmt::format(
                "{} TLS handshakes failed on the scheduler port; the latest with {} ({}): "
                "{}",
                warning.count, warning.remote, warning.reason, warning.message);
  return kube::PodEvent(fields);
}

std::optional<nlohmann::json> DecisionEvent(const scoring::Decision& decision,
                                            const DecisionEventSource& source) {
  const char* reason = DecisionEventReason(decision);
  if (reason == nullptr) return std::nullopt;
  const std::string when = kube::EventTimestamp(source.now);
  json involved = {{"apiVersion", "v1"},
                   {"kind", "Pod"},
                   {"namespace", decision.pod_namespace},
                   {"name", decision.pod_name}};
  if (!decision.pod_uid.empty()) involved["uid"] = decision.pod_uid;
  return json{{"apiVersion", "v1"},
              {"kind", "Event"},
              {"metadata",
               {{"name", kube::EventName(decision.pod_name, source.name_suffix)},
                {"namespace", decision.pod_namespace},
                {"annotations", {{kDecisionAnnotation, DecisionAnnotation(decision)}}}}},
              {"involvedObject", involved},
              {"reason", reason},
              {"message", DecisionEventMessage(decision)},
              {"type", "Normal"},
              {"source", {{"component", kEventComponent}}},
              {"reportingComponent", kEventComponent},
              {"reportingInstance", source.instance},
              {"action", decision.verb == scoring::kVerbPrioritize ? "Prioritize" : "Filter"},
              {"firstTimestamp", when},
              {"lastTimestamp", when},
              {"count", 1}};
}

RecordedDecision RecordedFrom(const nlohmann::json& event) {
  RecordedDecision out;
  out.event_reason = StringField(event, {"reason"});
  out.instance = StringField(event, {"reportingInstance"});
  out.message = StringField(event, {"message"});
  out.last_timestamp = StringField(event, {"lastTimestamp"});
  if (out.last_timestamp.empty()) out.last_timestamp = StringField(event, {"eventTime"});
  return out;
}

Result<RecordedDecision> DecisionFromEvent(const nlohmann::json& event) {
  RecordedDecision out = RecordedFrom(event);
  if (out.event_reason != kReasonPowerScored && out.event_reason != kReasonPowerFiltered) {
    return MakeError(ErrorCode::kNotFound, "event: not a decision event");
  }
  const std::string annotation =
      StringField(event, {"metadata", "annotations", kDecisionAnnotation});
  if (annotation.empty()) {
    return MakeError(ErrorCode::kNotFound,
                     std::string("event: no ") + kDecisionAnnotation + " annotation");
  }
  json document = ParseJsonBounded(annotation);  // anyone who may write Events wrote this
  if (document.is_discarded()) {
    return MakeError(ErrorCode::kInvalidInput, std::string("event: annotation ") +
                                                   kDecisionAnnotation +
                                                   " is not JSON (or is nested too deeply)");
  }
  POWERCTL_TRY(decision, scoring::DecisionFromJson(document));
  out.decision = std::move(decision);
  return out;
}

}  // namespace powerctl::extender
