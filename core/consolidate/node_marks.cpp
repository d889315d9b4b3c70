#include "core/consolidate/node_marks.h"

#include "core/common/json_fields.h"

#include <cmath>
#include <ctime>

namespace powerctl::consolidate {

using json = nlohmann::json;

std::optional<NodeMark> ReadNodeMark(const json& node) {
  const std::string label = StringField(node, {"metadata", "labels", kPowerStateLabel});
  const json* annotation = FindField(node, {"metadata", "annotations", kConsolidationAnnotation});
  if (label.empty() && annotation == nullptr) return std::nullopt;
  NodeMark mark;
  mark.state = label;
  const json parsed = annotation != nullptr && annotation->is_string()
                          ? json::parse(annotation->get<std::string>(), nullptr, false)
                          : json();
  if (!parsed.is_object()) {
    mark.annotation_readable = false;
    return mark;
  }
  if (mark.state.empty()) mark.state = StringField(parsed, {"state"});
  mark.since = StringField(parsed, {"since"});
  if (const json* w = FindField(parsed, {"expectedWattsSaved"}); w && w->is_number())
    mark.expected_watts_saved = w->get<double>();
  if (const json* u = FindField(parsed, {"wasUnschedulable"}); u && u->is_boolean())
    mark.was_unschedulable = u->get<bool>();
  return mark;
}

json MarkPatch(const NodeMark& mark, bool cordon) {
  const json annotation = {{"state", mark.state},
                           {"since", mark.since},
                           {"expectedWattsSaved", std::round(mark.expected_watts_saved * 10) / 10},
                           {"wasUnschedulable", mark.was_unschedulable}};
  json patch = {{"metadata",
                 {{"labels", {{kPowerStateLabel, mark.state}}},
                  {"annotations", {{kConsolidationAnnotation, annotation.dump()}}}}}};
  if (cordon) patch["spec"] = {{"unschedulable", true}};
  return patch;
}

json UnmarkPatch(const NodeMark& mark) {
  json patch = {{"metadata",
                 {{"labels", {{kPowerStateLabel, nullptr}}},
                  {"annotations", {{kConsolidationAnnotation, nullptr}}}}}};
  if (!mark.was_unschedulable) patch["spec"] = {{"unschedulable", false}};
  return patch;
}

std::string NowRfc3339() {
  std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

}  // namespace powerctl::consolidate
