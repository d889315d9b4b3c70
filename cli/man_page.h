#pragma once
// packaging/powerctl.1: the man page, from the same command tree as --help and
// docs/commands.md, plus the exit codes (exit_codes.h) and the environment powerctl reads.

#include "cli/command_docs.h"

#include <string>
#include <vector>

namespace powerctl::cli {

// `commands` as DescribeCommands returns them (the root first); `version` goes in the header.
std::string ManPage(const std::vector<CommandDoc>& commands, const std::string& version);

// Text escaped for roff: backslashes, hyphens (so options stay copyable) and a leading
// period or apostrophe, which roff would read as a request.
std::string RoffText(const std::string& text);

}  // namespace powerctl::cli
