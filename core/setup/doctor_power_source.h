#pragma once
// doctor's "power-source" check: with a Kepler power source, which Kepler generation
// Prometheus holds (0.10+ or 0.7-0.9, by its build-info and energy series) and whether it is
// the one telemetry.powerSource reads; SKIP for the other sources.

#include "core/common/http_client.h"
#include "core/config/config.h"
#include "core/setup/doctor.h"
#include "core/telemetry/kepler.h"

namespace powerctl::setup {

inline constexpr char kPowerSourceCheckId[] = "power-source";

// The verdict on what was found, for the configured source (pure, for tests).
CheckResult JudgeKeplerInventory(const telemetry::KeplerInventory& found,
                                 telemetry::PowerSource source);

// Reads Prometheus through `http` (a libcurl client when null).
CheckResult CheckPowerSource(HttpClient* http, const config::PowerctlConfig& config);

}  // namespace powerctl::setup
