#pragma once
// What schedule-server writes to the cluster, done by the replica holding the Lease only
// (cluster/lease.h): node labels of TASPolicy deschedule (`<policy>=violating`) and labeling
// (`telemetry.aware.scheduling.<policy>/<key>`) strategies, and the touch of waiting pod-group
// members once their group is complete, so kube-scheduler 1.20 requeues them at once instead
// of at its unschedulable-queue flush (kubernetes #122019).
//
// Decisions come from the pure functions of core/scoring; this class only reads the cluster
// cache's snapshot, asks the policy metric source, and patches. Labels are written as merge
// patches of exactly the keys that change, so labels owned by others are never touched.
//
// Timing: labels every `label_interval` (telemetry.refreshInterval), pod groups whenever a pod
// of a group changes in the cache (which sees new pods by watch within milliseconds), polled
// at most `change_poll` apart so Stop() is noticed quickly (and a failed touch is retried).
// Other changes, such as the bind of every scheduled pod, do not wake the writer.

#include "core/cluster/node_cache.h"
#include "core/extender/pod_group_touch.h"
#include "core/kube/client.h"
#include "core/scoring/policy_metrics.h"
#include "core/server/metrics_registry.h"

#include <spdlog/logger.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>

namespace powerctl::extender {

struct ClusterWriterDeps {
  kube::Client* client = nullptr;                   // required; used from the writer thread
  scoring::MetricSource* policy_metrics = nullptr;  // null: label strategies do nothing
  std::function<std::shared_ptr<const cluster::ClusterSnapshot>()> snapshot;  // required
  // Whether the TASPolicy watch is healthy; labels of policies that are gone are removed only
  // then (a missing CRD or a failing watch must not look like "every policy was deleted").
  std::function<bool()> policies_synced = [] { return true; };
  // Blocks until the snapshot's groups_version differs from `version` or `timeout` passes.
  std::function<void(std::uint64_t version, std::chrono::milliseconds timeout)> wait_for_change;
  std::function<bool()> is_leader = [] { return true; };
  std::function<std::chrono::system_clock::time_point()> wall_now = [] {
    return std::chrono::system_clock::now();
  };
  std::shared_ptr<spdlog::logger> log;  // may be null
};

struct ClusterWriterOptions {
  std::chrono::milliseconds label_interval{15000};
  std::chrono::milliseconds change_poll{1000};
};

struct LabelPassResult {
  int changes = 0;  // label keys changed
  int patched = 0;  // nodes patched
  int failed = 0;   // node patches that failed
};

class ClusterWriter {
 public:
  // `metrics` must outlive the writer; it registers its counters there.
  ClusterWriter(ClusterWriterDeps deps, server::MetricsRegistry& metrics,
                ClusterWriterOptions options);
  ~ClusterWriter();
  ClusterWriter(const ClusterWriter&) = delete;
  ClusterWriter& operator=(const ClusterWriter&) = delete;

  // One pass of each job, on the caller's thread (the loop calls them; so can tests).
  LabelPassResult SyncLabels(const cluster::ClusterSnapshot& snapshot);
  TouchResult TouchCompleteGroups(const cluster::ClusterSnapshot& snapshot);

  void Start();  // the loop on its own thread; once
  void Stop();   // idempotent; returns once the current pass or wait (<= change_poll) ends

 private:
  void Run();

  ClusterWriterDeps deps_;
  ClusterWriterOptions options_;
  server::CounterFamily& label_writes_;
  server::CounterFamily& touches_;
  std::set<std::string> deschedule_names_;      // seen since start, for cleanup
  std::map<std::string, std::string> touched_;  // pod key -> annotation written
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace powerctl::extender
