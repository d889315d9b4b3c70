#include "cli/main_context.h"

#include "cli/app.h"

#include <unistd.h>

#include <csignal>
#include <iostream>

extern char** environ;

namespace powerctl::cli {

int Main(int argc, char** argv) {
  std::ios::sync_with_stdio(true);
  // Writing to a closed pipe (`powerctl generate | head`) should end quietly, not kill us
  // mid-write.
  std::signal(SIGPIPE, SIG_IGN);
  Context ctx;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string entry(*e);
    std::size_t eq = entry.find('=');
    if (eq != std::string::npos) ctx.environment[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  for (int i = 0; i < argc; ++i) ctx.command_line.emplace_back(argv[i]);
  ctx.in = &std::cin;
  ctx.out = &std::cout;
  ctx.err = &std::cerr;
  ctx.stdin_is_tty = ::isatty(STDIN_FILENO) == 1;
  ctx.stdout_is_tty = ::isatty(STDOUT_FILENO) == 1;
  ctx.stderr_is_tty = ::isatty(STDERR_FILENO) == 1;
  int code = Run(argc, argv, ctx);
  std::cout.flush();
  return code;
}

}  // namespace powerctl::cli
