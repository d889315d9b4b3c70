// Predictions for many nodes through the TF Serving gRPC predictor and an in-process
// PredictionService on 127.0.0.1 (tests/unit/fake_tfserving.h), so the numbers measure
// powerctl's side (request building, HTTP/2, response checks) plus a trivial model.
//
//   powerctl_bench --benchmark_filter=Grpc
//
// Warm: the predictor (and so its channel) lives across iterations. Cold: a new predictor
// per iteration, paying channel creation and the TCP/HTTP/2 handshake. Fallback: the model
// rejects batches, so every row is its own RPC (the worst case).

#include "core/predict/tfserving_grpc.h"
#include "tests/unit/fake_tfserving.h"

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace powerctl::predict {
namespace {

using std::chrono::milliseconds;

std::vector<PredictionRow> Rows(std::int64_t n, int port) {
  std::vector<PredictionRow> rows(static_cast<std::size_t>(n));
  auto model = std::make_shared<ModelEndpoint>();
  model->backend = "tfserving-grpc";
  model->host = "127.0.0.1";
  model->port = port;
  model->name = "power";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    rows[i].model = model;
    rows[i].inputs = {static_cast<float>(i % 100) / 100.0f, 0.3f, 0.5f, 0.6f};
  }
  return rows;
}

void CheckAll(benchmark::State& state, const std::vector<Prediction>& got) {
  for (const Prediction& p : got) {
    if (!p.watts) {
      state.SkipWithError(("prediction failed: " + p.error).c_str());
      return;
    }
  }
}

void BM_GrpcWarm(benchmark::State& state) {
  fake::FakeTfServing server;
  TfServingGrpcPredictor predictor;
  const auto rows = Rows(state.range(0), server.port());
  CheckAll(state, predictor.Predict(rows, milliseconds(10000)));  // connect outside the loop
  for (auto _ : state) {
    auto got = predictor.Predict(rows, milliseconds(10000));
    benchmark::DoNotOptimize(got.data());
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
  state.counters["rpcs_per_iter"] =
      static_cast<double>(server.calls() - 1) / static_cast<double>(state.iterations());
}
BENCHMARK(BM_GrpcWarm)->Arg(1000)->Arg(5000)->Unit(benchmark::kMillisecond);

void BM_GrpcCold(benchmark::State& state) {
  fake::FakeTfServing server;
  const auto rows = Rows(state.range(0), server.port());
  for (auto _ : state) {
    TfServingGrpcPredictor predictor;
    auto got = predictor.Predict(rows, milliseconds(10000));
    benchmark::DoNotOptimize(got.data());
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_GrpcCold)->Arg(5000)->Unit(benchmark::kMillisecond);

void BM_GrpcSingleRowFallback(benchmark::State& state) {
  fake::FakeTfServing server(fake::FakeTfServingConfig{.reject_batches = true});
  TfServingGrpcPredictor predictor;
  const auto rows = Rows(state.range(0), server.port());
  CheckAll(state, predictor.Predict(rows, milliseconds(60000)));
  for (auto _ : state) {
    auto got = predictor.Predict(rows, milliseconds(60000));
    benchmark::DoNotOptimize(got.data());
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_GrpcSingleRowFallback)->Arg(5000)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace
}  // namespace powerctl::predict
