#pragma once
// Waiting for the end of a long-running command (schedule-server, lb-agent, consolidate wake
// --watch): SIGTERM, SIGINT or a stop_token. The handlers are installed when the waiter is
// constructed (before the servers start, so a signal right after the start line is never lost).
// SIGHUP, which would otherwise end the process without draining, is caught and ignored: the
// configuration is read once at start (TLS files are reloaded on their own when they change), and
// `on_ignored` says so.

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>

namespace powerctl::server {

class StopWaiter {
 public:
  StopWaiter(bool handle_signals, const std::stop_token& stop,
             std::function<void(const std::string& signal)> on_ignored = nullptr);
  ~StopWaiter();
  StopWaiter(const StopWaiter&) = delete;
  StopWaiter& operator=(const StopWaiter&) = delete;

  // Blocks until a signal or `stop`; returns what stopped it ("SIGTERM", "SIGINT" or
  // "stop requested"). Call once.
  std::string Wait();

  // Waits at most `timeout` (a loop's sleep between passes): what stopped it, or nullopt when
  // the time ran out first. May be called again after nullopt; a signal that arrives while
  // the caller works is reported by the next call. Once stopped, every call returns at once.
  std::optional<std::string> WaitFor(std::chrono::milliseconds timeout);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace powerctl::server
