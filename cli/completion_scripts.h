#pragma once
// Shell completion scripts generated from the command tree, so they never fall
// behind the commands (completions/ holds the same output; a test keeps them equal).

#include "cli/app.h"

#include <CLI/CLI.hpp>

#include <string>

namespace powerctl::cli {

std::string BashCompletion(const CLI::App& root, const CompletionHints& hints);
std::string ZshCompletion(const CLI::App& root, const CompletionHints& hints);
std::string FishCompletion(const CLI::App& root, const CompletionHints& hints);

}  // namespace powerctl::cli
