#include "core/extender/model_accuracy_monitor.h"

#include <gtest/gtest.h>

namespace powerctl::extender {
namespace {

using Measured = std::map<std::string, telemetry::MeasuredPower>;

struct Fixture {
  std::vector<std::string> nodes{"a", "b"};
  Result<Measured> measured = Measured{{"a", {200.0, ""}}, {"b", {200.0, ""}}};
  std::map<std::string, double> predicted{{"a", 210}, {"b", 260}};
  int measurements = 0;

  ModelAccuracyDeps Deps() {
    ModelAccuracyDeps deps;
    deps.nodes = [this]() -> Result<std::vector<telemetry::NodeInfo>> {
      std::vector<telemetry::NodeInfo> out;
      for (const auto& n : nodes) out.push_back(telemetry::NodeInfo{n, {}, {}, std::nullopt});
      return out;
    };
    deps.measure = [this](const std::vector<telemetry::NodeInfo>& asked) -> Result<Measured> {
      ++measurements;
      EXPECT_EQ(asked.size(), nodes.size());
      return measured;
    };
    deps.predict = [this](const std::vector<std::string>& names) {
      std::vector<predict::NodePower> out;
      for (const auto& n : names) {
        predict::NodePower p;
        p.node = n;
        if (predicted.count(n) != 0) p.watts_now = predicted[n];
        out.push_back(p);
      }
      return out;
    };
    return deps;
  }
};

double Gauge(server::MetricsRegistry& r, const std::string& name, server::LabelValues labels = {}) {
  return r
      .Gauge(name, "",
             labels.empty() ? std::vector<std::string>{} : std::vector<std::string>{"node"})
      .Value(labels);
}

TEST(ModelAccuracyMonitorTest, ExportsEachNodesErrorAndTheClusterSummary) {
  Fixture f;
  server::MetricsRegistry registry;
  ModelAccuracyMonitor monitor(f.Deps(), registry, std::chrono::seconds(15));
  monitor.RunOnce();
  EXPECT_EQ(f.measurements, 1);  // one query per pass, for every node
  EXPECT_DOUBLE_EQ(Gauge(registry, "powerctl_model_error_watts", {"b"}), 60);
  EXPECT_DOUBLE_EQ(Gauge(registry, "powerctl_model_error_ratio", {"b"}), 0.3);
  EXPECT_DOUBLE_EQ(Gauge(registry, "powerctl_model_error_ratio", {"a"}), 0.05);
  EXPECT_DOUBLE_EQ(Gauge(registry, "powerctl_model_measured_watts", {"a"}), 200);
  EXPECT_DOUBLE_EQ(Gauge(registry, "powerctl_model_predicted_watts", {"a"}), 210);
  EXPECT_DOUBLE_EQ(Gauge(registry, "powerctl_model_mean_absolute_error_ratio"), 0.175);
  EXPECT_DOUBLE_EQ(Gauge(registry, "powerctl_model_mean_absolute_error_watts"), 35);
  EXPECT_DOUBLE_EQ(Gauge(registry, "powerctl_model_worst_error_ratio", {"b"}), 0.3);
  EXPECT_DOUBLE_EQ(Gauge(registry, "powerctl_model_nodes_compared"), 2);
  EXPECT_DOUBLE_EQ(Gauge(registry, "powerctl_model_accuracy_failing"), 0);
  const std::string text = registry.Render();
  EXPECT_NE(text.find("powerctl_model_error_ratio{node=\"b\"} 0.3"), std::string::npos) << text;
  ASSERT_TRUE(monitor.Last().has_value());
  EXPECT_EQ(monitor.Last()->Worst()->node, "b");
}

TEST(ModelAccuracyMonitorTest, ANodeThatLostItsMeasurementLosesItsSeries) {
  Fixture f;
  server::MetricsRegistry registry;
  ModelAccuracyMonitor monitor(f.Deps(), registry, std::chrono::seconds(15));
  monitor.RunOnce();
  f.measured = Measured{{"a", {200.0, ""}}, {"b", {std::nullopt, "no series"}}};
  monitor.RunOnce();
  const std::string text = registry.Render();
  EXPECT_EQ(text.find("node=\"b\""), std::string::npos) << text;
  EXPECT_NE(text.find("powerctl_model_worst_error_ratio{node=\"a\"}"), std::string::npos);
  EXPECT_DOUBLE_EQ(Gauge(registry, "powerctl_model_nodes_compared"), 1);
}

TEST(ModelAccuracyMonitorTest, AFailedMeasurementIsFlaggedAndForgetsTheLastComparison) {
  Fixture f;
  server::MetricsRegistry registry;
  ModelAccuracyMonitor monitor(f.Deps(), registry, std::chrono::seconds(15));
  monitor.RunOnce();
  f.measured = MakeError(ErrorCode::kNetwork, "Prometheus at http://p: connection refused");
  monitor.RunOnce();
  EXPECT_DOUBLE_EQ(Gauge(registry, "powerctl_model_accuracy_failing"), 1);
  EXPECT_FALSE(monitor.Last().has_value());
  // The last pass's per-node figures and means are gone, not left standing as if current.
  const std::string text = registry.Render();
  for (const char* stale :
       {"powerctl_model_error_ratio{", "powerctl_model_predicted_watts{",
        "powerctl_model_worst_error_ratio{", "powerctl_model_mean_absolute_error_ratio "}) {
    EXPECT_EQ(text.find(stale), std::string::npos) << stale << "\n" << text;
  }
  EXPECT_DOUBLE_EQ(Gauge(registry, "powerctl_model_nodes_compared"), 0);
}

TEST(ModelAccuracyMonitorTest, TheLoopMeasuresUntilStopped) {
  Fixture f;
  server::MetricsRegistry registry;
  ModelAccuracyMonitor monitor(f.Deps(), registry, std::chrono::milliseconds(1));
  monitor.Start();
  for (int i = 0; i < 2000 && !monitor.Last(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  monitor.Stop();
  EXPECT_TRUE(monitor.Last().has_value());
  const int seen = f.measurements;
  EXPECT_GE(seen, 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(f.measurements, seen);
}

}  // namespace
}  // namespace powerctl::extender
