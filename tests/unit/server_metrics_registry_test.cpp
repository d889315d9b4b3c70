#include "core/server/metrics_registry.h"

#include <gtest/gtest.h>

#include <limits>
#include <stdexcept>
#include <thread>
#include <vector>

namespace powerctl::server {
namespace {

TEST(MetricsRegistryTest, RendersCountersWithLabelsInTextFormat) {
  MetricsRegistry registry;
  auto& requests = registry.Counter("http_requests_total", "Requests\nby code", {"path", "code"});
  requests.Inc({"/filter", "200"});
  requests.Inc({"/filter", "200"}, 2);
  requests.Inc({"/filter", "500"});
  requests.Inc({"/filter", "500"}, -5);  // counters never go down
  EXPECT_EQ(requests.Value({"/filter", "200"}), 3);
  EXPECT_EQ(registry.Render(),
            "# HELP http_requests_total Requests\\nby code\n"
            "# TYPE http_requests_total counter\n"
            "http_requests_total{path=\"/filter\",code=\"200\"} 3\n"
            "http_requests_total{path=\"/filter\",code=\"500\"} 1\n");
}

TEST(MetricsRegistryTest, EscapesLabelValuesAndFormatsSpecialValues) {
  MetricsRegistry registry;
  auto& gauge = registry.Gauge("node_watts", "Watts", {"node"});
  gauge.Set({"a\"b\\c\nd"}, 1.5);
  gauge.Set({"inf"}, std::numeric_limits<double>::infinity());
  gauge.Set({"nan"}, std::numeric_limits<double>::quiet_NaN());
  std::string text = registry.Render();
  EXPECT_NE(text.find("node_watts{node=\"a\\\"b\\\\c\\nd\"} 1.5\n"), std::string::npos) << text;
  EXPECT_NE(text.find("node_watts{node=\"inf\"} +Inf\n"), std::string::npos);
  EXPECT_NE(text.find("node_watts{node=\"nan\"} NaN\n"), std::string::npos);
}

TEST(MetricsRegistryTest, GaugesSetAddAndClear) {
  MetricsRegistry registry;
  auto& up = registry.Gauge("up", "Up");
  up.Set(1);
  auto& inflight = registry.Gauge("inflight", "In flight", {"server"});
  inflight.Add({"main"}, 2);
  inflight.Add({"main"}, -1);
  EXPECT_EQ(inflight.Value({"main"}), 1);
  EXPECT_NE(registry.Render().find("up 1\n"), std::string::npos);
  inflight.Clear();
  std::string text = registry.Render();
  EXPECT_EQ(text.find("inflight{"), std::string::npos);
  EXPECT_NE(text.find("# TYPE inflight gauge\n"), std::string::npos);  // family stays
}

TEST(MetricsRegistryTest, HistogramBucketsAreCumulativeWithInfSumAndCount) {
  MetricsRegistry registry;
  auto& h = registry.Histogram("latency_seconds", "Latency", {0.25, 0.5, 1}, {"path"});
  for (double v : {0.125, 0.25, 0.375, 0.75, 3.0}) h.Observe({"/f"}, v);
  EXPECT_EQ(h.Count({"/f"}), 5u);
  EXPECT_EQ(registry.Render(),
            "# HELP latency_seconds Latency\n"
            "# TYPE latency_seconds histogram\n"
            "latency_seconds_bucket{path=\"/f\",le=\"0.25\"} 2\n"
            "latency_seconds_bucket{path=\"/f\",le=\"0.5\"} 3\n"
            "latency_seconds_bucket{path=\"/f\",le=\"1\"} 4\n"
            "latency_seconds_bucket{path=\"/f\",le=\"+Inf\"} 5\n"
            "latency_seconds_sum{path=\"/f\"} 4.5\n"
            "latency_seconds_count{path=\"/f\"} 5\n");
}

TEST(MetricsRegistryTest, RegisteringAgainReturnsTheSameFamily) {
  MetricsRegistry registry;
  auto& a = registry.Counter("c_total", "C");
  auto& b = registry.Counter("c_total", "C");
  EXPECT_EQ(&a, &b);
  EXPECT_THROW(registry.Gauge("c_total", "C"), std::invalid_argument);
  EXPECT_THROW(a.Inc({"unexpected"}), std::invalid_argument);
  EXPECT_THROW(registry.Histogram("h", "H", {1, 0.5}), std::invalid_argument);
}

TEST(MetricsRegistryTest, CountsFromManyThreads) {
  MetricsRegistry registry;
  auto& c = registry.Counter("hits_total", "Hits", {"t"});
  auto& h = registry.Histogram("obs", "Obs", {1});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) {
        c.Inc({"x"});
        h.Observe(0.5);
        if (i % 1000 == 0) (void)registry.Render();
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(c.Value({"x"}), 40000);
  EXPECT_EQ(h.Count(), 40000u);
}

}  // namespace
}  // namespace powerctl::server
