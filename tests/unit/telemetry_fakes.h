#pragma once
// In-memory telemetry sources for tests and benchmarks that need a TelemetryService but not
// the network: CPU in use per node from a function of the node's index, no temperatures.

#include "core/telemetry/sources.h"

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace powerctl::testsupport {

class StaticCpuSource : public telemetry::CpuSource {
 public:
  // Cores in use of the i-th node of each fetch.
  explicit StaticCpuSource(std::function<double(std::size_t)> cores) : cores_(std::move(cores)) {}
  Result<std::map<std::string, telemetry::Reading>> Fetch(
      const std::vector<telemetry::NodeInfo>& nodes) override {
    std::map<std::string, telemetry::Reading> out;
    auto now = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < nodes.size(); ++i)
      out[nodes[i].name] = telemetry::CpuReading(cores_(i), now, "test");
    return out;
  }
  std::string Describe() const override { return "test"; }

 private:
  std::function<double(std::size_t)> cores_;
};

class NoTemperatureSource : public telemetry::TemperatureSource {
 public:
  Result<std::map<std::string, telemetry::Temperatures>> Fetch(
      const std::vector<telemetry::NodeInfo>&) override {
    return std::map<std::string, telemetry::Temperatures>{};
  }
  std::string Describe() const override { return "none"; }
};

}  // namespace powerctl::testsupport
