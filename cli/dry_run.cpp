#include "cli/dry_run.h"

namespace powerctl::cli {

void AddDryRunFlag(CLI::App& cmd, std::string& value, CommandEnv& env,
                   const std::string& command_path) {
  value = "none";
  cmd.add_option("--dry-run", value,
                 "none: change the cluster; client: only show what would change; server: let the "
                 "API server "
                 "validate without persisting")
      ->check(Choices(env, command_path + " --dry-run", {"none", "client", "server"}))
      ->type_name("MODE");
}

setup::DryRunMode ParseDryRun(const std::string& value) {
  if (value == "client") return setup::DryRunMode::kClient;
  if (value == "server") return setup::DryRunMode::kServer;
  return setup::DryRunMode::kNone;
}

std::string DryRunSuffix(setup::DryRunMode mode) {
  switch (mode) {
    case setup::DryRunMode::kClient:
      return " (dry run)";
    case setup::DryRunMode::kServer:
      return " (server dry run)";
    case setup::DryRunMode::kNone:
      return "";
  }
  return "";
}

}  // namespace powerctl::cli
