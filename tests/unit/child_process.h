#pragma once
// Child processes for tests that run real programs (Prometheus, node_exporter, promtool):
// started with stdout and stderr in a log file, stopped by PID (SIGTERM, then SIGKILL).

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace powerctl::testsupport {

// The PID, or -1 when the program could not be started.
inline pid_t SpawnLogged(std::vector<std::string> argv, const std::filesystem::path& log) {
  std::vector<char*> args;
  for (std::string& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = -1;
  if (posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ) != 0) pid = -1;
  posix_spawn_file_actions_destroy(&actions);
  return pid;
}

// SIGTERM, up to 5 s for it to exit, then SIGKILL; always reaps.
inline void StopPid(pid_t pid) {
  if (pid <= 0) return;
  ::kill(pid, SIGTERM);
  for (int i = 0; i < 100; ++i) {
    if (::waitpid(pid, nullptr, WNOHANG) == pid) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
}

// A child stopped when this object is destroyed.
class Child {
 public:
  Child(std::vector<std::string> argv, const std::filesystem::path& log)
      : pid_(SpawnLogged(std::move(argv), log)) {}
  ~Child() { StopPid(pid_); }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  bool running() const { return pid_ > 0 && ::waitpid(pid_, nullptr, WNOHANG) == 0; }

 private:
  pid_t pid_ = -1;
};

}  // namespace powerctl::testsupport
