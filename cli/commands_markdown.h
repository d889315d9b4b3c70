#pragma once
// docs/commands.md: every command, its usage, arguments, flags, notes and examples.

#include "cli/command_docs.h"

#include <string>
#include <vector>

namespace powerctl::cli {

// `commands` as DescribeCommands returns them (the root first).
std::string CommandsMarkdown(const std::vector<CommandDoc>& commands);

}  // namespace powerctl::cli
