#pragma once
// Prometheus as doctor's newer checks ask it: telemetry.prometheusUrl with a 5 s query timeout
// (one slow answer must not hold the whole report up), through the caller's HTTP client or a
// libcurl one of its own.

#include "core/common/http_client.h"
#include "core/config/config.h"
#include "core/telemetry/prometheus_client.h"

#include <chrono>
#include <memory>

namespace powerctl::setup {

class DoctorPrometheus {
 public:
  // `http` may be null (a libcurl client is made); otherwise it must outlive this.
  DoctorPrometheus(HttpClient* http, const config::PowerctlConfig& config)
      : owned_(http == nullptr ? MakeCurlHttpClient() : nullptr),
        client_(http == nullptr ? *owned_ : *http,
                telemetry::PrometheusOptions{config.telemetry.prometheus_url,
                                             std::chrono::seconds(5), nullptr}) {}

  const telemetry::PrometheusClient& client() const { return client_; }

 private:
  std::unique_ptr<HttpClient> owned_;
  telemetry::PrometheusClient client_;
};

}  // namespace powerctl::setup
