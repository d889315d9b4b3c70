#include "cli/progress_line.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ostream>

namespace powerctl::cli {

ProgressLine::ProgressLine(std::ostream& terminal, std::chrono::milliseconds interval,
                           std::function<Clock::time_point()> now)
    : terminal_(terminal), interval_(interval), now_(std::move(now)), started_(now_()) {}

ProgressLine::~ProgressLine() {
  Clear();
}

void ProgressLine::Show(const std::string& text) {
  const Clock::time_point t = now_();
  if (width_ > 0 && t - last_draw_ < interval_) return;
  last_draw_ = t;
  // Padding covers what a longer previous text left on the line.
  std::string line = "\r" + text;
  if (text.size() < width_) line += std::string(width_ - text.size(), ' ');
  terminal_ << line << std::flush;
  width_ = std::max<std::size_t>(text.size(), 1);
}

void ProgressLine::Clear() {
  if (width_ == 0) return;
  terminal_ << "\r" << std::string(width_, ' ') << "\r" << std::flush;
  width_ = 0;
}

std::string EtaText(std::chrono::steady_clock::duration elapsed, double fraction_done) {
  const double seconds = std::chrono::duration<double>(elapsed).count();
  if (seconds < 1 || !(fraction_done > 0)) return "";
  const long left = std::lround(seconds * (1 - std::min(fraction_done, 1.0)) / fraction_done);
  if (left >= 3600) return fmt::format("ETA {}h{:02}m", left / 3600, left % 3600 / 60);
  if (left >= 60) return fmt::format("ETA {}m{:02}s", left / 60, left % 60);
  return fmt::format("ETA {}s", left);
}

}  // namespace powerctl::cli
