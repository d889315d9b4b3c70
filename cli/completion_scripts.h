#pragma once
// Shell completion scripts. Each only asks `powerctl __complete` (cli/cmd_complete.cpp) for
// the candidates, as cobra's scripts do, so they never fall behind the commands
// (completions/ holds the same output; a test keeps them equal).

#include <string>

namespace powerctl::cli {

std::string BashCompletion();
std::string ZshCompletion();
std::string FishCompletion();

}  // namespace powerctl::cli
