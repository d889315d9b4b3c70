#include "core/server/metrics_registry.h"
#include "core/telemetry/exposition.h"

#include <gtest/gtest.h>

#include <cmath>
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
  // prometheus-cpp spells NaN "Nan"; Prometheus reads floats with Go's ParseFloat, which
  // ignores the case of NaN and Inf.
  EXPECT_NE(text.find("node_watts{node=\"nan\"} Nan\n"), std::string::npos);
}

TEST(MetricsRegistryTest, RenderIsTextFormatThatParsesBackToWhatWasRecorded) {
  MetricsRegistry registry;
  registry.Counter("requests_total", "Requests\nby \\ code", {"path", "code"})
      .Inc({"/a\"b", "200"}, 2);
  registry.Gauge("level", "Level", {"source"}).Set({"cpu"}, std::nan(""));
  registry.Histogram("seconds", "Seconds", {0.5, 1}).Observe(0.75);
  auto parsed = telemetry::ParseExposition(registry.Render());
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_EQ(parsed->help.at("requests_total"), "Requests\nby \\ code");
  EXPECT_EQ(parsed->types.at("requests_total"), "counter");
  EXPECT_EQ(parsed->types.at("seconds"), "histogram");
  auto requests = telemetry::FindSamples(*parsed, "requests_total", {{"path", "/a\"b"}});
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0]->value, 2);
  auto level = telemetry::FindSamples(*parsed, "level", {{"source", "cpu"}});
  ASSERT_EQ(level.size(), 1u);
  EXPECT_TRUE(std::isnan(level[0]->value));
  auto bucket = telemetry::FindSamples(*parsed, "seconds_bucket", {{"le", "1"}});
  ASSERT_EQ(bucket.size(), 1u);
  EXPECT_EQ(bucket[0]->value, 1);
}

TEST(MetricsRegistryTest, LabelsInDeclaredOrderAndSeriesSortedByValues) {
  MetricsRegistry registry;
  auto& c = registry.Counter("c_total", "C", {"zone", "code"});
  for (const char* zone : {"z9", "z1", "z5", "z3"}) c.Inc({zone, "200"});
  c.Inc({"z1", "100"});
  EXPECT_EQ(registry.Render(),
            "# HELP c_total C\n"
            "# TYPE c_total counter\n"
            "c_total{zone=\"z1\",code=\"100\"} 1\n"
            "c_total{zone=\"z1\",code=\"200\"} 1\n"
            "c_total{zone=\"z3\",code=\"200\"} 1\n"
            "c_total{zone=\"z5\",code=\"200\"} 1\n"
            "c_total{zone=\"z9\",code=\"200\"} 1\n");
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
  inflight.Set({"old"}, 5);
  inflight.Clear();
  EXPECT_EQ(inflight.Value({"main"}), 0);
  EXPECT_EQ(registry.Render().find("inflight"), std::string::npos);  // no series: left out
  inflight.Set({"new"}, 3);
  std::string text = registry.Render();
  EXPECT_NE(text.find("# TYPE inflight gauge\ninflight{server=\"new\"} 3\n"), std::string::npos)
      << text;
  EXPECT_EQ(text.find("old"), std::string::npos);
}

TEST(MetricsRegistryTest, HistogramBucketsAreCumulativeWithInfSumAndCount) {
  MetricsRegistry registry;
  auto& h = registry.Histogram("latency_seconds", "Latency", {0.25, 0.5, 1}, {"path"});
  for (double v : {0.125, 0.25, 0.375, 0.75, 3.0}) h.Observe({"/f"}, v);
  EXPECT_EQ(h.Count({"/f"}), 5u);
  EXPECT_EQ(registry.Render(),
            "# HELP latency_seconds Latency\n"
            "# TYPE latency_seconds histogram\n"
            "latency_seconds_count{path=\"/f\"} 5\n"
            "latency_seconds_sum{path=\"/f\"} 4.5\n"
            "latency_seconds_bucket{path=\"/f\",le=\"0.25\"} 2\n"
            "latency_seconds_bucket{path=\"/f\",le=\"0.5\"} 3\n"
            "latency_seconds_bucket{path=\"/f\",le=\"1\"} 4\n"
            "latency_seconds_bucket{path=\"/f\",le=\"+Inf\"} 5\n");
}

TEST(MetricsRegistryTest, RegisteringAgainReturnsTheSameFamily) {
  MetricsRegistry registry;
  auto& a = registry.Counter("c_total", "C");
  auto& b = registry.Counter("c_total", "C");
  EXPECT_EQ(&a, &b);
  EXPECT_THROW(registry.Gauge("c_total", "C"), std::invalid_argument);
  EXPECT_THROW(a.Inc({"unexpected"}), std::invalid_argument);
  EXPECT_THROW(registry.Histogram("h", "H", {1, 0.5}), std::invalid_argument);
  EXPECT_THROW(registry.Histogram("h", "H", {1, 1}), std::invalid_argument);
  // A rejected registration leaves nothing behind: the name is still free.
  EXPECT_THROW(registry.Counter("x_total", "X", {"bad-name"}), std::invalid_argument);
  EXPECT_NO_THROW(registry.Gauge("x_total", "X").Set(1));
  EXPECT_THROW(registry.Counter("bad-name", "X"), std::invalid_argument);
}

TEST(MetricsRegistryTest, CountsFromManyThreads) {
  MetricsRegistry registry;
  auto& c = registry.Counter("hits_total", "Hits", {"t"});
  auto& h = registry.Histogram("obs", "Obs", {1});
  auto& g = registry.Gauge("republished", "Cleared and set again", {"node"});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10000; ++i) {
        c.Inc({"x"});
        h.Observe(0.5);
        g.Set({std::to_string(i % 7)}, t);
        if (i % 1000 == 0) (void)registry.Render();
        if (i % 100 == 0) g.Clear();  // while others set and render
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(c.Value({"x"}), 40000);
  EXPECT_EQ(h.Count(), 40000u);
}

}  // namespace
}  // namespace powerctl::server
