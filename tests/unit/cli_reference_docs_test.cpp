// The generated references (docs/commands.md, docs/configuration.md, the man page): what
// DescribeCommands reads from the command tree, and that every command, flag and
// powerctl.yaml key reaches the text.
#include "cli/app.h"
#include "cli/command_docs.h"
#include "cli/commands_markdown.h"
#include "cli/config_markdown.h"
#include "cli/exit_codes.h"
#include "cli/man_page.h"
#include "cli/markdown_text.h"
#include "core/config/config_schema.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

namespace powerctl::cli {
namespace {

std::vector<CommandDoc> Tree() {
  std::ostringstream out, err;
  Context ctx;
  ctx.out = &out;
  ctx.err = &err;
  CompletionHints hints;
  CommandEnv env{ctx, hints, 0};
  CLI::App app{"", "powerctl"};
  BuildApp(app, env);
  return DescribeCommands(app);
}

const CommandDoc* Find(const std::vector<CommandDoc>& commands, const std::string& path) {
  for (const CommandDoc& c : commands) {
    if (c.path == path) return &c;
  }
  return nullptr;
}

const FlagDoc* FindFlag(const CommandDoc& c, const std::string& name) {
  for (const FlagDoc& f : c.flags) {
    if (std::find(f.names.begin(), f.names.end(), name) != f.names.end()) return &f;
  }
  return nullptr;
}

// The text of `markdown` from the heading "<hashes> title" to the next heading of any level.
std::string MarkdownSection(const std::string& markdown, const std::string& title) {
  std::size_t start = std::string::npos;
  for (std::string hashes : {"## ", "### ", "#### "}) {
    std::size_t at = markdown.find("\n" + hashes + title + "\n");
    if (at != std::string::npos) start = at + 1;
  }
  if (start == std::string::npos) return "";
  std::size_t end = markdown.find("\n#", start + 1);
  return markdown.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

TEST(DescribeCommandsTest, ListsNestedCommandsAndAliasesButNotHiddenOnes) {
  std::vector<CommandDoc> commands = Tree();
  ASSERT_FALSE(commands.empty());
  EXPECT_EQ(commands.front().path, "");
  for (const char* path : {"init", "label", "label nodes", "lb", "lb weights", "explain",
                           "explain pod", "lb-agent", "completion", "version"}) {
    EXPECT_NE(Find(commands, path), nullptr) << path;
  }
  EXPECT_EQ(Find(commands, "docs"), nullptr);
  const CommandDoc* root = Find(commands, "");
  EXPECT_EQ(std::count(root->subcommands.begin(), root->subcommands.end(), "docs"), 0);
  const CommandDoc* explain = Find(commands, "explain");
  ASSERT_NE(explain, nullptr);
  EXPECT_EQ(explain->aliases, std::vector<std::string>{"why"});
  EXPECT_EQ(explain->subcommands, std::vector<std::string>{"pod"});
}

TEST(DescribeCommandsTest, HelpFlagsAreGlobalOnly) {
  std::vector<CommandDoc> commands = Tree();
  const CommandDoc* root = Find(commands, "");
  EXPECT_NE(FindFlag(*root, "--help"), nullptr);
  EXPECT_NE(FindFlag(*root, "--help-all"), nullptr);
  EXPECT_NE(FindFlag(*root, "--set"), nullptr);
  const CommandDoc* generate = Find(commands, "generate");
  ASSERT_NE(generate, nullptr);
  EXPECT_EQ(FindFlag(*generate, "--help"), nullptr);
  EXPECT_NE(FindFlag(*generate, "--kube-version"), nullptr);
}

TEST(DescribeCommandsTest, ReadsTypesDefaultsAndPositionals) {
  std::vector<CommandDoc> commands = Tree();
  const CommandDoc* apply = Find(commands, "apply");
  ASSERT_NE(apply, nullptr);
  const FlagDoc* timeout = FindFlag(*apply, "--timeout");
  ASSERT_NE(timeout, nullptr);
  EXPECT_EQ(timeout->type_name, "DURATION");
  EXPECT_EQ(timeout->default_value, "5m");
  const FlagDoc* wait = FindFlag(*apply, "--wait");
  ASSERT_NE(wait, nullptr);
  EXPECT_EQ(wait->type_name, "");  // a switch
  EXPECT_EQ(wait->default_value, "");
  const FlagDoc* set = FindFlag(*Find(commands, ""), "--set");
  EXPECT_TRUE(set->repeatable);
  EXPECT_EQ(set->default_value, "");  // an empty list is no default

  const FlagDoc* load = FindFlag(*Find(commands, "simulate"), "--load");
  ASSERT_NE(load, nullptr);
  EXPECT_EQ(load->default_value, "25,50,75");  // as it is typed
  const CommandDoc* init = Find(commands, "init");
  ASSERT_EQ(init->positionals.size(), 1u);
  EXPECT_EQ(init->positionals[0].default_value, "powerctl.yaml");

  const CommandDoc* weights = Find(commands, "lb weights");
  ASSERT_NE(weights, nullptr);
  ASSERT_EQ(weights->positionals.size(), 1u);
  EXPECT_EQ(weights->positionals[0].name, "service");
  EXPECT_TRUE(weights->positionals[0].required);
  EXPECT_EQ(weights->usage, "powerctl lb weights [OPTIONS] service");
  EXPECT_FALSE(weights->examples.empty());
}

TEST(DescribeCommandsTest, LeavesTheTreesHelpAsItWas) {
  std::ostringstream out, err;
  Context ctx;
  ctx.out = &out;
  ctx.err = &err;
  CompletionHints hints;
  CommandEnv env{ctx, hints, 0};
  CLI::App app{"", "powerctl"};
  BuildApp(app, env);
  std::string before = app.get_subcommand("apply")->help();
  DescribeCommands(app);
  EXPECT_EQ(app.get_subcommand("apply")->help(), before);
}

TEST(SplitExamplesTest, JoinsContinuationLinesAndKeepsProseAfterTheBlock) {
  SplitFooter split = SplitExamples(
      "Intro line.\n"
      "Examples:\n"
      "  powerctl a\n"
      "  powerctl b --long \\\n"
      "      --more\n"
      "  powerctl c\n"
      "After the examples.");
  EXPECT_EQ(split.prose, "Intro line.\n\nAfter the examples.");
  ASSERT_EQ(split.examples.size(), 3u);
  EXPECT_EQ(split.examples[0], "powerctl a");
  EXPECT_EQ(split.examples[1], "powerctl b --long \\\n    --more");
  EXPECT_EQ(split.examples[2], "powerctl c");
}

TEST(CommandsMarkdownTest, EveryCommandHasASectionWithEveryFlag) {
  std::vector<CommandDoc> commands = Tree();
  std::string md = CommandsMarkdown(commands);
  EXPECT_EQ(md.rfind("<!-- Generated by `powerctl docs commands", 0), 0u);
  std::string globals = MarkdownSection(md, "Global flags");
  for (const FlagDoc& f : commands.front().flags) {
    for (const std::string& name : f.names)
      EXPECT_NE(globals.find("`" + name + "`"), std::string::npos) << name;
  }
  for (std::size_t i = 1; i < commands.size(); ++i) {
    const CommandDoc& c = commands[i];
    std::string section = MarkdownSection(md, "powerctl " + c.path);
    ASSERT_FALSE(section.empty()) << c.path;
    EXPECT_NE(md.find("(#" + MarkdownAnchor("powerctl " + c.path) + ")"), std::string::npos)
        << "table of contents: " << c.path;
    for (const FlagDoc& f : c.flags) {
      for (const std::string& name : f.names) {
        EXPECT_NE(section.find("`" + name + "`"), std::string::npos) << c.path << " " << name;
      }
    }
    for (const PositionalDoc& p : c.positionals) {
      EXPECT_NE(section.find("`" + p.name + "`"), std::string::npos) << c.path << " " << p.name;
    }
  }
}

TEST(CommandsMarkdownTest, ShowsDefaultsAliasesAndExamples) {
  std::string md = CommandsMarkdown(Tree());
  std::string apply = MarkdownSection(md, "powerctl apply");
  EXPECT_NE(apply.find("| `--timeout` | `DURATION` | `5m` |"), std::string::npos) << apply;
  EXPECT_NE(apply.find("```sh\npowerctl apply -c powerctl.yaml --wait\n"), std::string::npos);
  EXPECT_NE(MarkdownSection(md, "powerctl explain").find("Alias: `why`"), std::string::npos);
  // A | inside a table cell would end the cell.
  EXPECT_NE(MarkdownSection(md, "Global flags").find("table\\|wide\\|json"), std::string::npos);
}

TEST(MarkdownTextTest, EscapesMarkupOutsideCodeSpansOnly) {
  EXPECT_EQ(MarkdownText("a_b *c* <x> [y]"), "a\\_b \\*c\\* &lt;x&gt; \\[y\\]");
  EXPECT_EQ(MarkdownText("run `a_b <c>` now"), "run `a_b <c>` now");
  EXPECT_EQ(MarkdownCode("a|b"), "`a\\|b`");
  EXPECT_EQ(MarkdownAnchor("powerctl label nodes"), "powerctl-label-nodes");
  EXPECT_EQ(MarkdownAnchor("powerctl lb-agent"), "powerctl-lb-agent");
}

TEST(ConfigurationMarkdownTest, EveryKeyHasARowWithTypeDefaultAndEnvironment) {
  std::string md = ConfigurationMarkdown();
  EXPECT_EQ(md.rfind("<!-- Generated by `powerctl docs config", 0), 0u);
  for (const config::FieldSpec& field : config::ConfigFields()) {
    std::string row = "| `" + std::string(field.path) + "` |";
    std::size_t at = md.find(row);
    ASSERT_NE(at, std::string::npos) << field.path;
    std::string line = md.substr(at, md.find('\n', at) - at);
    EXPECT_NE(line.find("`" + config::EnvVarName(field.path) + "`"), std::string::npos) << line;
  }
}

TEST(ConfigurationMarkdownTest, DefaultsAreWhatInitWrites) {
  std::string md = ConfigurationMarkdown();
  EXPECT_NE(md.find("| `extender.weight` | integer | `5` | 1 to 100 |"), std::string::npos);
  EXPECT_NE(md.find("| `extender.tlsMode` | string | `mtls` | `mtls`, `tls`, `insecure` |"),
            std::string::npos);
  EXPECT_NE(md.find("| `telemetry.sensors.cpu1` | list of strings | `[\"CPU1\", \"CPU1 Temp\"]` |"),
            std::string::npos);
  EXPECT_NE(md.find("| `scheduler.image` | string | `\"\"` |"), std::string::npos);
  EXPECT_NE(md.find("\n## scheduler\n"), std::string::npos);
  EXPECT_NE(md.find("\n## Top level\n"), std::string::npos);
  EXPECT_NE(md.find("```yaml\npolicies:"), std::string::npos);
}

TEST(ManPageTest, HasTheSectionsAndEveryCommandAndFlag) {
  std::vector<CommandDoc> commands = Tree();
  std::string man = ManPage(commands, "9.9.9");
  EXPECT_EQ(man.rfind(".\\\" Generated by `powerctl docs man", 0), 0u);
  EXPECT_NE(man.find(".TH POWERCTL 1 \"\" \"powerctl 9.9.9\""), std::string::npos);
  for (const char* section : {"NAME", "SYNOPSIS", "DESCRIPTION", "GLOBAL FLAGS", "COMMANDS",
                              "EXIT STATUS", "ENVIRONMENT", "FILES", "EXAMPLES"}) {
    EXPECT_NE(man.find(std::string("\n.SH ") + section + "\n"), std::string::npos) << section;
  }
  for (std::size_t i = 1; i < commands.size(); ++i) {
    EXPECT_NE(man.find("\n.SS " + RoffText(commands[i].path) + "\n"), std::string::npos)
        << commands[i].path;
    for (const FlagDoc& f : commands[i].flags) {
      for (const std::string& name : f.names)
        EXPECT_NE(man.find("\\fB" + RoffText(name) + "\\fR"), std::string::npos) << name;
    }
  }
  for (const ExitCodeMeaning& e : ExitCodeMeanings()) {
    EXPECT_NE(man.find(".B " + std::to_string(static_cast<int>(e.code)) + "\n"), std::string::npos);
  }
  EXPECT_NE(man.find("powerctl lb weights web \\-n shop\n"), std::string::npos);
}

TEST(ManPageTest, RoffTextEscapesRequestsBackslashesAndHyphens) {
  EXPECT_EQ(RoffText(".hidden"), "\\&.hidden");
  EXPECT_EQ(RoffText("'quoted"), "\\&'quoted");
  EXPECT_EQ(RoffText("a\\b --x"), "a\\eb \\-\\-x");
}

TEST(ExitCodesFooterTest, NamesEveryCodeWithinTheHelpWidth) {
  std::string footer = ExitCodesFooter();
  EXPECT_EQ(footer.rfind("Exit codes: 0 ", 0), 0u);
  for (const ExitCodeMeaning& e : ExitCodeMeanings()) {
    EXPECT_NE(footer.find(std::to_string(static_cast<int>(e.code)) + " " + std::string(e.meaning)),
              std::string::npos);
  }
  std::istringstream lines(footer);
  std::string line;
  while (std::getline(lines, line)) EXPECT_LE(line.size(), 96u) << line;
}

}  // namespace
}  // namespace powerctl::cli
