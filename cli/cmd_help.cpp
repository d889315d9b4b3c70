// powerctl help [COMMAND]...: the help of any command, as `powerctl COMMAND --help` prints it
// (kubectl, helm and git users type it this way round).
#include "cli/app.h"
#include "cli/exit_codes.h"

#include <fmt/format.h>

#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace powerctl::cli {
namespace {

// The visible subcommand of `parent` named `word`, or nullptr.
CLI::App* FindCommand(CLI::App& parent, const std::string& word) {
  for (CLI::App* sub : parent.get_subcommands({})) {
    if (sub->get_name() == word && !sub->get_group().empty()) return sub;
  }
  return nullptr;
}

int RunHelp(CLI::App& root, const std::vector<std::string>& words, const Context& ctx) {
  CLI::App* command = &root;
  std::string path = "powerctl";
  for (const std::string& word : words) {
    CLI::App* sub = FindCommand(*command, word);
    if (sub == nullptr) {
      ctx.PrintError(fmt::format("unknown command \"{}\" for \"{}\"{}", word, path,
                                 DidYouMean(ClosestSubcommand(*command, word))));
      *ctx.err << "Run 'powerctl help' for the list of commands.\n";
      return kExitUsage;
    }
    command = sub;
    path += " " + word;
  }
  // The formatter directly: App::help() would describe the selected `help` command itself.
  *ctx.out << command->get_formatter()->make_help(command, path, CLI::AppFormatMode::Normal);
  return kExitOk;
}

}  // namespace

void RegisterHelp(CLI::App& app, CommandEnv& env) {
  auto words = std::make_shared<std::vector<std::string>>();
  CLI::App* cmd =
      app.add_subcommand("help", "Print the help of any command: powerctl help lb weights");
  cmd->add_option("command", *words, "The command, and its subcommands, to describe")
      ->type_name("COMMAND");
  cmd->callback([&app, &env, words] { env.exit_code = RunHelp(app, *words, env.ctx); });
}

}  // namespace powerctl::cli
