// MakeTelemetrySources: powerctl.yaml's telemetry section to source objects.

#include "core/telemetry/sources.h"

#include "core/common/duration.h"

#include <utility>

namespace powerctl::telemetry {
namespace {

Error InvalidSource(const std::string& message) {
  return MakeError(ErrorCode::kInvalidInput, message);
}

Result<std::chrono::milliseconds> PositiveDuration(const std::string& key,
                                                   const std::string& text) {
  Result<Duration> d = ParseDuration(text);
  if (!d.ok()) return WithContext(d.error(), "telemetry." + key);
  if (d->count() <= 0) return InvalidSource("telemetry." + key + " must be more than 0");
  return *d;
}

Status CheckPrometheusUrl(const std::string& url) {
  if (url.rfind("http://", 0) != 0 && url.rfind("https://", 0) != 0) {
    return InvalidSource("telemetry.prometheusUrl \"" + url +
                         "\" must be an http:// or https:// URL (e.g. "
                         "http://prometheus.monitoring.svc:9090)");
  }
  return OkStatus();
}

}  // namespace

Result<TelemetrySources> MakeTelemetrySources(const config::TelemetrySettings& settings,
                                              const SourceDependencies& deps) {
  const std::string& cpu = settings.cpu_source;
  const std::string& temperature = settings.temperature_source;
  if (cpu != "metrics-api" && cpu != "prometheus") {
    return InvalidSource("telemetry.cpuSource \"" + cpu +
                         "\" is not one of metrics-api, prometheus");
  }
  if (temperature != "ipmi-exporter" && temperature != "prometheus") {
    return InvalidSource("telemetry.temperatureSource \"" + temperature +
                         "\" is not one of ipmi-exporter, prometheus");
  }
  if (settings.ipmi_exporter_port < 1 || settings.ipmi_exporter_port > 65535) {
    return InvalidSource("telemetry.ipmiExporterPort " +
                         std::to_string(settings.ipmi_exporter_port) + " is not a port (1-65535)");
  }
  TelemetrySources out;
  POWERCTL_TRY(max_age, PositiveDuration("maxAge", settings.max_age));
  POWERCTL_TRY(refresh, PositiveDuration("refreshInterval", settings.refresh_interval));
  out.max_age = max_age;
  out.refresh_interval = refresh;

  bool needs_http =
      cpu == "prometheus" || temperature == "prometheus" || temperature == "ipmi-exporter";
  if (needs_http && deps.http == nullptr) {
    return MakeError(ErrorCode::kInternal, "telemetry sources need an HTTP client");
  }
  if (cpu == "prometheus" || temperature == "prometheus") {
    POWERCTL_CHECK_OK(CheckPrometheusUrl(settings.prometheus_url));
    PrometheusOptions options;
    options.url = settings.prometheus_url;
    options.log = deps.log;
    out.prometheus = std::make_unique<PrometheusClient>(*deps.http, std::move(options));
  }
  if (cpu == "metrics-api") {
    if (deps.kube == nullptr) {
      return MakeError(ErrorCode::kInternal,
                       "telemetry.cpuSource metrics-api needs a Kubernetes client");
    }
    out.metrics_api = std::make_unique<MetricsApiClient>(*deps.kube);
    out.cpu = MakeMetricsApiCpuSource(*out.metrics_api, deps.time);
  } else {
    PrometheusCpuOptions options;
    if (!settings.prometheus_cpu_query.empty()) {
      // A query of the user's: its grouping is unknown, so readings age from the evaluation.
      options.query = settings.prometheus_cpu_query;
      options.timestamp_query.clear();
    }
    out.cpu = MakePrometheusCpuSource(*out.prometheus, std::move(options), deps.time);
  }
  if (temperature == "ipmi-exporter") {
    IpmiExporterOptions options;
    options.port = settings.ipmi_exporter_port;
    options.sensors = settings.sensors;
    out.temperature =
        MakeIpmiExporterTemperatureSource(*deps.http, std::move(options), deps.time, deps.log);
  } else {
    PrometheusTemperatureOptions options;
    options.sensors = settings.sensors;
    out.temperature =
        MakePrometheusTemperatureSource(*out.prometheus, std::move(options), deps.time);
  }
  return out;
}

}  // namespace powerctl::telemetry
