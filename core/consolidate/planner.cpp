#include "core/consolidate/planner.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace powerctl::consolidate {
namespace {

Error Invalid(std::string message) {
  return MakeError(ErrorCode::kInvalidInput, std::move(message));
}

struct Candidate {
  std::size_t node = 0;
  std::vector<std::size_t> movable;
  std::vector<long> budget_uses;  // pods covered, per budget
};

}  // namespace

Result<Plan> PlanConsolidation(const PlanRequest& request, Evacuator& evacuator) {
  if (!(request.headroom >= 0 && request.headroom <= kMaxHeadroom))
    return Invalid("consolidate.headroom: must be between 0 and 0.9");
  if (request.max_nodes < 1 || request.max_nodes > kMaxPlanNodes)
    return Invalid(fmt::format("--max-nodes: must be 1 to {}", kMaxPlanNodes));
  if (request.nodes.size() > static_cast<std::size_t>(kMaxPlanNodes))
    return Invalid(fmt::format("the cluster has more than {} nodes", kMaxPlanNodes));
  const std::set<std::string> excluded(request.excluded.begin(), request.excluded.end());
  const std::set<std::string> cordoned(request.cordoned.begin(), request.cordoned.end());

  Plan plan;
  plan.headroom = request.headroom;
  std::vector<NodePlan> nodes(request.nodes.size());
  std::vector<Candidate> candidates;
  for (std::size_t i = 0; i < request.nodes.size(); ++i) {
    const PlanNodeInput& in = request.nodes[i];
    NodePlan& out = nodes[i];
    out.node = in.name;
    out.watts_now = in.watts;
    plan.watts_before += in.watts;
    Candidate c;
    c.node = i;
    c.budget_uses.assign(request.budgets.size(), 0);
    std::vector<std::string> blockers;
    for (std::size_t p = 0; p < in.pods.size(); ++p) {
      const PodVerdict verdict = ClassifyPod(in.pods[p]);
      if (verdict.role == PodRole::kStays) {
        ++out.staying_pods;
        continue;
      }
      if (verdict.role == PodRole::kBlocks) {
        blockers.push_back("pod " + PodName(in.pods[p]) + ": " + verdict.reason);
        continue;
      }
      c.movable.push_back(p);
      for (std::size_t b = 0; b < request.budgets.size(); ++b)
        if (request.budgets[b].Covers(in.pods[p])) ++c.budget_uses[b];
    }
    if (auto kept = request.kept_on.find(in.name); kept != request.kept_on.end()) {
      out.reason = kept->second;
    } else if (excluded.count(in.name) != 0) {
      out.reason = "excluded (--exclude)";
    } else if (!request.selector.Matches(in.labels)) {
      out.reason = "not selected (-l)";
    } else if (!blockers.empty()) {
      out.reason = blockers.front();
      if (blockers.size() > 1) out.reason += fmt::format(" (and {} more)", blockers.size() - 1);
    } else {
      candidates.push_back(std::move(c));
    }
  }

  std::vector<bool> open(request.nodes.size(), true);
  // Where pods may go: a node still on that is not cordoned.
  std::vector<bool> receives(request.nodes.size(), true);
  for (std::size_t i = 0; i < request.nodes.size(); ++i)
    receives[i] = cordoned.count(request.nodes[i].name) == 0;
  auto receivers = [&](std::size_t emptied) {
    std::vector<bool> out(open.size());
    for (std::size_t i = 0; i < open.size(); ++i) out[i] = open[i] && receives[i] && i != emptied;
    return out;
  };
  // A node that takes moved pods stays on: emptying it later would move them twice.
  std::vector<std::string> received_from(request.nodes.size());
  std::map<std::string, std::size_t> position;
  for (std::size_t i = 0; i < request.nodes.size(); ++i) position[request.nodes[i].name] = i;
  std::vector<long> budget_left;
  for (const DisruptionBudget& b : request.budgets) budget_left.push_back(b.disruptions_allowed);
  const double max_fill = 1 - request.headroom;
  while (plan.drained < request.max_nodes) {
    std::optional<std::size_t> best;  // index into candidates
    double best_saving = 0;
    for (std::size_t k = 0; k < candidates.size(); ++k) {
      const Candidate& c = candidates[k];
      if (!open[c.node]) continue;
      NodePlan& out = nodes[c.node];
      if (!received_from[c.node].empty()) {
        out.reason = "receives pods from " + received_from[c.node];
        continue;
      }
      std::string over_budget;
      for (std::size_t b = 0; b < budget_left.size() && over_budget.empty(); ++b) {
        if (c.budget_uses[b] > 0 && budget_left[b] - c.budget_uses[b] < 0) {
          const DisruptionBudget& budget = request.budgets[b];
          over_budget = fmt::format(
              "PodDisruptionBudget {}/{} allows {} more disruption(s); the node's pods need {}",
              budget.namespace_, budget.name, budget_left[b], c.budget_uses[b]);
        }
      }
      if (!over_budget.empty()) {
        out.reason = over_budget;
        continue;
      }
      const Evacuation trial =
          evacuator.Evacuate(c.node, c.movable, receivers(c.node), max_fill, false);
      if (!trial.fits) {
        out.reason = fmt::format("pod {} fits on no node that stays on, within {:g} % headroom",
                                 trial.unplaced, request.headroom * 100);
        continue;
      }
      const double saving = out.watts_now - trial.added_watts;
      if (!(saving > 0)) {
        out.reason =
            fmt::format("no saving: its pods would add {:.0f} W elsewhere, it draws {:.0f} W",
                        trial.added_watts, out.watts_now);
        continue;
      }
      if (!best || saving > best_saving) {
        best = k;
        best_saving = saving;
      }
    }
    if (!best) break;
    const Candidate& c = candidates[*best];
    Evacuation done = evacuator.Evacuate(c.node, c.movable, receivers(c.node), max_fill, true);
    if (!done.fits) break;  // the evacuator is deterministic: the trial fitted
    open[c.node] = false;
    for (std::size_t b = 0; b < budget_left.size(); ++b) budget_left[b] -= c.budget_uses[b];
    NodePlan& out = nodes[c.node];
    for (const PodMove& m : done.moves) {
      auto at = position.find(m.to);
      if (at != position.end() && received_from[at->second].empty())
        received_from[at->second] = out.node;
    }
    out.drain = true;
    out.order = ++plan.drained;
    out.watts_saved = out.watts_now - done.added_watts;
    out.moves = std::move(done.moves);
    out.reason.clear();
    plan.watts_after -= *out.watts_saved;
  }
  for (NodePlan& n : nodes) {
    if (!n.drain && n.reason.empty())
      n.reason = plan.drained >= request.max_nodes ? "--max-nodes reached" : "not a candidate";
  }
  plan.watts_after += plan.watts_before;
  std::vector<NodePlan> ordered;
  for (const NodePlan& n : nodes)
    if (n.drain) ordered.push_back(n);
  std::sort(ordered.begin(), ordered.end(),
            [](const NodePlan& a, const NodePlan& b) { return a.order < b.order; });
  for (NodePlan& n : nodes)
    if (!n.drain) ordered.push_back(std::move(n));
  plan.nodes = std::move(ordered);
  return plan;
}

}  // namespace powerctl::consolidate
