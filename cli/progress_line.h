#pragma once
// One status line on a terminal, redrawn in place ("\r") while long work runs and erased when
// it ends, so nothing of it is left in the scrollback or in what the command prints next.
// Only for terminals: the caller decides whether to show one (a log or a pipe gets nothing).

#include <chrono>
#include <functional>
#include <iosfwd>
#include <string>

namespace powerctl::cli {

class ProgressLine {
 public:
  using Clock = std::chrono::steady_clock;

  // `now` is for tests; redraws come at most every `interval`, the first one at once.
  explicit ProgressLine(std::ostream& terminal,
                        std::chrono::milliseconds interval = std::chrono::milliseconds(100),
                        std::function<Clock::time_point()> now = Clock::now);
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  // Replaces the line with `text` (one line, no newline), unless the last redraw was too
  // recent.
  void Show(const std::string& text);
  // Erases the line. Show draws it again.
  void Clear();

  // When the work started; for EtaText.
  Clock::time_point started() const { return started_; }
  Clock::time_point now() const { return now_(); }

 private:
  std::ostream& terminal_;
  std::chrono::milliseconds interval_;
  std::function<Clock::time_point()> now_;
  Clock::time_point started_;
  Clock::time_point last_draw_{};
  std::size_t width_ = 0;  // characters on the line now
};

// "ETA 1m20s" from the time elapsed and the fraction done; "" while too early to tell (under a
// second in, or nothing done yet).
std::string EtaText(std::chrono::steady_clock::duration elapsed, double fraction_done);

}  // namespace powerctl::cli
