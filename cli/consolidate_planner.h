#pragma once
// What `consolidate plan` and `consolidate apply` share: the planner over a live cluster's
// state (simulate::PlanSnapshot: pods' new homes chosen by the extender's scoring), and the
// registration of apply and undo under `consolidate` (cli/cmd_consolidate_apply.cpp).

#include "cli/app.h"
#include "core/config/config.h"
#include "core/consolidate/apply.h"

namespace powerctl::cli {

// `config` must outlive the planner.
consolidate::StatePlanner LivePlanner(const config::PowerctlConfig& config);

void RegisterConsolidateApply(CLI::App& consolidate, CommandEnv& env);

}  // namespace powerctl::cli
