#pragma once
// The extender's decisions for one pod: filter (pod-group gate, dontschedule policies) and
// prioritize (power delta, scheduleonmetric policy, real usage, combined under the configured
// weights). Inputs are snapshots — the cluster cache, cached telemetry, a batched predictor —
// so a call never waits on anything but the model's deadline. Every node's verdict, components
// and reasons are returned as a Decision, which the server answers from, records for `explain`
// and shows on its ops port; `explain` and `score` will call the same functions.

#include "core/cluster/node_cache.h"
#include "core/common/clock.h"
#include "core/common/worker_pool.h"
#include "core/config/config.h"
#include "core/predict/predictor.h"
#include "core/scoring/decision.h"
#include "core/scoring/policy_metrics.h"
#include "core/scoring/prepared_nodes.h"
#include "core/telemetry/telemetry_service.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace powerctl::scoring {

struct SchedulingDeps {
  const config::PowerctlConfig* config = nullptr;  // required
  // Telemetry readings; null means power is unknown for every node.
  telemetry::TelemetryService* telemetry = nullptr;
  predict::Predictor* predictor = nullptr;  // required for power scores
  std::chrono::milliseconds deadline{1000};
  MetricSource* policy_metrics = nullptr;  // null: policies see every metric as missing
  // The cluster cache's view; may return null (no cluster: answer from what requests carry).
  std::function<std::shared_ptr<const cluster::ClusterSnapshot>()> snapshot;
  Clock clock;
  // Threads one prioritize may use for its per-node work on large candidate lists; 0: the
  // machine's cores, at most 4. (kube-scheduler 1.20 calls an extender once per pod, one pod
  // at a time, so a large request's latency is the scheduler's throughput.)
  std::size_t workers = 0;
  std::function<std::chrono::system_clock::time_point()> wall_now = [] {
    return std::chrono::system_clock::now();
  };
};

// A node's CPU is its measured usage plus the requests of pods not yet in the usage metrics
// (node_cpu.h), for the power and the real-usage scores alike.

// What a prioritize did, for the server's metrics.
struct PrioritizeStats {
  std::size_t predicted = 0;      // nodes with a power prediction
  std::size_t unknown = 0;        // nodes without one (they got the unknown score)
  std::size_t overcommitted = 0;  // nodes the pod's CPU would overcommit
  std::size_t prepared = 0;       // nodes whose power inputs had to be prepared
  std::size_t reused = 0;         // nodes whose prepared inputs were reused
};

class SchedulingCore {
 public:
  explicit SchedulingCore(SchedulingDeps deps);

  // `nodes`: the candidates in request order. `node_items`: the Node objects when the
  // scheduler sent full Nodes (an empty array otherwise); used for nodes the cache lacks.
  Decision Filter(const nlohmann::json& pod, const std::vector<std::string>& nodes,
                  const nlohmann::json& node_items) const;
  // Takes `nodes` by value: the names move into the decision (a 5,000-node call would
  // otherwise copy them all, and most real node names do not fit std::string's inline buffer).
  Decision Prioritize(const nlohmann::json& pod, std::vector<std::string> nodes,
                      const nlohmann::json& node_items, PrioritizeStats* stats = nullptr) const;

 private:
  SchedulingDeps deps_;
  // Shared by copies of this core.
  std::shared_ptr<PreparedNodeCache> prepared_;
  std::shared_ptr<WorkerPool> pool_;  // deps_.workers - 1 helper threads
};

}  // namespace powerctl::scoring
