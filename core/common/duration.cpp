#include "core/common/duration.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>

namespace powerctl {

Result<Duration> ParseDuration(std::string_view text) {
  auto invalid = [&] {
    return MakeError(ErrorCode::kInvalidInput,
                     fmt::format("invalid duration \"{}\" (use e.g. 500ms, 2s, 1m30s, 7d)", text));
  };
  if (text == "0") return Duration(0);
  if (text.empty()) return invalid();
  double total_ms = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t start = pos;
    while (pos < text.size() && ((text[pos] >= '0' && text[pos] <= '9') || text[pos] == '.')) ++pos;
    if (pos == start) return invalid();
    std::string number(text.substr(start, pos - start));
    char* end = nullptr;
    double value = std::strtod(number.c_str(), &end);
    if (end != number.c_str() + number.size()) return invalid();
    std::size_t unit_start = pos;
    while (pos < text.size() && text[pos] >= 'a' && text[pos] <= 'z') ++pos;
    std::string_view unit = text.substr(unit_start, pos - unit_start);
    double scale = 0;
    if (unit == "ms")
      scale = 1;
    else if (unit == "s")
      scale = 1000;
    else if (unit == "m")
      scale = 60'000;
    else if (unit == "h")
      scale = 3'600'000;
    else if (unit == "d")
      scale = 86'400'000;
    else
      return invalid();
    total_ms += value * scale;
  }
  if (!std::isfinite(total_ms) || total_ms > 1e13) return invalid();
  return Duration(static_cast<std::int64_t>(std::llround(total_ms)));
}

std::string FormatDuration(Duration d) {
  std::int64_t ms = d.count();
  if (ms == 0) return "0s";
  if (ms < 1000) return fmt::format("{}ms", ms);
  std::string out;
  std::int64_t hours = ms / 3'600'000;
  ms %= 3'600'000;
  std::int64_t minutes = ms / 60'000;
  ms %= 60'000;
  if (hours > 0) out += fmt::format("{}h", hours);
  if (minutes > 0) out += fmt::format("{}m", minutes);
  if (ms > 0) {
    if (ms % 1000 == 0) {
      out += fmt::format("{}s", ms / 1000);
    } else {
      std::string frac = fmt::format("{:03}", ms % 1000);
      while (!frac.empty() && frac.back() == '0') frac.pop_back();
      out += fmt::format("{}.{}s", ms / 1000, frac);
    }
  }
  return out;
}

}  // namespace powerctl
