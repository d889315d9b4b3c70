// The cost of powerctl's Prometheus metrics (core/server/metrics_registry.h): what the request
// path pays per update (a counter increment and a histogram observation on a series that
// exists, as every request after the first does) and what one scrape of /metrics costs.
//
//   build/tests/bench/powerctl_bench --benchmark_filter='Metrics'
//
// The registry mirrors a schedule-server's: 30 families, most with labels, about 300 series
// (HTTP requests by server, method, route and code; latency histograms by verb and route;
// per-result counters; per-source and per-state gauges).

#include "core/server/metrics_registry.h"

#include <benchmark/benchmark.h>

#include <string>
#include <vector>

namespace powerctl::server {
namespace {

const std::vector<double> kBuckets = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                      0.1,   0.25,   0.5,   1,    2.5,   5};
const std::vector<std::string> kServers = {"scheduler", "ops"};
const std::vector<std::string> kMethods = {"GET", "POST"};
const std::vector<std::string> kPaths = {
    "/scheduler/filter", "/scheduler/prioritize", "/healthz", "/readyz", "/metrics", "other"};
const std::vector<std::string> kCodes = {"200", "400", "404", "500", "503"};
const std::vector<std::string> kVerbs = {"filter", "prioritize", "bind", "preempt"};
const std::vector<std::string> kResults = {"ok", "error", "dropped"};

// 30 families with every series of a busy server present.
void Populate(MetricsRegistry& m) {
  auto& requests = m.Counter("powerctl_http_requests_total", "HTTP requests answered",
                             {"server", "method", "path", "code"});
  auto& latency = m.Histogram("powerctl_http_request_duration_seconds", "Time to answer", kBuckets,
                              {"server", "path"});
  for (const auto& s : kServers)
    for (const auto& p : kPaths) {
      latency.Observe({s, p}, 0.003);
      for (const auto& meth : kMethods)
        for (const auto& c : kCodes) requests.Inc({s, meth, p, c});
    }
  auto& verb_requests =
      m.Counter("powerctl_extender_requests_total", "Extender requests", {"verb", "code"});
  auto& verb_latency = m.Histogram("powerctl_extender_request_duration_seconds", "Time per verb",
                                   kBuckets, {"verb"});
  for (const auto& v : kVerbs) {
    verb_latency.Observe({v}, 0.0012);
    for (const auto& c : kCodes) verb_requests.Inc({v, c});
  }
  for (int i = 0; i < 16; ++i) {  // per-result counters: label patches, events, syncs, ...
    auto& c = m.Counter("powerctl_bench_results_" + std::to_string(i) + "_total",
                        "Things done, by result", {"result"});
    for (const auto& r : kResults) c.Inc({r}, 3);
  }
  for (int i = 0; i < 6; ++i) {  // per-source and per-state gauges
    auto& g =
        m.Gauge("powerctl_bench_level_" + std::to_string(i), "A level, by source", {"source"});
    for (const auto& s : {"cpu", "power", "temperature", "allocated"}) g.Set({s}, 1.5e6 + i);
  }
  for (int i = 0; i < 4; ++i) {  // label-less gauges and histograms: leader, sync duration, ...
    m.Gauge("powerctl_bench_flag_" + std::to_string(i), "A flag").Set(1);
  }
  m.Histogram("powerctl_bench_sync_duration_seconds", "Sync time", kBuckets).Observe(0.02);
}

void BM_MetricsRender(benchmark::State& state) {
  MetricsRegistry metrics;
  Populate(metrics);
  std::size_t bytes = 0;
  for (auto _ : state) {
    std::string text = metrics.Render();
    bytes = text.size();
    benchmark::DoNotOptimize(text.data());
  }
  state.counters["bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_MetricsRender)->Unit(benchmark::kMicrosecond);

// What schedule-server's request recorder does per request: 4 label values, an existing series.
void BM_MetricsCounterInc(benchmark::State& state) {
  static MetricsRegistry metrics;
  static CounterFamily& requests = []() -> CounterFamily& {
    Populate(metrics);
    return metrics.Counter("powerctl_http_requests_total", "",
                           {"server", "method", "path", "code"});
  }();
  const LabelValues labels = {"scheduler", "POST", "/scheduler/prioritize", "200"};
  for (auto _ : state) requests.Inc(labels);
}
BENCHMARK(BM_MetricsCounterInc)->Threads(1)->Threads(2);

void BM_MetricsHistogramObserve(benchmark::State& state) {
  static MetricsRegistry metrics;
  static HistogramFamily& latency = []() -> HistogramFamily& {
    Populate(metrics);
    return metrics.Histogram("powerctl_http_request_duration_seconds", "", kBuckets,
                             {"server", "path"});
  }();
  const LabelValues labels = {"scheduler", "/scheduler/prioritize"};
  for (auto _ : state) latency.Observe(labels, 0.0042);
}
BENCHMARK(BM_MetricsHistogramObserve)->Threads(1)->Threads(2);

}  // namespace
}  // namespace powerctl::server
