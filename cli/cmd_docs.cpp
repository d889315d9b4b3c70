// powerctl docs commands|config|man: prints a reference generated from the command tree or the
// powerctl.yaml schema: docs/commands.md, docs/configuration.md, packaging/powerctl.1.
// Hidden (group ""): users read those files; the command is for regenerating them.
#include "cli/app.h"
#include "cli/command_docs.h"
#include "cli/commands_markdown.h"
#include "cli/config_markdown.h"
#include "cli/exit_codes.h"
#include "cli/man_page.h"
#include "core/common/build_info.h"

#include <ostream>

namespace powerctl::cli {
namespace {

int RunDocs(const Context& ctx, const std::string& reference) {
  if (reference == "config") {
    *ctx.out << ConfigurationMarkdown();
    return kExitOk;
  }
  // A fresh tree with default global flags, so the documented defaults are the built-in ones
  // whatever flags this run was given.
  Context fresh = ctx;
  fresh.globals = GlobalOptions{};
  CompletionHints hints;
  CommandEnv env{fresh, hints, 0};
  CLI::App app{"", "powerctl"};
  BuildApp(app, env);
  std::vector<CommandDoc> commands = DescribeCommands(app);
  if (reference == "commands") *ctx.out << CommandsMarkdown(commands);
  if (reference == "man") *ctx.out << ManPage(commands, GetBuildInfo().version);
  return kExitOk;
}

}  // namespace

void RegisterDocs(CLI::App& app, CommandEnv& env) {
  auto reference = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "docs", "Print a generated reference: commands (Markdown), config (Markdown) or man (roff)");
  cmd->group("");
  cmd->footer(
      "Examples:\n"
      "  powerctl docs commands > docs/commands.md\n"
      "  powerctl docs config > docs/configuration.md\n"
      "  powerctl docs man > packaging/powerctl.1");
  cmd->add_option("reference", *reference, "commands, config or man")
      ->required()
      ->check(CLI::IsMember({"commands", "config", "man"}));
  cmd->callback([&env, reference] { env.exit_code = RunDocs(env.ctx, *reference); });
}

}  // namespace powerctl::cli
