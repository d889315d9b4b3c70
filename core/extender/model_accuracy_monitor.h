#pragma once
// The model checked against measured power, continuously (telemetry.modelAccuracy): every
// refresh interval, on a thread of its own and never on the scoring path, one Prometheus
// query for every node's measured power (telemetry.powerSource over powerRateWindow, series
// mapped to nodes as the CPU sources map theirs), each node's prediction now from the same
// caches the scores read, and the comparison (predict/model_accuracy.h) published on /metrics:
//   powerctl_model_predicted_watts{node}, powerctl_model_measured_watts{node}
//   powerctl_model_error_watts{node}        predicted - measured
//   powerctl_model_error_ratio{node}        |predicted - measured| / measured
//   powerctl_model_mean_absolute_error_ratio, powerctl_model_mean_absolute_error_watts
//   powerctl_model_worst_error_ratio{node}  the node furthest off (one series)
//   powerctl_model_nodes_compared           nodes with both a prediction and a measurement
//   powerctl_model_accuracy_failing         1 while the last measurement failed
// Per-node series are replaced as a whole on every pass, so a node that left (or lost its
// measurement) does not keep its last error.

#include "core/common/result.h"
#include "core/predict/model_accuracy.h"
#include "core/server/metrics_registry.h"
#include "core/telemetry/node_mapping.h"
#include "core/telemetry/power_sources.h"

#include <spdlog/logger.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace powerctl::extender {

struct ModelAccuracyDeps {
  // The nodes to compare (the cluster cache's).
  std::function<Result<std::vector<telemetry::NodeInfo>>()> nodes;
  // Their measured power: one query (telemetry::FetchMeasuredPower in production).
  std::function<Result<std::map<std::string, telemetry::MeasuredPower>>(
      const std::vector<telemetry::NodeInfo>&)>
      measure;
  // Their predicted power now (ExtenderService::PredictNow in production).
  std::function<std::vector<predict::NodePower>(const std::vector<std::string>&)> predict;
  std::shared_ptr<spdlog::logger> log;
};

class ModelAccuracyMonitor {
 public:
  // `registry` must outlive the monitor.
  ModelAccuracyMonitor(ModelAccuracyDeps deps, server::MetricsRegistry& registry,
                       std::chrono::milliseconds interval);
  ~ModelAccuracyMonitor();

  // One pass on the caller's thread (the loop calls it; so can tests).
  void RunOnce();
  void Start();  // the loop on its own thread; once
  void Stop();   // idempotent; waits for the current pass

  // The last comparison, nullopt before the first or after a failed measurement.
  std::optional<predict::ModelAccuracy> Last() const;

 private:
  void Publish(const predict::ModelAccuracy& accuracy);

  ModelAccuracyDeps deps_;
  std::chrono::milliseconds interval_;
  server::GaugeFamily& predicted_;
  server::GaugeFamily& measured_;
  server::GaugeFamily& error_watts_;
  server::GaugeFamily& error_ratio_;
  server::GaugeFamily& mean_ratio_;
  server::GaugeFamily& mean_watts_;
  server::GaugeFamily& worst_;
  server::GaugeFamily& compared_;
  server::GaugeFamily& failing_;
  mutable std::mutex mu_;  // last_, stopping_
  std::condition_variable wake_;
  bool stopping_ = false;
  std::optional<predict::ModelAccuracy> last_;
  std::string last_error_;  // logged once until it changes
  std::thread thread_;
};

}  // namespace powerctl::extender
