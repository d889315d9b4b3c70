#include "core/consolidate/wake_run.h"

#include "core/common/json_fields.h"
#include "core/consolidate/pod_rules.h"
#include "core/consolidate/undo.h"
#include "core/kube/client.h"
#include "core/kube/events.h"

#include <fmt/format.h>

#include <map>

namespace powerctl::consolidate {
namespace {

using json = nlohmann::json;

// One Event per pod and node, named after both: a pass that finds the pod still Pending (the
// node is still booting) meets the Event it recorded before (409) and records no other.
std::string WakeEventName(const json& pod, const std::string& node) {
  std::uint32_t hash = 2166136261u;  // FNV-1a: short, stable across runs
  for (unsigned char c : node) hash = (hash ^ c) * 16777619u;
  return kube::EventName(StringField(pod, {"metadata", "name"}), fmt::format("wake-{:08x}", hash));
}

json WakeEvent(const json& pod, const NodeWake& wake, bool waking, const WakeRequest& request,
               std::chrono::system_clock::time_point now) {
  kube::PodEventFields fields;
  fields.name = WakeEventName(pod, wake.node);
  fields.pod_namespace = StringField(pod, {"metadata", "namespace"});
  fields.pod_name = StringField(pod, {"metadata", "name"});
  fields.pod_uid = StringField(pod, {"metadata", "uid"});
  fields.reason = kReasonWakeNeeded;
  fields.type = "Normal";
  fields.component = kWakeEventComponent;
  fields.instance = request.instance;
  fields.action = "Wake";
  fields.message = waking
                       ? fmt::format(
                             "No node has room; node {} (drained by powerctl consolidate) would "
                             "take this pod: waking it with the --on-wake hook",
                             wake.node)
                       : fmt::format(
                             "No node has room; node {} (drained by powerctl consolidate) would "
                             "take this pod: switch it on, then run `powerctl consolidate undo {}`",
                             wake.node, wake.node);
  fields.now = now;
  return kube::PodEvent(fields);
}

}  // namespace

Result<WakeReport> WakeOnce(kube::Client& client, const WakeRequest& request,
                            std::chrono::system_clock::time_point now) {
  POWERCTL_CHECK_OK(ValidateHook(request.on_wake, "--on-wake", "--hook-timeout"));
  POWERCTL_TRY(nodes, client.List("/api/v1/nodes"));
  kube::ListOptions running;
  running.field_selector = "status.phase!=Succeeded,status.phase!=Failed";
  POWERCTL_TRY(pods, client.List("/api/v1/pods", running));
  POWERCTL_TRY(plan, PlanWake(pods, nodes, request.max_nodes, kMaxWakePods));

  std::map<std::string, const json*> by_name, node_by_name;
  for (const json& pod : pods) by_name[PodName(pod)] = &pod;
  WakeReport report;
  for (const json& node : nodes) {
    node_by_name[StringField(node, {"metadata", "name"})] = &node;
    const std::optional<NodeMark> mark = ReadNodeMark(node);
    if (mark && mark->state == kPowerStateDrained) ++report.drained_nodes;
  }
  report.no_room = plan.no_room;
  const bool waking = !request.on_wake.command.empty();
  for (NodeWake& wake : plan.wakes) {
    NodeWakeOutcome outcome;
    if (!request.dry_run) {
      for (const std::string& name : wake.pods) {
        const json& pod = *by_name.at(name);
        const std::string ns = StringField(pod, {"metadata", "namespace"});
        Status created = client.CreateOnly("/api/v1/namespaces/" + ns + "/events",
                                           WakeEvent(pod, wake, waking, request, now));
        if (created.ok()) {
          ++report.events;
        } else if (created.error().code != ErrorCode::kConflict) {
          report.warnings.push_back(
              fmt::format("cannot record an Event on pod {}: {}", name, created.error().message));
        }
      }
    }
    if (waking && !request.dry_run) {
      const json& node = *node_by_name.at(wake.node);
      const std::optional<NodeMark> mark = ReadNodeMark(node);
      outcome.hook =
          RunNodeHook(request.on_wake, kHookWake, node, mark ? mark->expected_watts_saved : 0.0);
      if (outcome.hook.ok) {
        auto back = UndoNode(client, wake.node);
        if (back.ok()) {
          outcome.brought_back = true;
        } else {
          outcome.error = back.error().message;
        }
      }
    }
    outcome.wake = std::move(wake);
    report.nodes.push_back(std::move(outcome));
  }
  return report;
}

}  // namespace powerctl::consolidate
