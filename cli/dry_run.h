#pragma once
// The --dry-run=none|client|server flag every mutating command shares.

#include "cli/app.h"
#include "core/setup/apply.h"

#include <CLI/CLI.hpp>

#include <string>

namespace powerctl::cli {

void AddDryRunFlag(CLI::App& cmd, std::string& value, CommandEnv& env,
                   const std::string& command_path);
setup::DryRunMode ParseDryRun(const std::string& value);
// " (dry run)", " (server dry run)" or "".
std::string DryRunSuffix(setup::DryRunMode mode);

}  // namespace powerctl::cli
