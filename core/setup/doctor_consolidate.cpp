#include "core/setup/doctor_consolidate.h"

#include "core/consolidate/marked_nodes.h"
#include "core/consolidate/node_marks.h"

#include <fmt/format.h>

namespace powerctl::setup {

CheckResult CheckDrainedNodes(kube::Client& client, std::chrono::system_clock::time_point now) {
  CheckResult r{kDrainedNodesCheckId, "Nodes drained by consolidate are still empty and off",
                CheckStatus::kPass, "", ""};
  auto nodes = consolidate::InspectMarkedNodes(client, now);
  if (!nodes.ok()) {
    r.status = CheckStatus::kWarn;
    r.message = "cannot read the drained nodes: " + nodes.error().message;
    r.fix = "grant list on nodes and pods (powerctl apply consolidate has the ClusterRole)";
    return r;
  }
  if (nodes->empty()) {
    r.message = "no node is drained";
    return r;
  }
  int drained = 0, draining = 0;
  double saved = 0;
  std::vector<std::string> drifted;
  bool stuck = false;
  for (const consolidate::MarkedNode& n : *nodes) {
    if (n.mark.state == consolidate::kPowerStateDraining) {
      ++draining;
      stuck = stuck || !n.drift.empty();
    } else {
      ++drained;
      saved += n.mark.expected_watts_saved;
    }
    if (!n.drift.empty())
      drifted.push_back(fmt::format("{}: {}", n.name, fmt::join(n.drift, "; ")));
  }
  r.message = fmt::format("{} drained (about {:.0f} W saved once switched off)", drained, saved);
  if (draining > 0) r.message += fmt::format(", {} draining", draining);
  if (drifted.empty()) return r;
  r.status = CheckStatus::kWarn;
  r.message += fmt::format("; {} drifted: {}", drifted.size(), fmt::join(drifted, " | "));
  r.fix = stuck ? "rerun powerctl consolidate apply (it finishes draining nodes first), or take a "
                  "node back with powerctl consolidate undo NODE"
                : "take a node back with powerctl consolidate undo NODE, or drain it again with "
                  "powerctl consolidate apply; a node still on needs its --on-drained hook (or "
                  "cluster-autoscaler) to switch it off";
  return r;
}

}  // namespace powerctl::setup
