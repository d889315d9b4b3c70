#include "cli/app.h"

#include "cli/exit_codes.h"
#include "core/common/edit_distance.h"
#include "core/common/jsonpath.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/sinks/ostream_sink.h>

#include <algorithm>
#include <exception>
#include <sstream>

namespace powerctl::cli {
namespace {

void AddGlobalFlags(CLI::App& app, CommandEnv& env) {
  GlobalOptions& g = env.ctx.globals;
  app.add_option("--kubeconfig", g.kubeconfig, "Path to the kubeconfig file to use")
      ->type_name("PATH");
  app.add_option("--context", g.context, "The kubeconfig context to use")->type_name("NAME");
  app.add_option("-n,--namespace", g.namespace_,
                 "Namespace of powerctl's objects (default from powerctl.yaml)")
      ->type_name("NS");
  app.add_option("-o,--output", g.output,
                 "Output format: table|wide|json|yaml|name|jsonpath=TEMPLATE (commands list what "
                 "they support)")
      ->type_name("FORMAT");
  app.add_option("-v,--v", g.verbosity, "Log verbosity, 0 (quiet) to 10 (everything but secrets)")
      ->type_name("N")
      ->check(CLI::Range(0, 10));
  app.add_option("--color", g.color, "Colour messages: auto|always|never (NO_COLOR is honoured)")
      ->check(Choices(env, "--color", {"auto", "always", "never"}))
      ->type_name("WHEN");
  app.add_option(
         "-c,--config", g.config_file,
         "powerctl.yaml to read (default: $POWERCTL_CONFIG, else ./powerctl.yaml, else built-in)")
      ->type_name("FILE");
  app.add_option("--set", g.set_flags,
                 "Override a powerctl.yaml key, e.g. --set extender.weight=10 (repeatable)")
      ->type_name("KEY=VALUE")
      // One KEY=VALUE per --set, so `init --set K=V FILE` leaves FILE to the command.
      ->allow_extra_args(false);
  env.hints.values["--output"] = {"table", "wide", "json", "yaml", "name"};
  env.hints.cluster["--context"] = ClusterNames::kContexts;
  env.hints.cluster["--namespace"] = ClusterNames::kNamespaces;
}

// CLI11's help, plus what kubectl and helm show under a command: the global flags (they fall
// through to every command), with -o described as the command declared it.
class HelpFormatter : public CLI::Formatter {
 public:
  explicit HelpFormatter(const std::map<const CLI::App*, OutputSpec>& outputs)
      : outputs_(outputs) {}

  std::string make_footer(const CLI::App* app) const override {
    const CLI::App* root = app;
    while (root->get_parent() != nullptr) root = root->get_parent();
    if (root == app) return CLI::Formatter::make_footer(app);
    std::ostringstream out;
    out << "Global Flags:\n";
    for (const CLI::Option* option : root->get_options()) {
      if (option == root->get_help_ptr() || option == root->get_help_all_ptr()) continue;
      std::string description = make_option_desc(option);
      if (option->check_lname("output")) description = OutputDescription(app, description);
      CLI::detail::format_help(out, make_option_name(option, false) + make_option_opts(option),
                               description, get_column_width());
    }
    out << "\n";
    return out.str() + CLI::Formatter::make_footer(app);
  }

 private:
  std::string OutputDescription(const CLI::App* app, const std::string& generic) const {
    auto it = outputs_.find(app);
    if (it == outputs_.end()) return generic;
    return fmt::format("Output format: {} (default {})", it->second.Text(),
                       OutputFormatName(it->second.fallback));
  }

  const std::map<const CLI::App*, OutputSpec>& outputs_;
};

void ConfigureLogging(Context& ctx) {
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(*ctx.err);
  ctx.log = std::make_shared<spdlog::logger>("powerctl", sink);
  int v = ctx.globals.verbosity;
  // kubectl-like levels: 0-1 warnings, 2-3 info, 4-5 debug, 6+ trace.
  ctx.log->set_level(v >= 6   ? spdlog::level::trace
                     : v >= 4 ? spdlog::level::debug
                     : v >= 2 ? spdlog::level::info
                              : spdlog::level::warn);
  ctx.log->set_pattern(v >= 4 ? "%Y-%m-%dT%H:%M:%S.%e %L %v" : "%v");
}

}  // namespace

void DeclareOutput(CLI::App& cmd, CommandEnv& env, OutputFormat fallback,
                   std::vector<OutputFormat> accepted) {
  env.outputs[&cmd] = OutputSpec{fallback, std::move(accepted)};
}

CLI::Validator Choices(CommandEnv& env, const std::string& key, std::vector<std::string> choices) {
  env.hints.values[key] = choices;
  return CLI::IsMember(std::move(choices));
}

std::string DidYouMean(const std::string& closest) {
  return closest.empty() ? "" : fmt::format(" (did you mean \"{}\"?)", closest);
}

std::string ClosestSubcommand(const CLI::App& parent, std::string_view word) {
  std::vector<std::string> names;
  // Hidden commands (group "") are not suggested.
  for (const CLI::App* sub :
       parent.get_subcommands([](const CLI::App* s) { return !s->get_group().empty(); })) {
    names.push_back(sub->get_name());
  }
  return ClosestMatch(word, names, 3);
}

namespace {

// The command a parse stopped in: the last selected subcommand, or the root.
CLI::App* DeepestCommand(CLI::App& app) {
  CLI::App* command = &app;
  for (auto subs = command->get_subcommands(); !subs.empty(); subs = command->get_subcommands()) {
    command = subs.front();
  }
  return command;
}

// "powerctl lb weights" for the command a parse stopped in.
std::string CommandPath(CLI::App& app) {
  std::string path;
  for (CLI::App* c = DeepestCommand(app); c != nullptr; c = c->get_parent()) {
    path = path.empty() ? c->get_name() : c->get_name() + " " + path;
  }
  return path;
}

// CLI11 says "The following argument was not expected: --ouput-dir"; name the command and the
// closest flag it or its parents (global flags fall through) take.
std::string DescribeUnknownFlag(CLI::App& app, int argc, const char* const* argv) {
  std::vector<std::string> flags;
  const std::string path = CommandPath(app);
  for (CLI::App* c = DeepestCommand(app); c != nullptr; c = c->get_parent()) {
    for (const CLI::Option* option : c->get_options()) {
      for (const std::string& l : option->get_lnames()) flags.push_back("--" + l);
    }
  }
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word.size() < 3 || word.rfind("--", 0) != 0) continue;
    const std::string name = word.substr(0, word.find('='));
    if (std::find(flags.begin(), flags.end(), name) != flags.end()) continue;
    return fmt::format("unknown flag \"{}\" for \"{}\"{}", name, path,
                       DidYouMean(ClosestMatch(name, flags, 3)));
  }
  return "";
}

// CLI11 reports an unknown command as "A subcommand is required"; name the word instead.
std::string DescribeParseError(CLI::App& app, const CLI::ParseError& e, int argc,
                               const char* const* argv) {
  if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr) {
    if (std::string unknown = DescribeUnknownFlag(app, argc, argv); !unknown.empty()) {
      return unknown;
    }
  }
  bool in_subcommand = !app.get_subcommands().empty();
  if (in_subcommand || argc < 2) return e.what();
  for (int i = 1; i < argc; ++i) {
    std::string word = argv[i];
    if (word.empty() || word[0] == '-') {
      // skip a global flag's value ("-n ns"); "--x=y" carries its own
      const CLI::Option* option = nullptr;
      try {
        option = app.get_option_no_throw(word.substr(0, word.find('=')));
      } catch (const CLI::Error&) {
        option = nullptr;
      }
      if (option != nullptr && option->get_items_expected_max() != 0 &&
          word.find('=') == std::string::npos)
        ++i;
      continue;
    }
    return fmt::format("unknown command \"{}\"{}", word, DidYouMean(ClosestSubcommand(app, word)));
  }
  return e.what();
}

}  // namespace

void BuildApp(CLI::App& app, CommandEnv& env) {
  app.description(
      "powerctl places Kubernetes pods where they cost the least electrical power.\n"
      "It sets up a power-aware kube-scheduler with powerctl's extender, queries power\n"
      "predictions and explains placements.");
  app.require_subcommand(1);
  app.fallthrough();
  // Before any subcommand exists: each inherits its parent's formatter.
  app.formatter(std::make_shared<HelpFormatter>(env.outputs));
  app.set_help_all_flag("--help-all", "Show help for every command");
  AddGlobalFlags(app, env);
  RegisterInit(app, env);
  RegisterGenerate(app, env);
  RegisterApply(app, env);
  RegisterDelete(app, env);
  RegisterLabel(app, env);
  RegisterCalibrate(app, env);
  RegisterDoctor(app, env);
  RegisterStatus(app, env);
  RegisterKubeconfig(app, env);
  RegisterPredict(app, env);
  RegisterScore(app, env);
  RegisterExplain(app, env);
  RegisterScheduleServer(app, env);
  RegisterSimulate(app, env);
  RegisterConsolidate(app, env);
  RegisterLb(app, env);
  RegisterLbAgent(app, env);
  RegisterCompletion(app, env);
  RegisterVersion(app, env);
  RegisterHelp(app, env);
  RegisterDocs(app, env);
  app.footer(ExitCodesFooter());
}

namespace {

// The parsed command's declared -o: kept in the context for Output(), checked before the
// command runs (a usage error), and the template of -o jsonpath=TEMPLATE, or "".
std::string SelectOutput(CLI::App& app, CommandEnv& env) {
  auto it = env.outputs.find(DeepestCommand(app));
  if (it == env.outputs.end()) return "";
  env.ctx.output_spec = it->second;
  auto checked = CheckOutputFormat(it->second, env.ctx.globals.output);
  if (!checked.ok()) throw CLI::ValidationError(checked.error().message);
  return *checked;
}

// -o jsonpath=TEMPLATE filters the JSON document the command printed, as kubectl's printers
// do, so a command only knows how to print json.
int PrintJsonPath(Context& ctx, const std::string& text, const std::string& captured,
                  int exit_code) {
  nlohmann::json document = nlohmann::json::parse(captured, nullptr, false);
  if (document.is_discarded()) {  // not a JSON document: an error path printed something else
    *ctx.out << captured;
    return exit_code;
  }
  auto path = ParseJsonPath(text);  // checked before the command ran
  if (!path.ok()) return Fail(ctx, path.error());
  auto rendered = RenderJsonPath(*path, document);
  if (!rendered.ok()) return Fail(ctx, WithContext(rendered.error(), "-o jsonpath"));
  *ctx.out << *rendered;
  return exit_code;
}

// Silent: completion never writes to the terminal the user is typing in.
void ConfigureCompletionLogging(Context& ctx) {
  ctx.log = std::make_shared<spdlog::logger>("powerctl");
  ctx.log->set_level(spdlog::level::off);
}

}  // namespace

int Fail(const Context& ctx, const Error& error) {
  ctx.PrintError(error.message);
  return ExitCodeFor(error.code);
}

int Run(int argc, const char* const* argv, Context& ctx) {
  CompletionHints hints;
  CommandEnv env{ctx, hints, 0};
  CLI::App app{"", "powerctl"};
  try {
    BuildApp(app, env);
    if (argc < 2) {  // a bare `powerctl` asks what it can do: the help, not an error
      *ctx.out << app.help();
      return kExitOk;
    }
    if (const std::string_view first = argv[1];
        first == kCompleteCommand || first == kCompleteNoDescCommand) {
      ConfigureCompletionLogging(ctx);
      return RunComplete(app, env, std::vector<std::string>(argv + 2, argv + argc),
                         first == kCompleteCommand);
    }
    std::string jsonpath;
    std::ostringstream captured;
    std::ostream* const out = ctx.out;
    // Logging is configured before the command's callback runs (parse fills -v first).
    app.parse_complete_callback([&] {
      ConfigureLogging(ctx);
      jsonpath = SelectOutput(app, env);
      if (!jsonpath.empty()) ctx.out = &captured;
    });
    try {
      app.parse(argc, argv);
    } catch (...) {
      ctx.out = out;
      throw;
    }
    ctx.out = out;
    if (!jsonpath.empty()) return PrintJsonPath(ctx, jsonpath, captured.str(), env.exit_code);
    return env.exit_code;
  } catch (const CLI::CallForHelp& e) {
    *ctx.out << app.help();
    return kExitOk;
  } catch (const CLI::CallForAllHelp& e) {
    *ctx.out << app.help("", CLI::AppFormatMode::All);
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) {
      app.exit(e, *ctx.out, *ctx.err);
      return kExitOk;
    }
    ctx.PrintError(DescribeParseError(app, e, argc, argv));
    *ctx.err << "Run '" << CommandPath(app) << " --help' for usage.\n";
    return kExitUsage;
  } catch (const std::exception& e) {
    // The one top-level catch: a library threw where a module edge should have caught it.
    ctx.PrintError(fmt::format("internal error: {}", e.what()));
    return kExitRuntime;
  }
}

}  // namespace powerctl::cli
