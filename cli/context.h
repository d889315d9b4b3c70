#pragma once
// Everything a command needs from the process, built once in main and passed down:
// global flags, the environment, the output streams and how to decorate them.

#include "core/common/result.h"
#include "core/config/config.h"

#include <spdlog/logger.h>

#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace powerctl::cli {

enum class OutputFormat { kTable, kWide, kJson, kYaml, kName };

// What a command prints: its default and every -o it accepts, declared once where the command
// is registered (DeclareOutput) and read by validation, help and completion. A command that
// accepts json also accepts jsonpath=TEMPLATE, a filter over the same document.
struct OutputSpec {
  OutputFormat fallback = OutputFormat::kTable;
  std::vector<OutputFormat> accepted;

  bool Accepts(OutputFormat f) const;
  // The -o values to offer: "table", "json", ..., "jsonpath=".
  std::vector<std::string> Names() const;
  // "table|json|yaml|jsonpath=TEMPLATE", as help and errors show it.
  std::string Text() const;
};

// The -o jsonpath= prefix (kubectl's spelling).
inline constexpr std::string_view kJsonPathPrefix = "jsonpath=";

// -o `given` checked against `spec`: a usage error that lists the accepted formats and the
// closest one, or the template of -o jsonpath=TEMPLATE checked for syntax ("" otherwise).
Result<std::string> CheckOutputFormat(const OutputSpec& spec, const std::string& given);

struct GlobalOptions {
  std::string kubeconfig;
  std::string context;
  std::string namespace_;
  std::string output;  // "" = the command's default
  int verbosity = 0;
  std::string color = "auto";
  std::string config_file;
  std::vector<std::string> set_flags;
};

struct Context {
  GlobalOptions globals;
  std::vector<std::string> command_line;  // argv, for output that says what produced it
  std::map<std::string, std::string> environment;
  std::istream* in = nullptr;   // prompts read here
  std::ostream* out = nullptr;  // data
  std::ostream* err = nullptr;  // messages
  bool stdin_is_tty = false;
  bool stdout_is_tty = false;
  bool stderr_is_tty = false;
  std::shared_ptr<spdlog::logger> log;
  // The running command's declared formats; set once the command line is parsed.
  std::optional<OutputSpec> output_spec;

  bool UseColor() const;
  std::string Env(const std::string& name) const;

  // "warning: ..." / "error: ..." on stderr, coloured when allowed.
  void Warn(const std::string& message) const;
  void PrintError(const std::string& message) const;
  // A progress or status line on stderr.
  void Note(const std::string& message) const;

  // powerctl.yaml after defaults < file (-c or $POWERCTL_CONFIG) < POWERCTL_* < --set < -n.
  // The powerctl.yaml LoadConfig reads: -c, else $POWERCTL_CONFIG, else ./powerctl.yaml when
  // present; "" for the built-in defaults.
  std::string ConfigFile() const;
  Result<config::PowerctlConfig> LoadConfig() const;

  // -o as the running command declared it (output_spec); jsonpath=TEMPLATE reads as json, whose
  // output Run filters through the template.
  Result<OutputFormat> Output() const;
  // -o parsed against `allowed`, for a command that has not declared its formats.
  Result<OutputFormat> Output(OutputFormat fallback,
                              const std::vector<OutputFormat>& allowed) const;
};

std::string_view OutputFormatName(OutputFormat f);

}  // namespace powerctl::cli
