// powerctl completion bash|zsh|fish: prints a completion script for the shell; the script asks
// `powerctl __complete` for the candidates (cli/cmd_complete.cpp).
#include "cli/app.h"
#include "cli/completion_scripts.h"
#include "cli/exit_codes.h"

#include <ostream>

namespace powerctl::cli {
namespace {

int RunCompletion(const Context& ctx, const std::string& shell) {
  if (shell == "bash") *ctx.out << BashCompletion();
  if (shell == "zsh") *ctx.out << ZshCompletion();
  if (shell == "fish") *ctx.out << FishCompletion();
  return kExitOk;
}

}  // namespace

void RegisterCompletion(CLI::App& app, CommandEnv& env) {
  auto shell = std::make_shared<std::string>();
  CLI::App* cmd =
      app.add_subcommand("completion", "Print a shell completion script (bash, zsh or fish)");
  cmd->footer(
      "Examples:\n"
      "  source <(powerctl completion bash)\n"
      "  powerctl completion zsh > \"${fpath[1]}/_powerctl\"\n"
      "  powerctl completion fish > ~/.config/fish/completions/powerctl.fish");
  cmd->add_option("shell", *shell, "bash, zsh or fish")
      ->required()
      ->check(Choices(env, "completion", {"bash", "zsh", "fish"}));
  cmd->callback([&env, shell] { env.exit_code = RunCompletion(env.ctx, *shell); });
}

}  // namespace powerctl::cli
