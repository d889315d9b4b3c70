#pragma once
// A scripted Prometheus for the calibrate and --from-prometheus tests: answers each PromQL
// with the JSON given for the first registered fragment it contains, and records queries.
// Header-only because tests/unit builds only *_test.cpp.

#include "core/telemetry/prometheus_client.h"
#include "tests/unit/telemetry_test_support.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace powerctl::calibrate_test {

inline std::string FormDecode(const std::string& text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size()) {
      out += static_cast<char>(std::stoi(text.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += text[i] == '+' ? ' ' : text[i];
    }
  }
  return out;
}

// One form field of a Prometheus client request ("query", "start", ...).
inline std::string Field(const HttpClientRequest& r, const std::string& name) {
  std::string form = "&" + FormDecode(r.body);
  std::size_t start = form.find("&" + name + "=");
  if (start == std::string::npos) return "";
  start += name.size() + 2;
  return form.substr(start, form.find('&', start) - start);
}

// Prometheus' text for a sample value: "NaN" where JSON has no number.
inline std::string ValueText(double value) {
  return std::isnan(value) ? "NaN" : nlohmann::json(value).dump();
}

// {"metric": labels, "value": [t, "v"]} for an instant vector.
inline nlohmann::json VectorSample(std::map<std::string, std::string> labels, double value,
                                   double at = 1700000000) {
  return {{"metric", labels}, {"value", {at, ValueText(value)}}};
}

// {"metric": labels, "values": [[t, "v"], ...]} for a range query.
inline nlohmann::json MatrixSeries(std::map<std::string, std::string> labels,
                                   const std::vector<std::pair<double, double>>& points) {
  nlohmann::json values = nlohmann::json::array();
  for (const auto& [t, v] : points) values.push_back({t, ValueText(v)});
  return {{"metric", labels}, {"values", values}};
}

inline std::string Envelope(const std::string& type, const nlohmann::json& result) {
  return nlohmann::json{{"status", "success"}, {"data", {{"resultType", type}, {"result", result}}}}
      .dump();
}

class FakePrometheus {
 public:
  FakePrometheus()
      : http_([this](const HttpClientRequest& r) -> Result<HttpClientResponse> {
          std::string query = Field(r, "query");
          std::lock_guard lock(mu_);
          queries_.push_back(query);
          for (const auto& [fragment, body] : answers_) {
            if (query.find(fragment) != std::string::npos) {
              return telemetry_test::Reply(200, body);
            }
          }
          return telemetry_test::Reply(
              200, Envelope(r.url.find("query_range") != std::string::npos ? "matrix" : "vector",
                            nlohmann::json::array()));
        }),
        client_(http_, telemetry::PrometheusOptions{"http://prom.test:9090"}) {}

  // Queries containing `fragment` get `result` (checked in registration order).
  void Vector(const std::string& fragment, nlohmann::json result) {
    answers_.emplace_back(fragment, Envelope("vector", std::move(result)));
  }
  void Matrix(const std::string& fragment, nlohmann::json result) {
    answers_.emplace_back(fragment, Envelope("matrix", std::move(result)));
  }
  void Fail(const std::string& fragment) {
    answers_.emplace_back(fragment, R"({"status":"error","errorType":"bad_data","error":"boom"})");
  }

  std::vector<std::string> queries() const {
    std::lock_guard lock(mu_);
    return queries_;
  }
  std::vector<HttpClientRequest> requests() const { return http_.requests(); }
  const telemetry::PrometheusClient& client() const { return client_; }

 private:
  std::vector<std::pair<std::string, std::string>> answers_;
  mutable std::mutex mu_;
  std::vector<std::string> queries_;
  telemetry_test::FakeHttp http_;
  telemetry::PrometheusClient client_;
};

}  // namespace powerctl::calibrate_test
