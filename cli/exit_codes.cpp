#include "cli/exit_codes.h"

#include <fmt/format.h>

namespace powerctl::cli {

ExitCode ExitCodeFor(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidInput:
      return kExitUsage;
    case ErrorCode::kCheckFailed:
      return kExitCheckFailed;
    case ErrorCode::kInterrupted:
      return kExitInterrupted;
    case ErrorCode::kNotFound:
    case ErrorCode::kIo:
    case ErrorCode::kNetwork:
    case ErrorCode::kApi:
    case ErrorCode::kForbidden:
    case ErrorCode::kConflict:
    case ErrorCode::kInternal:
      return kExitRuntime;
  }
  return kExitRuntime;
}

const std::vector<ExitCodeMeaning>& ExitCodeMeanings() {
  static const std::vector<ExitCodeMeaning> meanings = {
      {kExitOk, "success (also when nothing had to change)"},
      {kExitRuntime, "runtime error (the cluster, a server, the filesystem or the output failed)"},
      {kExitUsage, "usage or configuration error (bad flags, arguments or powerctl.yaml)"},
      {kExitCheckFailed, "a check found problems (each command's help says when)"},
      {kExitInterrupted, "interrupted"},
  };
  return meanings;
}

std::string ExitCodesFooter() {
  std::string out = "Exit codes:";
  std::size_t line_length = out.size();
  const std::vector<ExitCodeMeaning>& meanings = ExitCodeMeanings();
  for (std::size_t i = 0; i < meanings.size(); ++i) {
    std::string item = fmt::format("{} {}{}", static_cast<int>(meanings[i].code),
                                   meanings[i].meaning, i + 1 < meanings.size() ? ";" : ".");
    // Break before an item that would pass 96 columns, as the other footers are wrapped.
    if (line_length + 1 + item.size() > 96) {
      out += "\n" + item;
      line_length = item.size();
    } else {
      out += " " + item;
      line_length += 1 + item.size();
    }
  }
  return out;
}

}  // namespace powerctl::cli
