#include "cli/exit_codes.h"

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

}  // namespace powerctl::cli
