#include "core/consolidate/apply.h"

#include "core/common/json_fields.h"
#include "core/consolidate/drain.h"
#include "core/consolidate/node_marks.h"
#include "core/kube/client.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace powerctl::consolidate {
namespace {

using json = nlohmann::json;

std::string NodeName(const json& node) {
  return StringField(node, {"metadata", "name"});
}

bool Unschedulable(const json& node) {
  const json* u = FindField(node, {"spec", "unschedulable"});
  return u != nullptr && u->is_boolean() && u->get<bool>();
}

const json* FindNode(const ClusterState& state, const std::string& name) {
  for (const json& n : state.nodes)
    if (NodeName(n) == name) return &n;
  return nullptr;
}

class Run {
 public:
  Run(kube::Client& client, const ApplyRequest& request, const StatePlanner& planner,
      const ApplyObserver& observer, const Clock& clock)
      : client_(client), request_(request), planner_(planner), observer_(observer), clock_(clock) {}

  Result<ApplyResult> Execute() {
    POWERCTL_TRY(server, client_.Version());
    eviction_version_ = EvictionApiVersion(server);
    POWERCTL_TRY(state, Fresh(ClusterState{}));
    std::vector<std::string> draining;
    for (const json& node : state.nodes) {
      auto mark = ReadNodeMark(node);
      if (mark && mark->state == kPowerStateDraining) draining.push_back(NodeName(node));
    }
    std::sort(draining.begin(), draining.end());
    int done = 0;
    for (const std::string& name : draining) {
      Event(name + ": marked draining by an earlier run; resuming");
      POWERCTL_TRY(now, Fresh(std::move(state)));
      state = std::move(now);
      NodeOutcome outcome = DrainOne(state, name, true, nullptr);
      const NodeAction action = outcome.action;
      if (action == NodeAction::kReleased) released_[name] = outcome.detail;
      result_.nodes.push_back(std::move(outcome));
      if (action == NodeAction::kFailed) return std::move(result_);
      if (action == NodeAction::kDrained) ++done;
    }
    if (!draining.empty()) {
      POWERCTL_TRY(now, Fresh(std::move(state)));
      state = std::move(now);
    }
    const int room = request_.max_nodes - done;
    if (room <= 0) return std::move(result_);
    PlanRequest plan_request = BaseRequest(state);
    plan_request.selector = request_.selector;
    plan_request.excluded = request_.excluded;
    plan_request.max_nodes = room;
    POWERCTL_TRY(plan, planner_(state, plan_request));
    result_.plan = plan;
    for (const NodePlan& planned : plan.nodes) {
      if (!planned.drain) continue;
      POWERCTL_TRY(now, Fresh(std::move(state)));
      state = std::move(now);
      NodeOutcome outcome = DrainOne(state, planned.node, false, &planned);
      const bool failed = outcome.action == NodeAction::kFailed;
      result_.nodes.push_back(std::move(outcome));
      if (failed) break;
    }
    return std::move(result_);
  }

 private:
  bool DryRunAny() const { return request_.dry_run != kube::DryRun::kNone; }

  void Event(const std::string& text) const {
    if (observer_.event) observer_.event(text);
  }

  // The cluster read again, except in a client-side dry run, where nothing changes.
  Result<ClusterState> Fresh(ClusterState state) {
    if (request_.dry_run == kube::DryRun::kClient && !first_read_) return state;
    first_read_ = false;
    return ReadClusterState(client_);
  }

  PlanRequest BaseRequest(const ClusterState& state) const {
    PlanRequest r;
    r.headroom = request_.headroom;
    r = ClusterPlanRequest(state, std::move(r));
    for (const auto& [name, why] : released_) r.kept_on[name] = "released in this run: " + why;
    return r;
  }

  // `name` planned on its own on the cluster as it is: every other node stays on.
  Result<NodePlan> PlanAlone(const ClusterState& state, const std::string& name) const {
    PlanRequest r = BaseRequest(state);
    r.kept_on.erase(name);
    for (const json& node : state.nodes)
      if (NodeName(node) != name) r.excluded.push_back(NodeName(node));
    POWERCTL_TRY(plan, planner_(state, r));
    for (NodePlan& n : plan.nodes)
      if (n.node == name) return std::move(n);
    return MakeError(ErrorCode::kNotFound, "node " + name + " is not in the cluster any more");
  }

  NodeOutcome DrainOne(const ClusterState& state, const std::string& name, bool resumed,
                       const NodePlan* planned) {
    NodeOutcome out;
    out.node = name;
    out.resumed = resumed;
    const json* node = FindNode(state, name);
    auto alone = PlanAlone(state, name);
    if (node == nullptr || !alone.ok()) {
      out.action = NodeAction::kFailed;
      out.detail = alone.ok() ? "node " + name + " is gone" : alone.error().message;
      return out;
    }
    std::optional<NodeMark> existing = ReadNodeMark(*node);
    if (!alone->drain) {
      out.detail = "the plan no longer holds: " + alone->reason;
      if (resumed) return Release(*node, *existing, std::move(out));
      out.action = NodeAction::kSkipped;
      Event(name + ": skipped, " + out.detail);
      return out;
    }
    if (planned != nullptr) {
      std::set<std::string> known;
      for (const PodMove& m : planned->moves) known.insert(m.pod);
      for (const PodMove& m : alone->moves) {
        if (known.count(m.pod) == 0) {
          out.action = NodeAction::kSkipped;
          out.detail = "the plan no longer holds: pod " + m.pod + " is on it now, which the plan " +
                       "did not move";
          Event(name + ": skipped, " + out.detail);
          return out;
        }
      }
    }
    out.expected_watts_saved = alone->watts_saved.value_or(0);
    if (resumed && existing && existing->expected_watts_saved > 0)
      out.expected_watts_saved = existing->expected_watts_saved;
    std::vector<json> pods, terminating;
    std::set<std::string> moving;
    for (const PodMove& m : alone->moves) moving.insert(m.pod);
    for (const json& pod : state.pods) {
      if (StringField(pod, {"spec", "nodeName"}) != name) continue;
      if (moving.count(PodName(pod)) == 0) continue;
      const bool going = FindField(pod, {"metadata", "deletionTimestamp"}) != nullptr;
      (going ? terminating : pods).push_back(pod);
    }
    if (request_.dry_run == kube::DryRun::kClient) {
      for (const json& pod : pods) out.evicted.push_back(PodName(pod));
      Event(fmt::format("{}: would cordon, evict {} pod(s) and mark drained", name, pods.size()));
      return out;
    }
    NodeMark mark;
    mark.state = kPowerStateDraining;
    mark.since = NowRfc3339();
    mark.expected_watts_saved = out.expected_watts_saved;
    mark.was_unschedulable = existing ? existing->was_unschedulable : Unschedulable(*node);
    if (!resumed) {
      auto patched =
          client_.MergePatch("/api/v1/nodes/" + name, MarkPatch(mark, true), DryRunAny());
      if (!patched.ok()) return Fail(std::move(out), "cordoning: " + patched.error().message);
      Event(name + ": cordoned and marked draining");
    }
    DrainRequest drain;
    drain.node = name;
    drain.pods = pods;
    drain.terminating = terminating;
    drain.eviction_api_version = eviction_version_;
    drain.dry_run = DryRunAny();
    drain.timeout = request_.timeout;
    drain.poll_interval = request_.poll_interval;
    drain.budgets = &state.budgets;
    drain.progress = observer_.progress;
    auto drained = DrainNode(client_, drain, clock_);
    if (!drained.ok()) {
      return Fail(std::move(out), drained.error().message +
                                      "; the node stays cordoned and marked draining: run apply "
                                      "again to resume, or undo it");
    }
    out.evicted = std::move(*drained);
    if (DryRunAny()) return out;
    Event(fmt::format("{}: {} pod(s) evicted and running elsewhere", name, out.evicted.size()));
    mark.state = kPowerStateDrained;
    mark.since = NowRfc3339();
    auto marked = client_.MergePatch("/api/v1/nodes/" + name, MarkPatch(mark, false));
    if (!marked.ok()) return Fail(std::move(out), "marking drained: " + marked.error().message);
    Event(fmt::format("{}: drained (expected to save {:.0f} W)", name, out.expected_watts_saved));
    if (!request_.on_drained.command.empty()) {
      out.hook = RunNodeHook(request_.on_drained, kHookDrained, *node, out.expected_watts_saved);
      Event(out.hook.ok ? name + ": --on-drained hook succeeded"
                        : name + ": --on-drained hook failed: " + out.hook.detail);
    }
    return out;
  }

  NodeOutcome Release(const json& node, const NodeMark& mark, NodeOutcome out) {
    out.action = NodeAction::kReleased;
    const std::string name = NodeName(node);
    if (request_.dry_run == kube::DryRun::kClient) {
      Event(name + ": would be released (" + out.detail + ")");
      return out;
    }
    auto patched = client_.MergePatch("/api/v1/nodes/" + name, UnmarkPatch(mark), DryRunAny());
    if (!patched.ok()) return Fail(std::move(out), "releasing: " + patched.error().message);
    Event(name + ": released (" + out.detail + ")");
    return out;
  }

  NodeOutcome Fail(NodeOutcome out, std::string why) const {
    out.action = NodeAction::kFailed;
    out.detail = std::move(why);
    Event(out.node + ": failed: " + out.detail);
    return out;
  }

  kube::Client& client_;
  const ApplyRequest& request_;
  const StatePlanner& planner_;
  const ApplyObserver& observer_;
  const Clock& clock_;
  std::string eviction_version_;
  bool first_read_ = true;
  std::map<std::string, std::string> released_;
  ApplyResult result_;
};

}  // namespace

PlanRequest ClusterPlanRequest(const ClusterState& state, PlanRequest r) {
  r.budgets = state.budgets;
  for (const json& node : state.nodes) {
    const std::string name = NodeName(node);
    if (Unschedulable(node)) r.cordoned.push_back(name);
    auto mark = ReadNodeMark(node);
    if (mark && mark->state == kPowerStateDrained) r.kept_on[name] = "already drained";
    if (mark && mark->state == kPowerStateDraining) r.kept_on[name] = "being drained";
    if (StringField(node, {"metadata", "annotations", kScaleDownDisabledAnnotation}) == "true")
      r.kept_on[name] = std::string(kScaleDownDisabledAnnotation) + "=true";
  }
  return r;
}

Result<Plan> PlanLive(kube::Client& client, PlanRequest settings, const StatePlanner& planner) {
  POWERCTL_TRY(state, ReadClusterState(client));
  return planner(state, ClusterPlanRequest(state, std::move(settings)));
}

Result<ClusterState> ReadClusterState(kube::Client& client) {
  ClusterState state;
  POWERCTL_TRY(nodes, client.List("/api/v1/nodes"));
  POWERCTL_TRY(pods, client.List("/api/v1/pods"));
  POWERCTL_TRY(budgets, ListDisruptionBudgets(client));
  state.nodes = std::move(nodes);
  state.pods = std::move(pods);
  state.budgets = std::move(budgets);
  return state;
}

bool ApplyResult::Failed() const {
  for (const NodeOutcome& n : nodes)
    if (n.action == NodeAction::kFailed || n.hook.failed()) return true;
  return false;
}

std::string_view NodeActionName(NodeAction action) {
  switch (action) {
    case NodeAction::kDrained:
      return "drained";
    case NodeAction::kReleased:
      return "released";
    case NodeAction::kSkipped:
      return "skipped";
    case NodeAction::kFailed:
      return "failed";
  }
  return "failed";
}

Result<ApplyResult> ApplyConsolidation(kube::Client& client, const ApplyRequest& request,
                                       const StatePlanner& planner, const ApplyObserver& observer,
                                       const Clock& clock) {
  if (request.timeout < std::chrono::seconds(1) || request.timeout > kMaxDrainTimeout)
    return MakeError(ErrorCode::kInvalidInput, "--timeout: must be between 1s and 6h");
  POWERCTL_CHECK_OK(ValidateHook(request.on_drained, "--on-drained", "--hook-timeout"));
  if (request.poll_interval < std::chrono::milliseconds(10) ||
      request.poll_interval > std::chrono::seconds(60))
    return MakeError(ErrorCode::kInternal, "poll interval out of range");
  Run run(client, request, planner, observer, clock);
  return run.Execute();
}

}  // namespace powerctl::consolidate
