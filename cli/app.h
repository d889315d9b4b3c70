#pragma once
// Builds the powerctl command tree and runs it.

#include "cli/context.h"

#include <CLI/CLI.hpp>

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace powerctl::cli {

// Names read from the cluster (or the kubeconfig) when completing an argument or a flag.
enum class ClusterNames { kNodes, kPods, kServices, kNamespaces, kContexts };

// What `powerctl __complete` offers, the one source of every candidate: keys are "generate" for
// a command's arguments, "generate --kube-version" for a command's flag, "--color" for a global
// flag. Arguments and flags of type NODE or SERVICE complete cluster names without an entry.
struct CompletionHints {
  std::map<std::string, std::vector<std::string>> values;
  std::map<std::string, ClusterNames> cluster;
};

// What every command's registration function gets.
struct CommandEnv {
  Context& ctx;
  CompletionHints& hints;
  int exit_code = 0;
  // Each command's -o formats (DeclareOutput), for validation, help and completion.
  std::map<const CLI::App*, OutputSpec> outputs;
};

// Declares the -o formats `cmd` accepts and its default: the one place they are listed.
void DeclareOutput(CLI::App& cmd, CommandEnv& env, OutputFormat fallback,
                   std::vector<OutputFormat> accepted);

// A validator that accepts one of `choices` and records them as the completion of `key`
// ("simulate --scorer"), so the check and the candidates are one list.
CLI::Validator Choices(CommandEnv& env, const std::string& key, std::vector<std::string> choices);

// One per file in cli/: each adds its subcommand to `app`.
void RegisterInit(CLI::App& app, CommandEnv& env);
void RegisterGenerate(CLI::App& app, CommandEnv& env);
void RegisterApply(CLI::App& app, CommandEnv& env);
void RegisterDelete(CLI::App& app, CommandEnv& env);
void RegisterLabel(CLI::App& app, CommandEnv& env);
void RegisterCalibrate(CLI::App& app, CommandEnv& env);
void RegisterDoctor(CLI::App& app, CommandEnv& env);
void RegisterStatus(CLI::App& app, CommandEnv& env);
void RegisterKubeconfig(CLI::App& app, CommandEnv& env);
void RegisterPredict(CLI::App& app, CommandEnv& env);
void RegisterLb(CLI::App& app, CommandEnv& env);
void RegisterLbAgent(CLI::App& app, CommandEnv& env);
void RegisterScore(CLI::App& app, CommandEnv& env);
void RegisterExplain(CLI::App& app, CommandEnv& env);
void RegisterScheduleServer(CLI::App& app, CommandEnv& env);
void RegisterSimulate(CLI::App& app, CommandEnv& env);
void RegisterConsolidate(CLI::App& app, CommandEnv& env);
void RegisterCompletion(CLI::App& app, CommandEnv& env);
void RegisterVersion(CLI::App& app, CommandEnv& env);
void RegisterHelp(CLI::App& app, CommandEnv& env);
void RegisterDocs(CLI::App& app, CommandEnv& env);  // hidden

// powerctl __complete ARGS... PARTIAL (and __completeNoDesc): cobra's completion protocol,
// candidates one a line and a last ":DIRECTIVE" line. Run dispatches it before parsing, so
// the words being completed never reach CLI11's validation.
inline constexpr std::string_view kCompleteCommand = "__complete";
inline constexpr std::string_view kCompleteNoDescCommand = "__completeNoDesc";
int RunComplete(const CLI::App& root, const CommandEnv& env, const std::vector<std::string>& args,
                bool descriptions);

// The full command tree (used by Run and by the completion generator).
void BuildApp(CLI::App& app, CommandEnv& env);

// Runs powerctl with argv; returns the exit code. Never throws.
int Run(int argc, const char* const* argv, Context& ctx);

// Maps a failed Result to its message on stderr and its exit code.
int Fail(const Context& ctx, const Error& error);

// The visible subcommand of `parent` closest to a mistyped `word`, or "".
std::string ClosestSubcommand(const CLI::App& parent, std::string_view word);
// ` (did you mean "closest"?)`, or "" when there is nothing to suggest.
std::string DidYouMean(const std::string& closest);

}  // namespace powerctl::cli
