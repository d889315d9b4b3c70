#pragma once
// The exit codes powerctl documents (README.md, "Conventions"), mapped from core errors in one
// place.

#include "core/common/result.h"

#include <string>
#include <string_view>
#include <vector>

namespace powerctl::cli {

enum ExitCode : int {
  kExitOk = 0,           // success, also "nothing changed"
  kExitRuntime = 1,      // the cluster, a server or the filesystem failed
  kExitUsage = 2,        // bad flags, arguments or configuration
  kExitCheckFailed = 3,  // a check (doctor, explain) found problems
  kExitInterrupted = 130,
};

ExitCode ExitCodeFor(ErrorCode code);

// What each exit code means, for `powerctl --help` and the man page's EXIT STATUS.
struct ExitCodeMeaning {
  ExitCode code;
  std::string_view meaning;
};
const std::vector<ExitCodeMeaning>& ExitCodeMeanings();

// "Exit codes: 0 success (...); 1 ...", wrapped for the help footer.
std::string ExitCodesFooter();

}  // namespace powerctl::cli
