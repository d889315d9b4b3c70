#pragma once
// Node readings for scoring: the CPU and temperature sources behind TTL caches, so the
// scoring path reads the last snapshot (staleness judged at read time) while refreshes
// run in the background, one at a time per source.

#include "core/common/result.h"
#include "core/telemetry/node_mapping.h"
#include "core/telemetry/readings.h"
#include "core/telemetry/sources.h"
#include "core/telemetry/ttl_cache.h"

#include <spdlog/logger.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace powerctl::telemetry {

// The cluster's nodes (the server passes its informer's view, the CLI a LIST).
using NodeLister = std::function<Result<std::vector<NodeInfo>>()>;

struct TelemetryServiceOptions {
  std::chrono::milliseconds max_age{120000};          // telemetry.maxAge
  std::chrono::milliseconds refresh_interval{15000};  // telemetry.refreshInterval
  TimeBase time;
  std::shared_ptr<spdlog::logger> log;
};

enum class Wait {
  kIfEmpty,  // wait for the first fetch of a source (CLI commands)
  kNever,    // answer from what is cached; start a fetch if nothing is (scoring path)
};

class TelemetryService {
 public:
  // The sources must outlive the service.
  TelemetryService(CpuSource& cpu, TemperatureSource& temperature, NodeLister nodes,
                   TelemetryServiceOptions options);

  // A reading for each node of `only`, or (when empty) of the latest node list, each value
  // checked against max_age now. With kNever, before the first fetch the readings are
  // missing with "not fetched yet". An error only when `only` is empty and no node list is
  // known (e.g. listing nodes failed).
  Result<std::map<std::string, NodeReading>> Readings(Wait wait = Wait::kNever,
                                                      const std::vector<std::string>& only = {});

  // Starts background fetches of both sources (server start-up).
  void Warm();

 private:
  template <typename T>
  struct Snapshot {
    std::vector<NodeInfo> nodes;
    std::map<std::string, T> readings;
  };
  using CpuSnapshot = std::shared_ptr<const Snapshot<Reading>>;
  using TemperatureSnapshot = std::shared_ptr<const Snapshot<Temperatures>>;

  template <typename T, typename Source>
  Result<std::shared_ptr<const Snapshot<T>>> FetchSnapshot(Source& source);

  CpuSource& cpu_;
  TemperatureSource& temperature_;
  NodeLister nodes_;
  TelemetryServiceOptions options_;
  TtlCache<int, CpuSnapshot> cpu_cache_;
  TtlCache<int, TemperatureSnapshot> temperature_cache_;
};

}  // namespace powerctl::telemetry
