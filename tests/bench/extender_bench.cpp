// Server-side cost of the extender's verbs (decode, decide, encode; no HTTP) for clusters of
// 100, 1,000 and 5,000 nodes, in both of kube-scheduler's node modes. Besides the mean,
// each run reports p50_ms and p99_ms over its iterations: the time until the answer is
// ready to send. The mean also includes what the server does after sending it.
//
//   build/tests/bench/powerctl_bench --benchmark_filter=Extender
//
// NodeNames: nodes come from the cluster cache's snapshot (nodeCacheCapable: true, the
// generated default). Nodes: every request carries the full Node objects.
// POWERCTL_BENCH_WORKERS=N sets the threads one call may use (the server's default: the
// machine's cores, at most 4).

#include "core/extender/extender_service.h"
#include "core/predict/builtin_model.h"
#include "tests/unit/telemetry_fakes.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <vector>

namespace powerctl::extender {
namespace {

using json = nlohmann::json;

json NodeObject(std::int64_t i) {
  return {{"metadata",
           {{"name", "node-" + std::to_string(i)},
            {"labels", {{"kubernetes.io/hostname", "node-" + std::to_string(i)}}},
            {"annotations",
             {{"powerctl.io/idle-watts", std::to_string(80 + i % 50)},
              {"powerctl.io/max-watts", "400"}}}}},
          {"status",
           {{"allocatable", {{"cpu", "64"}, {"memory", "256Gi"}}}, {"capacity", {{"cpu", "64"}}}}}};
}

void Run(benchmark::State& state, bool names_mode, bool filter) {
  const std::int64_t n = state.range(0);
  auto snapshot = std::make_shared<cluster::ClusterSnapshot>();
  json items = json::array();
  json names = json::array();
  std::vector<telemetry::NodeInfo> infos;
  for (std::int64_t i = 0; i < n; ++i) {
    json node = NodeObject(i);
    cluster::NodeState s;
    s.name = node["metadata"]["name"];
    s.facts = predict::NodeFactsFromJson(node);
    s.info = telemetry::NodeInfoFromJson(node);
    s.cpu_allocatable = 64;
    infos.push_back(s.info);
    names.push_back(s.name);
    snapshot->PutNode(std::move(s));
    items.push_back(std::move(node));
  }
  snapshot->IndexNodes();
  testsupport::StaticCpuSource cpu([](std::size_t i) { return static_cast<double>(i % 48); });
  testsupport::NoTemperatureSource temperatures;
  telemetry::TelemetryService telemetry(
      cpu, temperatures, [infos] { return Result<std::vector<telemetry::NodeInfo>>(infos); }, {});
  (void)telemetry.Readings(telemetry::Wait::kIfEmpty);
  manifests::PowerctlConfig config;
  predict::BuiltinPredictor builtin;
  scoring::SchedulingDeps deps;
  deps.config = &config;
  deps.telemetry = &telemetry;
  deps.predictor = &builtin;
  if (const char* w = std::getenv("POWERCTL_BENCH_WORKERS")) deps.workers = std::stoul(w);
  deps.snapshot = [snapshot] { return std::shared_ptr<const cluster::ClusterSnapshot>(snapshot); };
  MetricsRegistry metrics;
  ExtenderService service(deps, metrics);
  json pod = {
      {"metadata", {{"name", "p"}, {"namespace", "default"}, {"uid", "u"}}},
      {"spec",
       {{"containers", {{{"name", "c"}, {"resources", {{"requests", {{"cpu", "500m"}}}}}}}}}}};
  HttpRequest request;
  request.method = "POST";
  request.body = names_mode ? json{{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", names}}.dump()
                            : json{{"Pod", pod},
                                   {"Nodes", {{"metadata", json::object()}, {"items", items}}},
                                   {"NodeNames", nullptr}}
                                  .dump();
  std::vector<double> millis;
  for (auto _ : state) {
    auto start = std::chrono::steady_clock::now();
    HttpResponse r = filter ? service.Filter(request) : service.Prioritize(request);
    millis.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count());
    if (r.status != 200) state.SkipWithError(r.body.c_str());
    benchmark::DoNotOptimize(r.body.data());
    // What the server runs once the answer is written (trimming recorded decisions): it
    // costs CPU, not the scheduler's wait, and is outside the per-call times but inside
    // the mean (the loop's wall time).
    if (r.after_send) r.after_send();
  }
  state.counters["request_bytes"] = static_cast<double>(request.body.size());
  if (!millis.empty()) {
    std::sort(millis.begin(), millis.end());
    auto at = [&](double q) {
      return millis[std::min(millis.size() - 1, static_cast<std::size_t>(q * millis.size()))];
    };
    state.counters["p50_ms"] = at(0.50);
    state.counters["p99_ms"] = at(0.99);
  }
}

void BM_ExtenderPrioritizeNodeNames(benchmark::State& state) {
  Run(state, true, false);
}
void BM_ExtenderPrioritizeNodes(benchmark::State& state) {
  Run(state, false, false);
}
void BM_ExtenderFilterNodeNames(benchmark::State& state) {
  Run(state, true, true);
}
void BM_ExtenderFilterNodes(benchmark::State& state) {
  Run(state, false, true);
}
BENCHMARK(BM_ExtenderPrioritizeNodeNames)
    ->Arg(100)
    ->Arg(1000)
    ->Arg(5000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ExtenderPrioritizeNodes)
    ->Arg(100)
    ->Arg(1000)
    ->Arg(5000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ExtenderFilterNodeNames)
    ->Arg(100)
    ->Arg(1000)
    ->Arg(5000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ExtenderFilterNodes)->Arg(100)->Arg(1000)->Arg(5000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace powerctl::extender
