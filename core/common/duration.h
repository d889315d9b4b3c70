#pragma once
// Go-style durations ("500ms", "2s", "1m30s", "7d"), as used in Kubernetes configuration.

#include "core/common/result.h"

#include <chrono>
#include <string>
#include <string_view>

namespace powerctl {

using Duration = std::chrono::milliseconds;

// Units: ms, s, m, h, d. A bare "0" is zero. Negative durations are rejected.
Result<Duration> ParseDuration(std::string_view text);

// Shortest Go-compatible form: 1500ms -> "1.5s", 90s -> "1m30s", 0 -> "0s".
std::string FormatDuration(Duration d);

}  // namespace powerctl
