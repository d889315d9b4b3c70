#pragma once
// The lb-agent's sync: from the annotated Services (handed in by the runner, which follows
// them by watch) to weights, to the kernel through a Balancer, changing the kernel only when
// the result differs from what is in effect. Also what /status and /metrics say about it.
// Thread-safe: Sync runs on the runner's loop, Status/metrics on the ops server's threads.

#include "core/common/result.h"
#include "core/config/config.h"
#include "core/lb/agent_plan.h"
#include "core/lb/balancer.h"
#include "core/report/power_report.h"
#include "core/server/metrics_registry.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace powerctl::lb {

enum class SyncResult {
  kProgrammed,  // the kernel now has the new weights (or none, when nothing is balanced)
  kUnchanged,   // same weights as in effect: nothing written
  kFailed,      // programming failed: nothing of ours is in effect; retried at the next sync
};
const char* SyncResultName(SyncResult result);  // "programmed", "unchanged", "failed"

struct AgentDependencies {
  report::PredictDependencies predict;  // the API client, HTTP for telemetry/models, clock
  Balancer* balancer = nullptr;
  server::MetricsRegistry* metrics = nullptr;  // null: a registry of the agent's own
};

class LbAgent {
 public:
  LbAgent(std::string node, config::PowerctlConfig config, AgentDependencies deps);

  // `services`: every Service carrying the powerctl.io/load-balancing annotation.
  SyncResult Sync(const std::vector<nlohmann::json>& services);
  // Undoes everything the balancer did (the agent's exit).
  Status Shutdown();

  // The LbAgentStatus document served on /status (and read by `powerctl doctor`).
  nlohmann::json StatusJson() const;
  bool synced() const;
  std::string last_error() const;  // "" when the last programming succeeded
  server::MetricsRegistry& metrics() { return *metrics_; }

 private:
  std::vector<PlannedService> Plan(const std::vector<nlohmann::json>& services) const;
  void Publish(const std::vector<PlannedService>& plan, SyncResult result, double seconds);

  std::string node_;
  config::PowerctlConfig config_;
  AgentDependencies deps_;
  std::unique_ptr<server::MetricsRegistry> own_metrics_;
  server::MetricsRegistry* metrics_;

  mutable std::mutex mu_;
  std::optional<std::vector<BalancedService>> in_effect_;  // nullopt: unknown or failed
  std::vector<PlannedService> plan_;
  std::vector<SkippedPort> balancer_skipped_;
  std::string last_error_;
  std::optional<std::chrono::system_clock::time_point> last_sync_;
  std::uint64_t syncs_ = 0;
};

}  // namespace powerctl::lb
