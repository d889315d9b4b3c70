#pragma once
// Node readings for scoring: the CPU and temperature sources behind TTL caches, so the
// scoring path reads the last snapshot (staleness judged at read time) while refreshes
// run in the background: one at a time per source, and one source's after the other's
// unless the other's takes long (see TelemetryServiceOptions::fetch_queue_limit).

#include "core/common/result.h"
#include "core/telemetry/node_mapping.h"
#include "core/telemetry/readings.h"
#include "core/telemetry/sources.h"
#include "core/telemetry/ttl_cache.h"

#include <spdlog/logger.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace powerctl::telemetry {

// The cluster's nodes (the server passes its informer's view, the CLI a LIST).
using NodeLister = std::function<Result<std::vector<NodeInfo>>()>;

struct TelemetryServiceOptions {
  std::chrono::milliseconds max_age{120000};          // telemetry.maxAge
  std::chrono::milliseconds refresh_interval{15000};  // telemetry.refreshInterval
  // How long a fetch waits for the other source's to finish before it runs beside it.
  // Waiting halves a refresh's peak memory with Prometheus at 5,000 nodes (each fetch holds
  // the node list and a response of megabytes); the bound keeps a slow source (ipmi_exporter
  // scraping every node, a hanging Prometheus) from making the other's readings stale.
  std::chrono::milliseconds fetch_queue_limit{5000};
  TimeBase time;
  std::shared_ptr<spdlog::logger> log;
};

enum class Wait {
  kIfEmpty,  // wait for the first fetch of a source (CLI commands)
  kNever,    // answer from what is cached; start a fetch if nothing is (scoring path)
};

// One fetch of a source: each node it was asked about (with its capacity) and what it found,
// in one vector sorted by node name. A map per field was twice the memory at 5,000 nodes.
template <typename T>
struct SourceSnapshot {
  struct Entry {
    std::string node;
    bool listed = false;             // in the node list the fetch was given
    std::optional<double> capacity;  // cores, from the Node
    std::optional<T> reading;        // nullopt: the source said nothing of the node
  };
  std::vector<Entry> nodes;

  const Entry* Find(std::string_view name) const {
    auto it = std::lower_bound(nodes.begin(), nodes.end(), name,
                               [](const Entry& e, std::string_view n) { return e.node < n; });
    return it != nodes.end() && it->node == name ? &*it : nullptr;
  }
};

// The cached snapshots as of one moment, read node by node without copying them (the
// scoring path). Views with equal Generation() read the same data; a reading can still go
// stale as time passes, which StaleAt() tells.
class TelemetryView {
 public:
  // The node's reading, each value checked against max_age at the view's `now`.
  NodeReading For(const std::string& name) const;
  // When a usable value of `reading` will become stale (time_point::max() when none is usable).
  SteadyTime StaleAt(const NodeReading& reading) const;
  // Identifies the snapshots read (and whether their sources currently fail).
  std::uint64_t Generation() const { return generation_; }
  SteadyTime Now() const { return now_; }

 private:
  friend class TelemetryService;
  std::shared_ptr<const SourceSnapshot<Reading>> cpu_;
  std::shared_ptr<const SourceSnapshot<Temperatures>> temperatures_;
  SharedText cpu_problem_;            // why there is no CPU snapshot ("" when there is one)
  SharedText temperature_problem_;    // likewise for temperatures
  std::optional<Error> cpu_failure_;  // why there is no CPU snapshot
  std::optional<Error> cpu_error_, temperature_error_;  // the last refresh's failure
  SteadyTime now_{};
  std::chrono::milliseconds max_age_{0};
  std::uint64_t generation_ = 0;
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

  // The same data as Readings(), for reading node by node.
  TelemetryView View(Wait wait = Wait::kNever);

  // How fresh each source's snapshot is, for the server's metrics.
  struct SourceStatus {
    std::string source;                            // "cpu" or "temperature"
    std::optional<std::chrono::milliseconds> age;  // of the snapshot; nullopt before the first
    bool failing = false;                          // the last refresh failed
    std::string error;                             // why, when failing
  };
  std::vector<SourceStatus> Sources() const;

  // Starts background fetches of both sources (server start-up).
  void Warm();

 private:
  template <typename T>
  using Snapshot = SourceSnapshot<T>;
  using CpuSnapshot = std::shared_ptr<const Snapshot<Reading>>;
  using TemperatureSnapshot = std::shared_ptr<const Snapshot<Temperatures>>;

  template <typename T, typename Source>
  Result<std::shared_ptr<const Snapshot<T>>> FetchSnapshot(Source& source);

  CpuSource& cpu_;
  TemperatureSource& temperature_;
  NodeLister nodes_;
  // Held by the running fetch; the other source's waits for it up to fetch_queue_limit
  // (both fall due together).
  std::timed_mutex fetch_mu_;
  TelemetryServiceOptions options_;
  TtlCache<int, CpuSnapshot> cpu_cache_;
  TtlCache<int, TemperatureSnapshot> temperature_cache_;
};

}  // namespace powerctl::telemetry
