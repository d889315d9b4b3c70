// Power predictions for a whole cluster, the work behind `powerctl predict` and every
// prioritize call of the extender: telemetry readings from the TTL caches, model inputs,
// one batched prediction (now and after, so 2 rows per node), results per node.
//
//   build/tests/bench/powerctl_bench --benchmark_filter=NodePower
//
// Warm: caches filled and the model channel open, as on the scoring path.
// Cold: a new telemetry service (its first fetch from in-memory sources) and a new gRPC
// predictor per iteration, so every iteration pays the fetch plus channel set-up and the
// HTTP/2 handshake to the in-process TensorFlow Serving (tests/unit/fake_tfserving.h).

#include "core/predict/builtin_model.h"
#include "core/predict/node_power.h"
#include "core/predict/predictor_factory.h"
#include "core/telemetry/telemetry_service.h"
#include "tests/unit/fake_tfserving.h"
#include "tests/unit/telemetry_fakes.h"

#include <benchmark/benchmark.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace powerctl::predict {
namespace {

using std::chrono::milliseconds;
using telemetry::NodeInfo;

// In-memory temperatures: what Prometheus or ipmi_exporter would have answered.
class MemoryTemperatures : public telemetry::TemperatureSource {
 public:
  Result<std::map<std::string, telemetry::Temperatures>> Fetch(
      const std::vector<NodeInfo>& nodes) override {
    std::map<std::string, telemetry::Temperatures> out;
    auto now = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      telemetry::Temperatures t;
      t.ambient = telemetry::TemperatureReading(20.0 + static_cast<double>(i % 10), now, "Ambient");
      t.cpu1 = telemetry::TemperatureReading(40.0 + static_cast<double>(i % 30), now, "CPU1");
      t.cpu2 = telemetry::TemperatureReading(42.0 + static_cast<double>(i % 30), now, "CPU2");
      out[nodes[i].name] = t;
    }
    return out;
  }
  std::string Describe() const override { return "memory"; }
};

struct Cluster {
  std::vector<NodeInfo> infos;
  std::vector<NodeFacts> facts;
  std::vector<std::string> names;
};

Cluster MakeCluster(std::int64_t n) {
  Cluster c;
  for (std::int64_t i = 0; i < n; ++i) {
    NodeInfo info;
    info.name = "node-" + std::to_string(i);
    info.cpu_capacity = 64;
    NodeFacts facts;
    facts.name = info.name;
    facts.labels = {{"ambient/min", "15"}, {"ambient/max", "35"}, {"cpu1/min", "30"},
                    {"cpu1/max", "90"},    {"cpu2/min", "30"},    {"cpu2/max", "90"}};
    facts.annotations = {{"powerctl.io/idle-watts", "110"}, {"powerctl.io/max-watts", "420"}};
    c.names.push_back(info.name);
    c.infos.push_back(std::move(info));
    c.facts.push_back(std::move(facts));
  }
  return c;
}

config::PowerctlConfig Config(const std::string& backend, int port) {
  config::PowerctlConfig config;
  config.predictor.backend = backend;
  config.predictor.model.host = "127.0.0.1";
  config.predictor.model.grpc_port = port;
  return config;
}

std::size_t Predicted(const std::vector<NodePower>& results) {
  std::size_t n = 0;
  for (const NodePower& p : results) n += p.watts_now.has_value() ? 1 : 0;
  return n;
}

void RunNodePower(benchmark::State& state, const std::string& backend, bool cold) {
  const Cluster cluster = MakeCluster(state.range(0));
  fake::FakeTfServing server;
  config::PowerctlConfig config = Config(backend, server.port());
  testsupport::StaticCpuSource cpu([](std::size_t i) { return static_cast<double>(i % 32); });
  MemoryTemperatures temperatures;
  struct NoHttp : HttpClient {
    Result<HttpClientResponse> Do(const HttpClientRequest&) override {
      return MakeError(ErrorCode::kNetwork, "unused");
    }
  } http;
  auto lister = [&cluster] { return Result<std::vector<NodeInfo>>(cluster.infos); };
  auto make_service = [&] {
    return std::make_unique<telemetry::TelemetryService>(cpu, temperatures, lister,
                                                         telemetry::TelemetryServiceOptions{});
  };
  auto service = make_service();
  auto predictor = MakeConfiguredPredictor(config.predictor, http);
  if (!predictor.ok()) {
    state.SkipWithError(predictor.error().message.c_str());
    return;
  }
  PowerQuery query;
  query.deadline = milliseconds(30000);
  std::size_t predicted = 0;
  // Warm-up outside the loop: the first fetch and the channel.
  (void)service->Readings(telemetry::Wait::kIfEmpty);
  for (auto _ : state) {
    if (cold) {
      service = make_service();
      predictor = MakeConfiguredPredictor(config.predictor, http);
    }
    auto readings = service->Readings(cold ? telemetry::Wait::kIfEmpty : telemetry::Wait::kNever);
    query.now = std::chrono::steady_clock::now();
    auto results = PredictNodePower(cluster.facts, *readings, config, *predictor->predictor, query);
    predicted = Predicted(results);
    benchmark::DoNotOptimize(results.data());
  }
  if (predicted != cluster.facts.size()) {
    state.SkipWithError(("only " + std::to_string(predicted) + " nodes predicted").c_str());
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
  state.counters["model_rpcs"] = static_cast<double>(server.calls());
}

void BM_NodePowerWarmBuiltin(benchmark::State& state) {
  RunNodePower(state, "builtin", false);
}
void BM_NodePowerWarmGrpc(benchmark::State& state) {
  RunNodePower(state, "tfserving-grpc", false);
}
void BM_NodePowerColdGrpc(benchmark::State& state) {
  RunNodePower(state, "tfserving-grpc", true);
}
BENCHMARK(BM_NodePowerWarmBuiltin)->Arg(5000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_NodePowerWarmGrpc)->Arg(5000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_NodePowerColdGrpc)->Arg(5000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace powerctl::predict
