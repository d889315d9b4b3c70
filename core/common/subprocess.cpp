#include "core/common/subprocess.h"

#include <fmt/format.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <system_error>
#include <thread>

extern char** environ;

namespace powerctl {
namespace {

using SteadyClock = std::chrono::steady_clock;

void CloseAll(std::initializer_list<int> fds) {
  for (int fd : fds) {
    if (fd >= 0) ::close(fd);
  }
}

// An unlinked in-memory file holding `text`, positioned at its start.
Result<int> StdinFile(const std::string& text) {
  const int fd = ::memfd_create("powerctl-stdin", MFD_CLOEXEC);
  if (fd < 0) return MakeError(ErrorCode::kIo, SystemErrorText("memfd_create", errno));
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int e = errno;
      ::close(fd);
      return MakeError(ErrorCode::kIo, SystemErrorText("writing the program's input", e));
    }
    done += static_cast<std::size_t>(n);
  }
  if (::lseek(fd, 0, SEEK_SET) != 0) {
    const int e = errno;
    ::close(fd);
    return MakeError(ErrorCode::kIo, SystemErrorText("lseek", e));
  }
  return fd;
}

Result<pid_t> Spawn(const SubprocessRequest& request, int in, int out, int err) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in, STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err, STDERR_FILENO);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t mask;
  sigemptyset(&mask);
  posix_spawnattr_setsigmask(&attr, &mask);
  // Ignored signals survive exec; the program must not inherit, say, our SIG_IGN for SIGPIPE.
  sigset_t defaults;
  sigemptyset(&defaults);
  for (int sig : {SIGPIPE, SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGCHLD}) sigaddset(&defaults, sig);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  std::vector<char*> argv;
  for (const std::string& arg : request.argv) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  if (request.env) {
    for (const std::string& var : *request.env) envp.push_back(const_cast<char*>(var.c_str()));
    envp.push_back(nullptr);
  }
  char** env = request.env ? envp.data() : environ;
  pid_t pid = -1;
  const int spawned =
      request.search_path
          ? ::posix_spawnp(&pid, request.program.c_str(), &actions, &attr, argv.data(), env)
          : ::posix_spawn(&pid, request.program.c_str(), &actions, &attr, argv.data(), env);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (spawned != 0) {
    return MakeError(spawned == ENOENT ? ErrorCode::kNotFound : ErrorCode::kIo,
                     SystemErrorText("cannot run " + request.program, spawned));
  }
  return pid;
}

// Reads both pipes until they close, the deadline passes or stdout is too large.
void Drain(const SubprocessRequest& request, int out, int err, SteadyClock::time_point deadline,
           SubprocessOutcome& outcome) {
  pollfd fds[2] = {{out, POLLIN, 0}, {err, POLLIN, 0}};
  while ((fds[0].fd >= 0 || fds[1].fd >= 0) && !outcome.stdout_too_large) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - SteadyClock::now());
    if (left.count() <= 0) {
      outcome.timed_out = true;
      break;
    }
    const int ready = ::poll(fds, 2, static_cast<int>(std::min<long long>(left.count(), 60000)));
    if (ready < 0 && errno != EINTR) break;
    for (int i = 0; i < 2 && ready > 0; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buffer[65536];
      const ssize_t n = ::read(fds[i].fd, buffer, sizeof buffer);
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n <= 0) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        continue;
      }
      std::string& sink = i == 0 ? outcome.out : outcome.err;
      sink.append(buffer, static_cast<std::size_t>(n));
      if (i == 1 && sink.size() > 2 * request.stderr_kept_bytes) {
        sink.erase(0, sink.size() - request.stderr_kept_bytes);
      }
      if (i == 0 && sink.size() > request.max_stdout_bytes) outcome.stdout_too_large = true;
    }
  }
  CloseAll({fds[0].fd, fds[1].fd});
}

}  // namespace

std::string SystemErrorText(const std::string& what, int error) {
  return fmt::format("{}: {}", what, std::generic_category().message(error));
}

Result<SubprocessOutcome> RunSubprocess(const SubprocessRequest& request) {
  int in = -1;
  if (request.stdin_text) {
    POWERCTL_TRY(file, StdinFile(*request.stdin_text));
    in = file;
  } else {
    in = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (in < 0) return MakeError(ErrorCode::kIo, SystemErrorText("opening /dev/null", errno));
  }
  // O_CLOEXEC everywhere: other threads may spawn concurrently and must not inherit these.
  int out_pipe[2] = {-1, -1};
  int err_pipe[2] = {-1, -1};
  if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0) {
    const int e = errno;
    CloseAll({in, out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]});
    return MakeError(ErrorCode::kIo, SystemErrorText("cannot create pipes", e));
  }
  auto pid = Spawn(request, in, out_pipe[1], err_pipe[1]);
  CloseAll({in, out_pipe[1], err_pipe[1]});
  if (!pid.ok()) {
    CloseAll({out_pipe[0], err_pipe[0]});
    return pid.error();
  }

  SubprocessOutcome outcome;
  const SteadyClock::time_point deadline = SteadyClock::now() + request.timeout;
  Drain(request, out_pipe[0], err_pipe[0], deadline, outcome);
  // Both pipes are closed, so the program is exiting; still bound the wait by the deadline.
  while (!outcome.timed_out && !outcome.stdout_too_large) {
    const pid_t done = ::waitpid(*pid, &outcome.status, WNOHANG);
    if (done == *pid || (done < 0 && errno == ECHILD)) {
      outcome.reaped = done == *pid;
      return outcome;
    }
    if (done < 0 && errno != EINTR) break;
    if (SteadyClock::now() >= deadline) outcome.timed_out = true;
    if (!outcome.timed_out) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ::kill(-*pid, SIGKILL);
  while (::waitpid(*pid, &outcome.status, 0) < 0 && errno == EINTR) {
  }
  return outcome;
}

}  // namespace powerctl
