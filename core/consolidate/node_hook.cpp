#include "core/consolidate/node_hook.h"

#include "core/common/subprocess.h"

#include <fmt/format.h>

#include <sys/wait.h>

#include <cstdlib>
#include <sstream>

extern char** environ;

namespace powerctl::consolidate {
namespace {

// The environment for the hook: this process's, with powerctl's variables set.
std::vector<std::string> HookEnvironment(const std::string& event, const std::string& node,
                                         const std::vector<std::string>& addresses) {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view entry(*e);
    if (entry.starts_with("POWERCTL_NODE=") || entry.starts_with("POWERCTL_ADDRESSES=") ||
        entry.starts_with("POWERCTL_EVENT=")) {
      continue;
    }
    env.emplace_back(entry);
  }
  env.push_back("POWERCTL_NODE=" + node);
  env.push_back(fmt::format("POWERCTL_ADDRESSES={}", fmt::join(addresses, " ")));
  env.push_back("POWERCTL_EVENT=" + event);
  return env;
}

std::string LastLine(const std::string& text) {
  std::string trimmed = text;
  while (!trimmed.empty() && (trimmed.back() == '\n' || trimmed.back() == '\r')) trimmed.pop_back();
  const std::size_t nl = trimmed.rfind('\n');
  std::string line = nl == std::string::npos ? trimmed : trimmed.substr(nl + 1);
  if (line.size() > 300) line = line.substr(0, 300) + "...";
  return line;
}

}  // namespace

Status ValidateHook(const NodeHook& hook, const std::string& flag) {
  if (hook.command.size() > kMaxHookCommandBytes) {
    return MakeError(ErrorCode::kInvalidInput,
                     fmt::format("{}: the command is {} bytes, more than {}", flag,
                                 hook.command.size(), kMaxHookCommandBytes));
  }
  if (hook.timeout < std::chrono::seconds(1) || hook.timeout > kMaxHookTimeout) {
    return MakeError(ErrorCode::kInvalidInput,
                     fmt::format("{} timeout must be 1s..{}s, not {}s", flag,
                                 kMaxHookTimeout.count(), hook.timeout.count()));
  }
  return OkStatus();
}

Result<HookRun> RunNodeHook(const NodeHook& hook, const std::string& event, const std::string& node,
                            const std::vector<std::string>& addresses) {
  SubprocessRequest request;
  request.program = "/bin/sh";
  // sh -c CMD NAME ARG...: $0 is NAME, $1.. the node and its addresses.
  request.argv = {"sh", "-c", hook.command, "powerctl-hook", node};
  request.argv.insert(request.argv.end(), addresses.begin(), addresses.end());
  request.env = HookEnvironment(event, node, addresses);
  request.timeout = hook.timeout;
  request.max_stdout_bytes = 1 << 20;
  POWERCTL_TRY(outcome, RunSubprocess(request));
  HookRun run;
  if (outcome.timed_out) {
    run.summary = fmt::format("timed out after {}s", hook.timeout.count());
  } else if (outcome.stdout_too_large) {
    run.summary = "wrote more than 1 MiB to stdout and was stopped";
  } else if (WIFEXITED(outcome.status) && WEXITSTATUS(outcome.status) == 0) {
    run.ok = true;
    run.summary = "exit status 0";
  } else if (WIFEXITED(outcome.status)) {
    run.summary = fmt::format("exit status {}", WEXITSTATUS(outcome.status));
  } else if (WIFSIGNALED(outcome.status)) {
    run.summary = fmt::format("killed by signal {}", WTERMSIG(outcome.status));
  } else {
    run.summary = "ended abnormally";
  }
  if (!run.ok) {
    const std::string line = LastLine(outcome.err);
    if (!line.empty()) run.summary += ": " + line;
  }
  return run;
}

}  // namespace powerctl::consolidate
