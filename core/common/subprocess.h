#pragma once
// Running a helper program (exec credential plugins, ipvsadm) without a shell: spawned directly
// in its own process group (a timeout kills everything it started), signals it must not
// inherit reset, stdin from /dev/null or an in-memory file, and stdout and stderr drained
// together with poll so neither pipe can fill up and block it. Bounded in time and size.

#include "core/common/result.h"

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace powerctl {

struct SubprocessRequest {
  std::string program;            // a path; with search_path, a name looked up in $PATH too
  bool search_path = false;       // posix_spawnp instead of posix_spawn
  std::vector<std::string> argv;  // argv[0] first
  std::optional<std::vector<std::string>> env;  // "NAME=value"; nullopt: this process's
  std::optional<std::string> stdin_text;        // nullopt: /dev/null
  std::chrono::milliseconds timeout{10'000};
  std::size_t max_stdout_bytes = 4 << 20;    // more: killed, stdout_too_large
  std::size_t stderr_kept_bytes = 64 << 10;  // the tail of stderr that is kept
};

struct SubprocessOutcome {
  std::string out;
  std::string err;  // the last stderr_kept_bytes or so
  int status = 0;   // as waitpid reports it
  bool reaped = false;
  bool timed_out = false;  // killed at the deadline
  bool stdout_too_large = false;
};

// kNotFound when the program does not exist, kIo when it cannot be started ("cannot run
// <program>: <reason>"). A program that starts always gives an outcome, whatever its status.
Result<SubprocessOutcome> RunSubprocess(const SubprocessRequest& request);

// "<what>: <strerror(error)>".
std::string SystemErrorText(const std::string& what, int error);

}  // namespace powerctl
