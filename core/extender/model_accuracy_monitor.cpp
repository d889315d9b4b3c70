// Predicted against measured watts, every refresh interval, published as gauges.

#include "core/extender/model_accuracy_monitor.h"

#include <utility>

namespace powerctl::extender {

ModelAccuracyMonitor::ModelAccuracyMonitor(ModelAccuracyDeps deps,
                                           server::MetricsRegistry& registry,
                                           std::chrono::milliseconds interval)
    : deps_(std::move(deps)),
      interval_(interval),
      predicted_(registry.Gauge("powerctl_model_predicted_watts",
                                "The model's power of each node now, at its measured CPU",
                                {"node"})),
      measured_(registry.Gauge("powerctl_model_measured_watts",
                               "Each node's measured power (telemetry.powerSource, mean over "
                               "telemetry.powerRateWindow)",
                               {"node"})),
      error_watts_(registry.Gauge("powerctl_model_error_watts",
                                  "Predicted minus measured watts per node (positive: the model "
                                  "reads high)",
                                  {"node"})),
      error_ratio_(registry.Gauge("powerctl_model_error_ratio",
                                  "|predicted - measured| / measured watts per node", {"node"})),
      mean_ratio_(registry.Gauge("powerctl_model_mean_absolute_error_ratio",
                                 "Mean of powerctl_model_error_ratio over the nodes compared "
                                 "(the mean absolute percentage error, as a fraction)")),
      mean_watts_(registry.Gauge("powerctl_model_mean_absolute_error_watts",
                                 "Mean |predicted - measured| watts over the nodes compared")),
      worst_(registry.Gauge("powerctl_model_worst_error_ratio",
                            "The largest powerctl_model_error_ratio, labelled with its node",
                            {"node"})),
      compared_(registry.Gauge("powerctl_model_nodes_compared",
                               "Nodes with both a prediction and a measured power")),
      failing_(registry.Gauge("powerctl_model_accuracy_failing",
                              "1 while the last measurement of node power failed")) {}

ModelAccuracyMonitor::~ModelAccuracyMonitor() {
  Stop();
}

void ModelAccuracyMonitor::RunOnce() {
  auto fail = [&](const std::string& why) {
    // The last pass's figures are not the model's accuracy now: none rather than stale ones
    // (powerctl_model_accuracy_failing says why they are gone).
    Publish(predict::ModelAccuracy{});
    failing_.Set(1);
    std::lock_guard lock(mu_);
    last_.reset();
    if (why != last_error_ && deps_.log) deps_.log->warn("model accuracy: {}", why);
    last_error_ = why;
  };
  Result<std::vector<telemetry::NodeInfo>> nodes = deps_.nodes();
  if (!nodes.ok()) return fail("listing nodes: " + nodes.error().message);
  auto measured = deps_.measure(*nodes);
  if (!measured.ok()) return fail(measured.error().message);
  std::vector<std::string> names;
  names.reserve(nodes->size());
  for (const telemetry::NodeInfo& node : *nodes) names.push_back(node.name);
  predict::ModelAccuracy accuracy = predict::CompareModel(deps_.predict(names), *measured);
  Publish(accuracy);
  failing_.Set(0);
  std::lock_guard lock(mu_);
  if (!last_error_.empty() && deps_.log) deps_.log->info("model accuracy: measuring again");
  last_error_.clear();
  last_ = std::move(accuracy);
}

void ModelAccuracyMonitor::Publish(const predict::ModelAccuracy& accuracy) {
  for (server::GaugeFamily* g : {&predicted_, &measured_, &error_watts_, &error_ratio_, &worst_}) {
    g->Clear();
  }
  for (const predict::NodeAccuracy& n : accuracy.nodes) {
    predicted_.Set({n.node}, n.predicted_watts);
    measured_.Set({n.node}, n.measured_watts);
    error_watts_.Set({n.node}, n.error_watts);
    error_ratio_.Set({n.node}, n.relative_error);
  }
  if (const predict::NodeAccuracy* worst = accuracy.Worst()) {
    worst_.Set({worst->node}, worst->relative_error);
  }
  // No node compared: no mean at all, rather than a zero that reads as a perfect model.
  mean_ratio_.Clear();
  mean_watts_.Clear();
  if (accuracy.mean_absolute_percentage_error) {
    mean_ratio_.Set(*accuracy.mean_absolute_percentage_error);
  }
  if (accuracy.mean_absolute_error_watts) mean_watts_.Set(*accuracy.mean_absolute_error_watts);
  compared_.Set(static_cast<double>(accuracy.nodes.size()));
}

void ModelAccuracyMonitor::Start() {
  if (thread_.joinable()) return;
  thread_ = std::thread([this] {
    std::unique_lock lock(mu_);
    while (!stopping_) {
      lock.unlock();
      RunOnce();
      lock.lock();
      wake_.wait_for(lock, interval_, [this] { return stopping_; });
    }
  });
}

void ModelAccuracyMonitor::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::optional<predict::ModelAccuracy> ModelAccuracyMonitor::Last() const {
  std::lock_guard lock(mu_);
  return last_;
}

}  // namespace powerctl::extender
