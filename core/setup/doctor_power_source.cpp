#include "core/setup/doctor_power_source.h"

#include "core/setup/doctor_prometheus.h"

#include <fmt/format.h>

namespace powerctl::setup {
namespace {

constexpr char kCurrent[] = "Kepler 0.10+";
constexpr char kLegacy[] = "Kepler 0.7-0.9";

std::string Versions(const std::vector<std::string>& versions) {
  return versions.empty() ? "" : fmt::format(" ({})", fmt::join(versions, ", "));
}

}  // namespace

CheckResult JudgeKeplerInventory(const telemetry::KeplerInventory& found,
                                 telemetry::PowerSource source) {
  CheckResult r{kPowerSourceCheckId, "The measured power source is the exporter that runs",
                CheckStatus::kPass, "", ""};
  const bool wants_current = source == telemetry::PowerSource::kKepler;
  const bool has_wanted = wants_current ? found.present.current : found.present.legacy;
  const bool has_other = wants_current ? found.present.legacy : found.present.current;
  const std::string wanted =
      std::string(wants_current ? kCurrent : kLegacy) +
      Versions(wants_current ? found.current_versions : found.legacy_versions);
  const std::string other =
      std::string(wants_current ? kLegacy : kCurrent) +
      Versions(wants_current ? found.legacy_versions : found.current_versions);
  const std::string name(telemetry::PowerSourceName(source));
  if (!has_wanted && !has_other) {
    r.status = CheckStatus::kWarn;
    r.message = "no Kepler metrics in Prometheus";
    r.fix = "check that Prometheus scrapes Kepler (its ServiceMonitor) and telemetry.prometheusUrl";
    return r;
  }
  if (!has_wanted) {
    r.status = CheckStatus::kWarn;
    r.message = fmt::format("{} is in Prometheus, not {}: telemetry.powerSource {} reads nothing",
                            other, wants_current ? kCurrent : kLegacy, name);
    r.fix = fmt::format("set telemetry.powerSource to {}", wants_current ? "kepler-0.7" : "kepler");
    return r;
  }
  r.message = fmt::format("{} is in Prometheus: telemetry.powerSource {} reads it", wanted, name);
  if (has_other) r.message += fmt::format("; {} is there too (nodes not yet upgraded?)", other);
  if (!wants_current && !found.legacy_idle_series) {
    r.status = CheckStatus::kWarn;
    r.message += "; but no idle-mode series: the platform energy reads only its dynamic part";
    r.fix =
        "start Kepler 0.8/0.9 with --expose-estimated-idle-power (0.7 exports the idle "
        "series by itself), or upgrade to 0.10+ and set telemetry.powerSource to kepler";
  }
  return r;
}

CheckResult CheckPowerSource(HttpClient* http, const config::PowerctlConfig& config) {
  CheckResult r{kPowerSourceCheckId, "The measured power source is the exporter that runs",
                CheckStatus::kSkip, "", ""};
  auto source = telemetry::ParsePowerSource(config.telemetry.power_source, "telemetry.powerSource");
  if (!source.ok() || (*source != telemetry::PowerSource::kKepler &&
                       *source != telemetry::PowerSource::kKepler07)) {
    r.message = fmt::format("telemetry.powerSource is {}: no exporter generation to tell",
                            config.telemetry.power_source);
    return r;
  }
  DoctorPrometheus prometheus(http, config);
  auto found = telemetry::DetectKeplerInventory(prometheus.client());
  if (!found.ok()) {
    r.status = CheckStatus::kWarn;
    r.message = "cannot ask Prometheus which Kepler runs: " + found.error().message;
    r.fix = "check telemetry.prometheusUrl";
    return r;
  }
  return JudgeKeplerInventory(*found, *source);
}

}  // namespace powerctl::setup
