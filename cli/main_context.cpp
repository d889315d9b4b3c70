#include "cli/main_context.h"

#include "cli/app.h"
#include "cli/exit_codes.h"
#include "cli/fd_output.h"

#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <iostream>

extern char** environ;

namespace powerctl::cli {
namespace {

// Every command's data goes through ctx.out, so a failed write is caught here, once: a full
// disk (`> /dev/full`) or a reader that went away (`| head -1`) makes the command fail.
int ExitAfterOutput(int code, const FdOutputBuffer& out, const Context& ctx) {
  if (out.error() == 0) return code;
  // The reader stopped reading: nothing else to say, as `head` already has what it wanted.
  if (out.error() != EPIPE) {
    ctx.PrintError(std::string("writing to standard output: ") + std::strerror(out.error()));
  }
  return code == kExitOk ? kExitRuntime : code;
}

}  // namespace

int Main(int argc, char** argv) {
  std::ios::sync_with_stdio(true);
  // A write to a closed pipe fails with EPIPE (see ExitAfterOutput) instead of killing the
  // process mid-write.
  std::signal(SIGPIPE, SIG_IGN);
  // Likewise a file passing the file size limit (ulimit -f) fails with EFBIG.
  std::signal(SIGXFSZ, SIG_IGN);
  Context ctx;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string entry(*e);
    std::size_t eq = entry.find('=');
    if (eq != std::string::npos) ctx.environment[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  for (int i = 0; i < argc; ++i) ctx.command_line.emplace_back(argv[i]);
  FdOutputBuffer stdout_buffer(STDOUT_FILENO);
  std::ostream out(&stdout_buffer);
  ctx.in = &std::cin;
  ctx.out = &out;
  ctx.err = &std::cerr;
  ctx.stdin_is_tty = ::isatty(STDIN_FILENO) == 1;
  ctx.stdout_is_tty = ::isatty(STDOUT_FILENO) == 1;
  ctx.stderr_is_tty = ::isatty(STDERR_FILENO) == 1;
  // A terminal shows each line as it is written, as stdio's line buffering did.
  if (ctx.stdout_is_tty) out.setf(std::ios::unitbuf);
  // What was written comes out before a prompt waits for input, as with std::cout.
  std::cin.tie(&out);
  int code = Run(argc, argv, ctx);
  out.flush();
  std::cin.tie(&std::cout);
  return ExitAfterOutput(code, stdout_buffer, ctx);
}

}  // namespace powerctl::cli
