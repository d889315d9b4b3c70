#pragma once
// The exit codes powerctl documents (README.md, "Conventions"), mapped from core errors in one
// place.

#include "core/common/result.h"

namespace powerctl::cli {

enum ExitCode : int {
  kExitOk = 0,           // success, also "nothing changed"
  kExitRuntime = 1,      // the cluster, a server or the filesystem failed
  kExitUsage = 2,        // bad flags, arguments or configuration
  kExitCheckFailed = 3,  // a check (doctor, explain) found problems
  kExitInterrupted = 130,
};

ExitCode ExitCodeFor(ErrorCode code);

}  // namespace powerctl::cli
