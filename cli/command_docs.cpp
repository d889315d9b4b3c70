#include "cli/command_docs.h"

#include <memory>
#include <sstream>

namespace powerctl::cli {
namespace {

bool IsHidden(const CLI::App& app) {
  // CLI11 leaves a subcommand in group "" out of help; the references leave it out too.
  return app.get_group().empty();
}

std::vector<CLI::App*> VisibleSubcommands(const CLI::App& app) {
  std::vector<CLI::App*> out;
  for (CLI::App* sub : const_cast<CLI::App&>(app).get_subcommands([](CLI::App*) { return true; })) {
    if (!IsHidden(*sub)) out.push_back(sub);
  }
  return out;
}

std::string TrimTrailingNewlines(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

bool Repeatable(const CLI::Option& option) {
  return option.get_items_expected_max() > 1 ||
         option.get_multi_option_policy() == CLI::MultiOptionPolicy::TakeAll;
}

// The value the bound variable holds now, as CLI11 would print it with capture_default_str.
std::string CapturedDefault(CLI::Option& option) {
  if (option.get_type_size() == 0) return "";  // a switch: off unless given
  std::string before = option.get_default_str();
  option.capture_default_str();
  std::string value = option.get_default_str();
  option.default_str(before);  // leave the tree's help as it was
  // A list as it is typed: "[25,50,75]" -> "25,50,75".
  if (value.size() >= 2 && value.front() == '[' && value.back() == ']')
    value = value.substr(1, value.size() - 2);
  return value;
}

void Describe(CLI::App& app, const std::string& path, std::vector<CommandDoc>& out) {
  CommandDoc doc;
  doc.path = path;
  doc.aliases = app.get_aliases();
  doc.description = app.get_description();
  std::string full_name = path.empty() ? "powerctl" : "powerctl " + path;
  // The usage line exactly as --help prints it (the tree keeps CLI11's own formatter).
  auto formatter = std::dynamic_pointer_cast<CLI::Formatter>(app.get_formatter());
  std::string usage = formatter ? formatter->make_usage(&app, full_name)
                                : CLI::Formatter().make_usage(&app, full_name);
  const std::string label = "Usage: ";
  if (usage.rfind(label, 0) == 0) usage = usage.substr(label.size());
  doc.usage = TrimTrailingNewlines(usage);

  const CLI::Option* help = app.get_help_ptr();
  const CLI::Option* help_all = app.get_help_all_ptr();
  for (CLI::Option* option : app.get_options([](CLI::Option*) { return true; })) {
    bool is_help = option == help || option == help_all;
    if (is_help && !path.empty()) continue;
    if (option->nonpositional()) {
      FlagDoc flag;
      for (const std::string& s : option->get_snames()) flag.names.push_back("-" + s);
      for (const std::string& l : option->get_lnames()) flag.names.push_back("--" + l);
      flag.type_name = option->get_type_size() == 0 ? "" : option->get_type_name();
      flag.default_value = CapturedDefault(*option);
      flag.help = option->get_description();
      flag.repeatable = option->get_type_size() != 0 && Repeatable(*option);
      doc.flags.push_back(std::move(flag));
    } else if (option->get_positional()) {
      PositionalDoc positional;
      positional.name = option->get_name(true, false);
      positional.type_name = option->get_type_name();
      positional.help = option->get_description();
      positional.default_value = CapturedDefault(*option);
      positional.required = option->get_required();
      positional.repeatable = Repeatable(*option);
      doc.positionals.push_back(std::move(positional));
    }
  }
  SplitFooter footer = SplitExamples(app.get_footer());
  doc.footer = footer.prose;
  doc.examples = footer.examples;
  std::vector<CLI::App*> subs = VisibleSubcommands(app);
  for (CLI::App* sub : subs) doc.subcommands.push_back(sub->get_name());
  out.push_back(std::move(doc));
  for (CLI::App* sub : subs) {
    Describe(*sub, path.empty() ? sub->get_name() : path + " " + sub->get_name(), out);
  }
}

bool StartsWithSpace(const std::string& line) {
  return !line.empty() && (line[0] == ' ' || line[0] == '\t');
}

}  // namespace

std::vector<CommandDoc> DescribeCommands(CLI::App& root) {
  std::vector<CommandDoc> out;
  Describe(root, "", out);
  return out;
}

SplitFooter SplitExamples(const std::string& footer) {
  SplitFooter out;
  std::vector<std::string> prose;
  std::istringstream in(footer);
  std::string line;
  bool in_examples = false;
  bool continued = false;  // the previous example line ended with a backslash
  while (std::getline(in, line)) {
    if (line == "Examples:") {
      in_examples = true;
      continue;
    }
    if (in_examples && StartsWithSpace(line)) {
      // Examples are indented two spaces; continuation lines keep their extra indent.
      std::string text = line.size() >= 2 && line.compare(0, 2, "  ") == 0 ? line.substr(2) : line;
      if (continued && !out.examples.empty()) {
        out.examples.back() += "\n" + text;
      } else {
        out.examples.push_back(text);
      }
      continued = !text.empty() && text.back() == '\\';
      continue;
    }
    // Prose after an examples block starts a paragraph of its own.
    if (in_examples && !prose.empty() && !prose.back().empty()) prose.emplace_back();
    in_examples = false;
    continued = false;
    prose.push_back(line);
  }
  for (std::size_t i = 0; i < prose.size(); ++i) {
    if (i > 0) out.prose += "\n";
    out.prose += prose[i];
  }
  out.prose = TrimTrailingNewlines(out.prose);
  return out;
}

}  // namespace powerctl::cli
