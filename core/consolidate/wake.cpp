#include "core/consolidate/wake.h"

#include "core/common/json_fields.h"
#include "core/consolidate/node_hook.h"
#include "core/consolidate/pod_rules.h"
#include "core/kube/pod_resources.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace powerctl::consolidate {
namespace {

using json = nlohmann::json;

bool IsTaintOfAnOffNode(const json& taint) {
  const std::string key = StringField(taint, {"key"});
  return key == "node.kubernetes.io/unschedulable" || key == "node.kubernetes.io/unreachable" ||
         key == "node.kubernetes.io/not-ready";
}

struct Candidate {
  std::string name;
  double cost = std::numeric_limits<double>::infinity();  // expectedWattsSaved; unknown last
  const json* node = nullptr;
  json woken;
};

std::vector<Candidate> DrainedCandidates(const std::vector<json>& nodes) {
  std::vector<Candidate> out;
  for (const json& node : nodes) {
    std::optional<NodeMark> mark = ReadNodeMark(node);
    if (!mark || mark->state != kPowerStateDrained) continue;
    Candidate c{StringField(node, {"metadata", "name"}), std::numeric_limits<double>::infinity(),
                &node, AsWoken(node)};
    if (mark->annotation_readable) c.cost = mark->expected_watts_saved;
    out.push_back(std::move(c));
  }
  std::sort(out.begin(), out.end(), [](const Candidate& a, const Candidate& b) {
    return a.cost != b.cost ? a.cost < b.cost : a.name < b.name;
  });
  return out;
}

bool Fits(const json& pod, const kube::PodResources& requests, const json& woken,
          const scoring::NodeLoad& load) {
  return scoring::CheckNodeFit(pod, requests, woken, load).empty();
}

}  // namespace

json AsWoken(const json& node) {
  json woken = node;
  if (!woken.is_object()) return woken;
  json& spec = woken["spec"];
  if (!spec.is_object()) spec = json::object();
  spec.erase("unschedulable");
  if (auto taints = spec.find("taints"); taints != spec.end() && taints->is_array()) {
    json kept = json::array();
    for (const json& taint : *taints)
      if (!IsTaintOfAnOffNode(taint)) kept.push_back(taint);
    *taints = std::move(kept);
  }
  return woken;
}

bool IsUnschedulablePending(const json& pod) {
  if (!StringField(pod, {"spec", "nodeName"}).empty()) return false;
  if (StringField(pod, {"status", "phase"}) != "Pending") return false;
  const json* conditions = FindField(pod, {"status", "conditions"});
  if (conditions == nullptr || !conditions->is_array()) return false;
  for (const json& c : *conditions) {
    if (StringField(c, {"type"}) == "PodScheduled")
      return StringField(c, {"status"}) == "False" && StringField(c, {"reason"}) == "Unschedulable";
  }
  return false;
}

std::vector<std::string> DrainedNodesThatFit(
    const json& pod, const std::vector<json>& nodes,
    const std::map<std::string, scoring::NodeLoad>& loads) {
  std::vector<std::string> out;
  auto requests = kube::EffectivePodResources(pod);
  if (!requests.ok()) return out;
  for (const Candidate& c : DrainedCandidates(nodes)) {
    auto load = loads.find(c.name);
    if (Fits(pod, *requests, c.woken, load == loads.end() ? scoring::NodeLoad{} : load->second))
      out.push_back(c.name);
  }
  return out;
}

Result<WakePlan> PlanWake(const std::vector<json>& pods, const std::vector<json>& nodes,
                          int max_nodes, std::size_t max_pods) {
  if (max_nodes < 1 || max_nodes > kMaxWakeNodes) {
    return MakeError(
        ErrorCode::kInvalidInput,
        fmt::format("max nodes to wake must be 1..{}, not {}", kMaxWakeNodes, max_nodes));
  }
  std::vector<const json*> pending;
  for (const json& pod : pods)
    if (IsUnschedulablePending(pod)) pending.push_back(&pod);
  // Oldest first, as the scheduling queue retries them; the name breaks ties.
  std::stable_sort(pending.begin(), pending.end(), [](const json* a, const json* b) {
    const std::string ta = StringField(*a, {"metadata", "creationTimestamp"});
    const std::string tb = StringField(*b, {"metadata", "creationTimestamp"});
    return ta != tb ? ta < tb : PodName(*a) < PodName(*b);
  });
  if (pending.size() > max_pods) pending.resize(max_pods);

  std::map<std::string, scoring::NodeLoad> loads = scoring::NodeLoadsOf(pods);
  std::vector<Candidate> candidates = DrainedCandidates(nodes);
  WakePlan plan;
  std::vector<std::size_t> chosen;  // indices into candidates, in wake order
  for (const json* pod : pending) {
    auto requests = kube::EffectivePodResources(*pod);
    std::optional<std::size_t> home;
    if (requests.ok()) {
      for (std::size_t i : chosen) {
        if (Fits(*pod, *requests, candidates[i].woken, loads[candidates[i].name])) {
          home = i;
          break;
        }
      }
      for (std::size_t i = 0;
           !home && static_cast<int>(chosen.size()) < max_nodes && i < candidates.size(); ++i) {
        if (std::find(chosen.begin(), chosen.end(), i) != chosen.end()) continue;
        if (Fits(*pod, *requests, candidates[i].woken, loads[candidates[i].name])) {
          home = i;
          chosen.push_back(i);
          plan.wakes.push_back({candidates[i].name, NodeAddresses(*candidates[i].node), {}});
        }
      }
    }
    if (!home) {
      plan.no_room.push_back(PodName(*pod));
      continue;
    }
    scoring::NodeLoad& load = loads[candidates[*home].name];
    ++load.pods;
    load.cpu_millis += requests->cpu_request_millis;
    load.memory_bytes += requests->memory_request_bytes;
    for (NodeWake& w : plan.wakes)
      if (w.node == candidates[*home].name) w.pods.push_back(PodName(*pod));
  }
  return plan;
}

}  // namespace powerctl::consolidate
