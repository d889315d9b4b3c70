#include "core/consolidate/marked_nodes.h"

#include "core/common/json_fields.h"
#include "core/consolidate/node_marks.h"
#include "core/consolidate/pod_rules.h"
#include "core/kube/client.h"
#include "core/telemetry/metrics_api.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace powerctl::consolidate {
namespace {

using json = nlohmann::json;
using std::chrono::system_clock;

// Ready True with a heartbeat (or transition) within kHeartbeatFresh of `now`.
bool KubeletReady(const json& node, system_clock::time_point now) {
  const json* conditions = FindField(node, {"status", "conditions"});
  if (conditions == nullptr || !conditions->is_array()) return false;
  for (const json& c : *conditions) {
    if (StringField(c, {"type"}) != "Ready") continue;
    if (StringField(c, {"status"}) != "True") return false;
    std::string beat = StringField(c, {"lastHeartbeatTime"});
    if (beat.empty()) beat = StringField(c, {"lastTransitionTime"});
    auto at = telemetry::ParseRfc3339(beat);
    return at && now - *at <= kHeartbeatFresh;
  }
  return false;
}

std::string Age(system_clock::duration d) {
  const auto minutes = std::chrono::duration_cast<std::chrono::minutes>(d).count();
  if (minutes < 120) return fmt::format("{} min", minutes);
  return fmt::format("{} h", minutes / 60);
}

bool Terminal(const json& pod) {
  const std::string phase = StringField(pod, {"status", "phase"});
  return phase == "Succeeded" || phase == "Failed";
}

}  // namespace

double StillOnWatts(double expected_watts_saved) {
  return std::max(kStillOnFloorWatts, kStillOnShareOfSaving * expected_watts_saved);
}

MarkedNode JudgeMarkedNode(const json& node, const std::vector<json>& pods,
                           system_clock::time_point now, std::optional<double> measured_watts) {
  MarkedNode out;
  out.name = StringField(node, {"metadata", "name"});
  out.mark = ReadNodeMark(node).value_or(NodeMark{});
  const json* unschedulable = FindField(node, {"spec", "unschedulable"});
  out.cordoned =
      unschedulable != nullptr && unschedulable->is_boolean() && unschedulable->get<bool>();
  out.kubelet_ready = KubeletReady(node, now);
  out.measured_watts = measured_watts;
  for (const json& pod : pods) {
    if (Terminal(pod) || ClassifyPod(pod).role == PodRole::kStays) continue;
    out.movable.push_back(PodName(pod));
  }
  std::sort(out.movable.begin(), out.movable.end());

  const auto since = telemetry::ParseRfc3339(out.mark.since);
  // A plain duration and a flag: GCC 12 warns falsely on an optional duration here.
  const bool dated = since.has_value();
  const system_clock::duration age = dated ? now - *since : system_clock::duration::zero();
  if (out.mark.state == kPowerStateDraining) {
    if (dated && age > kStuckDraining) {
      out.drift.push_back(
          fmt::format("draining for {}: an apply was interrupted or is stuck", Age(age)));
    }
    return out;
  }
  if (out.mark.state != kPowerStateDrained) {
    out.drift.push_back(fmt::format("unknown power state \"{}\"", out.mark.state));
    return out;
  }
  if (!out.cordoned) out.drift.push_back("uncordoned by hand: the scheduler may place pods on it");
  if (!out.movable.empty()) {
    out.drift.push_back(fmt::format(
        "{} pod(s) landed on it since it was drained ({}{})", out.movable.size(),
        fmt::join(out.movable.begin(),
                  out.movable.begin() + std::min<std::size_t>(3, out.movable.size()), ", "),
        out.movable.size() > 3 ? ", ..." : ""));
  }
  const bool past_grace = !dated || age > kStillOnGrace;
  // Measured power says it most directly; the kubelet's heartbeat where there is none.
  if (past_grace && measured_watts &&
      *measured_watts > StillOnWatts(out.mark.expected_watts_saved)) {
    const std::string when = dated ? fmt::format(" {} after it was drained", Age(age)) : "";
    out.drift.push_back(fmt::format(
        "still draws {:.0f} W{} (measured; more than {:.0f} W means on): the watts the plan "
        "expected are not saved",
        *measured_watts, when, StillOnWatts(out.mark.expected_watts_saved)));
  } else if (out.kubelet_ready && past_grace) {
    out.drift.push_back(
        dated ? fmt::format("still on {} after it was drained (its kubelet is Ready): the watts "
                            "the plan expected are not saved",
                            Age(age))
              : "still on (its kubelet is Ready): the watts the plan expected are not saved");
  }
  return out;
}

Result<std::vector<MarkedNode>> InspectMarkedNodes(kube::Client& client,
                                                   system_clock::time_point now,
                                                   const MeasureNodePower& measure) {
  kube::ListOptions marked;
  marked.label_selector = kPowerStateLabel;
  POWERCTL_TRY(nodes, client.List("/api/v1/nodes", marked));
  std::map<std::string, std::vector<json>> pods_by_node;
  if (nodes.size() <= kMarkedNodesListedOneByOne) {
    for (const json& node : nodes) {
      const std::string name = StringField(node, {"metadata", "name"});
      kube::ListOptions on_node;
      on_node.field_selector = "spec.nodeName=" + name;
      POWERCTL_TRY(pods, client.List("/api/v1/pods", on_node));
      pods_by_node[name] = std::move(pods);
    }
  } else {
    POWERCTL_TRY(pods, client.List("/api/v1/pods"));
    for (json& pod : pods)
      pods_by_node[StringField(pod, {"spec", "nodeName"})].push_back(std::move(pod));
  }
  std::map<std::string, double> watts;
  if (measure) {
    std::vector<json> drained;
    for (const json& node : nodes) {
      const std::optional<NodeMark> mark = ReadNodeMark(node);
      if (mark && mark->state == kPowerStateDrained) drained.push_back(node);
    }
    if (!drained.empty()) watts = measure(drained);
  }
  std::vector<MarkedNode> out;
  for (const json& node : nodes) {
    const std::string name = StringField(node, {"metadata", "name"});
    auto measured = watts.find(name);
    out.push_back(JudgeMarkedNode(
        node, pods_by_node[name], now,
        measured == watts.end() ? std::nullopt : std::optional<double>(measured->second)));
  }
  std::sort(out.begin(), out.end(),
            [](const MarkedNode& a, const MarkedNode& b) { return a.name < b.name; });
  return out;
}

}  // namespace powerctl::consolidate
