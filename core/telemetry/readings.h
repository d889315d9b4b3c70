#pragma once
// What telemetry says about a node, one value per input of the power model, each with the
// time it was measured and, when it cannot be used, the reason. Scoring never sees a NaN,
// an absurd temperature or a reading older than the configured maximum age: such values
// are dropped here and the reason travels to `explain` and `predict`.

#include "core/common/clock.h"
#include "core/common/shared_text.h"

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>

namespace powerctl::telemetry {

using SteadyTime = std::chrono::steady_clock::time_point;
using WallTime = std::chrono::system_clock::time_point;

// Plausible temperatures of a server sensor, in degrees Celsius; outside is a broken sensor.
inline constexpr double kMinCelsius = -40;
inline constexpr double kMaxCelsius = 150;
// A temperature in kMinCelsius..kMaxCelsius (false for NaN).
inline bool PlausibleCelsius(double celsius) {
  return celsius >= kMinCelsius && celsius <= kMaxCelsius;
}

struct Reading {
  std::optional<double> value;  // set when usable
  SteadyTime observed_at{};     // when it was measured, on the Clock's timeline (if known)
  // Texts shared with the other readings of the same fetch (see SharedText).
  SharedText source;          // where it came from, e.g. ipmi_exporter sensor "Inlet Temp"
  SharedText missing_reason;  // why `value` is empty

  bool ok() const { return value.has_value(); }
};

struct NodeReading {
  std::string node;
  Reading cpu_cores_used;
  std::optional<double> cpu_capacity;  // cores, from the Node's status.capacity.cpu
  Reading ambient;
  Reading cpu1;
  Reading cpu2;
};

struct Temperatures {
  Reading ambient;
  Reading cpu1;
  Reading cpu2;
};

// Validating constructors: the value is kept only when it is plausible.
Reading CpuReading(double cores, SteadyTime observed_at, SharedText source);
Reading TemperatureReading(double celsius, SteadyTime observed_at, SharedText source);
Reading MissingReading(SharedText reason, SharedText source = {});

// `reading` as of `now`: empty with a "stale" reason when it was measured more than
// `max_age` ago. A reading from the future (clock skew) counts as measured now.
Reading WithMaxAge(Reading reading, SteadyTime now, std::chrono::milliseconds max_age);
NodeReading WithMaxAge(NodeReading reading, SteadyTime now, std::chrono::milliseconds max_age);

// How long ago `reading` was measured, as of `now`; zero for future times.
std::chrono::milliseconds Age(const Reading& reading, SteadyTime now);

// Puts wall-clock times (from Prometheus, metrics.k8s.io, exposition timestamps) on the
// injectable steady timeline, so that staleness is judged with one clock.
struct TimeBase {
  Clock clock;
  std::function<WallTime()> wall_now = [] { return std::chrono::system_clock::now(); };

  SteadyTime FromWall(WallTime time) const { return clock.now() - (wall_now() - time); }
};

}  // namespace powerctl::telemetry
