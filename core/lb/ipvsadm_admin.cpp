// IpvsAdmin through Debian's ipvsadm: `-S -n` to list, `-R` with `-e` lines to edit weights.
// The program is spawned directly (posix_spawnp, no shell), in its own process group so a
// timeout kills it whole, with stdin from an in-memory file and both output pipes drained with
// poll so neither can fill up and block it.

#include "core/lb/ipvs_admin.h"

#include <fmt/format.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>
#include <thread>

extern char** environ;

namespace powerctl::lb {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t kStderrKeptBytes = 16 << 10;
constexpr std::size_t kStderrQuotedChars = 400;

struct Outcome {
  std::string out;
  std::string err;
  int status = 0;
  bool timed_out = false;
  bool too_large = false;
};

std::string SystemError(const char* what, int error) {
  return fmt::format("{}: {}", what, std::generic_category().message(error));
}

void CloseAll(std::initializer_list<int> fds) {
  for (int fd : fds) {
    if (fd >= 0) ::close(fd);
  }
}

// An unlinked in-memory file holding `text`, positioned at its start: the child's stdin.
Result<int> StdinFile(const std::string& text) {
  const int fd = ::memfd_create("ipvsadm-stdin", MFD_CLOEXEC);
  if (fd < 0) return MakeError(ErrorCode::kIo, SystemError("memfd_create", errno));
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int e = errno;
      ::close(fd);
      return MakeError(ErrorCode::kIo, SystemError("writing ipvsadm's input", e));
    }
    done += static_cast<std::size_t>(n);
  }
  if (::lseek(fd, 0, SEEK_SET) != 0) {
    const int e = errno;
    ::close(fd);
    return MakeError(ErrorCode::kIo, SystemError("lseek", e));
  }
  return fd;
}

Result<Outcome> Run(const IpvsadmOptions& options, const std::vector<std::string>& args,
                    const std::string& input) {
  POWERCTL_TRY(in, StdinFile(input));
  int out_pipe[2] = {-1, -1};
  int err_pipe[2] = {-1, -1};
  if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0) {
    const int e = errno;
    CloseAll({in, out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]});
    return MakeError(ErrorCode::kIo, SystemError("cannot create pipes for ipvsadm", e));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in, STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t mask;
  sigemptyset(&mask);
  posix_spawnattr_setsigmask(&attr, &mask);
  sigset_t defaults;  // ignored signals survive exec; ipvsadm must not inherit ours
  sigemptyset(&defaults);
  for (int sig : {SIGPIPE, SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGCHLD}) sigaddset(&defaults, sig);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  std::vector<std::string> argv_strings{options.program};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& arg : argv_strings) argv.push_back(arg.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int spawned =
      ::posix_spawnp(&pid, options.program.c_str(), &actions, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  CloseAll({in, out_pipe[1], err_pipe[1]});
  if (spawned != 0) {
    CloseAll({out_pipe[0], err_pipe[0]});
    return MakeError(spawned == ENOENT ? ErrorCode::kNotFound : ErrorCode::kIo,
                     SystemError(fmt::format("cannot run {}", options.program).c_str(), spawned));
  }

  Outcome outcome;
  const Clock::time_point deadline = Clock::now() + options.timeout;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  while (fds[0].fd >= 0 || fds[1].fd >= 0) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
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
      if (i == 1 && sink.size() > 2 * kStderrKeptBytes)
        sink.erase(0, sink.size() - kStderrKeptBytes);
      if (i == 0 && sink.size() > options.max_output_bytes) outcome.too_large = true;
    }
    if (outcome.too_large) break;
  }
  CloseAll({fds[0].fd, fds[1].fd});
  // Both pipes are closed, so it is exiting; still bound the wait by the deadline.
  while (!outcome.timed_out && !outcome.too_large) {
    const pid_t done = ::waitpid(pid, &outcome.status, WNOHANG);
    if (done == pid) return outcome;
    if (done < 0 && errno != EINTR) break;
    if (Clock::now() >= deadline) outcome.timed_out = true;
    if (!outcome.timed_out) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ::kill(-pid, SIGKILL);
  while (::waitpid(pid, &outcome.status, 0) < 0 && errno == EINTR) {
  }
  return outcome;
}

// The last ~400 characters of stderr on one line, printable ASCII only.
std::string StderrTail(const std::string& text) {
  std::string flat;
  for (char c : text) flat += (c >= 0x20 && c < 0x7f) ? c : ' ';
  const std::size_t first = flat.find_first_not_of(' ');
  if (first == std::string::npos) return "";
  flat = flat.substr(first, flat.find_last_not_of(' ') - first + 1);
  if (flat.size() <= kStderrQuotedChars) return flat;
  return "..." + flat.substr(flat.size() - kStderrQuotedChars);
}

// Success needs exit status 0 and an empty stderr: `ipvsadm -R` reports a failed line on stderr
// and carries on, and its status is the last line's.
Status Check(const IpvsadmOptions& options, const std::string& what, const Outcome& o) {
  std::string problem;
  if (o.timed_out) {
    problem = fmt::format("did not finish within {} ms (killed)", options.timeout.count());
  } else if (o.too_large) {
    problem = fmt::format("printed more than {} bytes (killed)", options.max_output_bytes);
  } else if (WIFSIGNALED(o.status)) {
    problem = fmt::format("was killed by signal {}", WTERMSIG(o.status));
  } else if (WIFEXITED(o.status) && WEXITSTATUS(o.status) != 0) {
    problem = fmt::format("exited with status {}", WEXITSTATUS(o.status));
  }
  const std::string tail = StderrTail(o.err);
  if (problem.empty() && tail.empty()) return OkStatus();
  if (problem.empty()) problem = "reported an error";
  const bool forbidden = tail.find("Permission denied") != std::string::npos ||
                         tail.find("Operation not permitted") != std::string::npos;
  return MakeError(forbidden ? ErrorCode::kForbidden : ErrorCode::kApi,
                   fmt::format("{} {}{}{}", what, problem, tail.empty() ? "" : ": ", tail));
}

class IpvsadmAdmin final : public IpvsAdmin {
 public:
  explicit IpvsadmAdmin(IpvsadmOptions options) : options_(std::move(options)) {}

  Result<std::vector<IpvsVirtualServer>> List() override {
    const std::string what = options_.program + " -S -n";
    POWERCTL_TRY(outcome, Run(options_, {"-S", "-n"}, ""));
    POWERCTL_CHECK_OK(Check(options_, what, outcome));
    IpvsParseLimits limits;
    limits.max_bytes = options_.max_output_bytes;
    auto parsed = ParseIpvsSave(outcome.out, limits);
    if (!parsed.ok()) return WithContext(parsed.error(), "reading " + what + " output");
    return parsed;
  }

  Status SetWeights(const std::vector<IpvsWeightChange>& changes) override {
    if (changes.empty()) return OkStatus();
    POWERCTL_TRY(outcome, Run(options_, {"-R"}, RenderIpvsWeightEdits(changes)));
    return Check(options_, options_.program + " -R", outcome);
  }

 private:
  IpvsadmOptions options_;
};

}  // namespace

std::unique_ptr<IpvsAdmin> MakeIpvsadmAdmin(IpvsadmOptions options) {
  return std::make_unique<IpvsadmAdmin>(std::move(options));
}

bool KernelHasIpvs(const std::string& proc_file) {
  struct stat st {};
  return ::stat(proc_file.c_str(), &st) == 0;
}

}  // namespace powerctl::lb
