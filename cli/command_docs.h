#pragma once
// The command tree as plain data for the references `powerctl docs` writes (docs/commands.md,
// the man page): read from the same CLI11 app the binary parses with, so they cannot drift.

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace powerctl::cli {

struct FlagDoc {
  std::vector<std::string> names;  // "-o", "--output"
  std::string type_name;           // "FORMAT", "MODE:{none,client,server}"; "" for a switch
  std::string default_value;       // the bound variable's value before parsing; "" = none
  std::string help;
  bool repeatable = false;  // takes several values (or the flag several times)
};

struct PositionalDoc {
  std::string name;  // "components"
  std::string type_name;
  std::string default_value;
  std::string help;
  bool required = false;
  bool repeatable = false;
};

struct CommandDoc {
  std::string path;  // "" for powerctl itself, "generate", "label nodes"
  std::vector<std::string> aliases;
  std::string description;
  std::string usage;  // "powerctl label nodes [OPTIONS] [nodes...]"
  std::vector<PositionalDoc> positionals;
  // The command's own flags; the root's are the global flags, and the help flags are
  // listed there only.
  std::vector<FlagDoc> flags;
  std::string footer;                 // the footer without its "Examples:" block
  std::vector<std::string> examples;  // one command each, continuation lines joined by "\n"
  std::vector<std::string> subcommands;
};

// Every command the user can see, the root first, then depth first in registration order.
// Hidden commands (group "") and their subcommands are left out. Defaults are read from the
// variables the options are bound to, so call it on a tree that has not parsed anything.
std::vector<CommandDoc> DescribeCommands(CLI::App& root);

// A footer split into its prose and its "Examples:" block (lines indented under it).
struct SplitFooter {
  std::string prose;
  std::vector<std::string> examples;
};
SplitFooter SplitExamples(const std::string& footer);

}  // namespace powerctl::cli
