#include "core/telemetry/readings.h"

#include "core/common/duration.h"

#include <fmt/format.h>

#include <cmath>
#include <utility>

namespace powerctl::telemetry {
namespace {

Reading Rejected(SharedText reason, SteadyTime observed_at, SharedText source) {
  Reading r;
  r.observed_at = observed_at;
  r.source = std::move(source);
  r.missing_reason = std::move(reason);
  return r;
}

Reading Accepted(double value, SteadyTime observed_at, SharedText source) {
  Reading r;
  r.value = value;
  r.observed_at = observed_at;
  r.source = std::move(source);
  return r;
}

}  // namespace

Reading CpuReading(double cores, SteadyTime observed_at, SharedText source) {
  if (std::isnan(cores)) return Rejected("CPU usage is NaN", observed_at, std::move(source));
  if (!std::isfinite(cores) || cores < 0) {
    return Rejected(fmt::format("CPU usage {} cores is not plausible", cores), observed_at,
                    std::move(source));
  }
  return Accepted(cores, observed_at, std::move(source));
}

Reading TemperatureReading(double celsius, SteadyTime observed_at, SharedText source) {
  if (std::isnan(celsius)) {
    return Rejected("the sensor reads NaN (no reading)", observed_at, std::move(source));
  }
  if (!PlausibleCelsius(celsius)) {
    return Rejected(fmt::format("temperature {} C is outside the plausible {}..{} C", celsius,
                                kMinCelsius, kMaxCelsius),
                    observed_at, std::move(source));
  }
  return Accepted(celsius, observed_at, std::move(source));
}

Reading MissingReading(SharedText reason, SharedText source) {
  Reading r;
  r.source = std::move(source);
  r.missing_reason = std::move(reason);
  return r;
}

std::chrono::milliseconds Age(const Reading& reading, SteadyTime now) {
  if (reading.observed_at >= now) return std::chrono::milliseconds(0);
  return std::chrono::duration_cast<std::chrono::milliseconds>(now - reading.observed_at);
}

Reading WithMaxAge(Reading reading, SteadyTime now, std::chrono::milliseconds max_age) {
  if (!reading.ok()) return reading;
  std::chrono::milliseconds age = Age(reading, now);
  if (age <= max_age) return reading;
  reading.value.reset();
  reading.missing_reason = "stale: measured " + FormatDuration(age) +
                           " ago, more than the maximum age of " + FormatDuration(max_age);
  return reading;
}

NodeReading WithMaxAge(NodeReading reading, SteadyTime now, std::chrono::milliseconds max_age) {
  reading.cpu_cores_used = WithMaxAge(std::move(reading.cpu_cores_used), now, max_age);
  reading.ambient = WithMaxAge(std::move(reading.ambient), now, max_age);
  reading.cpu1 = WithMaxAge(std::move(reading.cpu1), now, max_age);
  reading.cpu2 = WithMaxAge(std::move(reading.cpu2), now, max_age);
  return reading;
}

}  // namespace powerctl::telemetry
