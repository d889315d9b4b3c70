#include "cli/context.h"

#include "core/common/edit_distance.h"
#include "core/common/jsonpath.h"
#include "core/config/config_loader.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <ostream>

namespace powerctl::cli {

std::string_view OutputFormatName(OutputFormat f) {
  switch (f) {
    case OutputFormat::kTable:
      return "table";
    case OutputFormat::kWide:
      return "wide";
    case OutputFormat::kJson:
      return "json";
    case OutputFormat::kYaml:
      return "yaml";
    case OutputFormat::kName:
      return "name";
  }
  return "table";
}

bool OutputSpec::Accepts(OutputFormat f) const {
  return std::find(accepted.begin(), accepted.end(), f) != accepted.end();
}

std::vector<std::string> OutputSpec::Names() const {
  std::vector<std::string> names;
  for (OutputFormat f : accepted) names.emplace_back(OutputFormatName(f));
  if (Accepts(OutputFormat::kJson)) names.emplace_back(kJsonPathPrefix);
  return names;
}

std::string OutputSpec::Text() const {
  std::vector<std::string> names = Names();
  if (Accepts(OutputFormat::kJson)) names.back() += "TEMPLATE";
  return fmt::format("{}", fmt::join(names, "|"));
}

Result<std::string> CheckOutputFormat(const OutputSpec& spec, const std::string& given) {
  if (given.empty()) return std::string();
  if (spec.Accepts(OutputFormat::kJson) && given.rfind(kJsonPathPrefix, 0) == 0) {
    std::string text = given.substr(kJsonPathPrefix.size());
    if (auto parsed = ParseJsonPath(text); !parsed.ok()) {
      return MakeError(ErrorCode::kInvalidInput,
                       fmt::format("-o jsonpath: {}", parsed.error().message));
    }
    return text;
  }
  for (OutputFormat f : spec.accepted) {
    if (OutputFormatName(f) == given) return std::string();
  }
  std::vector<std::string> names = spec.Names();
  const std::string closest = ClosestMatch(given.substr(0, given.find('=')), names, 3);
  return MakeError(
      ErrorCode::kInvalidInput,
      fmt::format("-o {}: this command accepts {}{}", given, spec.Text(),
                  closest.empty() ? "" : fmt::format(" (did you mean \"{}\"?)", closest)));
}

std::string Context::Env(const std::string& name) const {
  auto it = environment.find(name);
  return it == environment.end() ? "" : it->second;
}

bool Context::UseColor() const {
  if (globals.color == "always") return true;
  if (globals.color == "never") return false;
  // https://no-color.org: any non-empty NO_COLOR disables colour.
  if (!Env("NO_COLOR").empty()) return false;
  if (Env("TERM") == "dumb") return false;
  return stderr_is_tty;
}

void Context::Warn(const std::string& message) const {
  if (UseColor()) {
    *err << "\033[33mwarning:\033[0m " << message << "\n";
  } else {
    *err << "warning: " << message << "\n";
  }
}

void Context::PrintError(const std::string& message) const {
  if (UseColor()) {
    *err << "\033[31merror:\033[0m " << message << "\n";
  } else {
    *err << "error: " << message << "\n";
  }
}

void Context::Note(const std::string& message) const {
  *err << message << "\n";
}

namespace {
// The file `powerctl init` writes by default, read from the working directory.
constexpr const char* kWorkingDirConfig = "powerctl.yaml";
}  // namespace

std::string Context::ConfigFile() const {
  // -c, else $POWERCTL_CONFIG, else ./powerctl.yaml when there (what `init` writes), else the
  // built-in defaults.
  if (!globals.config_file.empty()) return globals.config_file;
  if (std::string file = Env("POWERCTL_CONFIG"); !file.empty()) return file;
  std::error_code ec;
  if (std::filesystem::is_regular_file(kWorkingDirConfig, ec)) return kWorkingDirConfig;
  return "";
}

Result<config::PowerctlConfig> Context::LoadConfig() const {
  config::ConfigSources sources;
  std::string file = ConfigFile();
  if (file == kWorkingDirConfig && globals.config_file.empty() && log) {
    log->info("reading ./{} (give -c FILE to read another)", kWorkingDirConfig);
  }
  if (!file.empty()) sources.file = file;
  sources.environment = environment;
  sources.set_flags = globals.set_flags;
  if (!globals.namespace_.empty()) sources.set_flags.push_back("namespace=" + globals.namespace_);
  return config::LoadConfig(sources);
}

Result<OutputFormat> Context::Output() const {
  if (!output_spec) return Output(OutputFormat::kTable, {OutputFormat::kTable});
  if (globals.output.empty()) return output_spec->fallback;
  if (auto checked = CheckOutputFormat(*output_spec, globals.output); !checked.ok()) {
    return checked.error();
  } else if (!checked->empty()) {
    return OutputFormat::kJson;
  }
  for (OutputFormat f : output_spec->accepted) {
    if (OutputFormatName(f) == globals.output) return f;
  }
  return output_spec->fallback;
}

Result<OutputFormat> Context::Output(OutputFormat fallback,
                                     const std::vector<OutputFormat>& allowed) const {
  if (globals.output.empty()) return fallback;
  for (OutputFormat f : allowed) {
    if (OutputFormatName(f) == globals.output) return f;
  }
  std::vector<std::string_view> names;
  for (OutputFormat f : allowed) names.push_back(OutputFormatName(f));
  return MakeError(ErrorCode::kInvalidInput, fmt::format("-o {}: this command supports {}",
                                                         globals.output, fmt::join(names, "|")));
}

}  // namespace powerctl::cli
