#pragma once
// What the `consolidate` commands share: the planner over a live cluster's state
// (simulate::PlanSnapshot: pods' new homes chosen by the extender's scoring), used by plan and
// apply, and the registration of the subcommands in files of their own: apply and undo
// (cli/cmd_consolidate_apply.cpp), wake (cli/cmd_consolidate_wake.cpp).

#include "cli/app.h"
#include "core/config/config.h"
#include "core/consolidate/apply.h"

#include <string>
#include <vector>

namespace powerctl::cli {

// Which nodes plan and apply may empty: --max-nodes, -l/--selector, --exclude.
struct NodeChoiceFlags {
  int max_nodes = consolidate::kMaxPlanNodes;
  std::string selector;
  std::vector<std::string> exclude;
};
void AddNodeChoiceFlags(CLI::App& cmd, NodeChoiceFlags& flags);

// `config` must outlive the planner.
consolidate::StatePlanner LivePlanner(const config::PowerctlConfig& config);

void RegisterConsolidateApply(CLI::App& consolidate, CommandEnv& env);
void RegisterConsolidateWake(CLI::App& consolidate, CommandEnv& env);

}  // namespace powerctl::cli
