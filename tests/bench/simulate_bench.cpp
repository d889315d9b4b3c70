// `powerctl simulate` at the size of a large cluster: the mixed-generations snapshot's 36 nodes
// repeated to 5,000 (as tests/bench/big_snapshot.py writes it), the generated workload.
//
//   build/tests/bench/powerctl_bench --benchmark_filter=Simulate
//
// Bound: LowerBoundWatts for the first N generated pods (one load's bound; simulate computes
// one per --load). Placement: RunSimulation with one seed and the scorer named (the default
// scorer always runs too), threads 1, so the figure is one core's.

#include "core/simulate/bound.h"
#include "core/simulate/simulate.h"

#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <fstream>
#include <sstream>

namespace powerctl::simulate {
namespace {

constexpr int kNodes = 5000;

const Snapshot& BigSnapshot() {
  static const Snapshot snapshot = [] {
    std::ifstream in(std::string(POWERCTL_SOURCE_DIR) + "/data/specpower/mixed-generations.yaml");
    std::stringstream text;
    text << in.rdbuf();
    auto parsed = ParseSnapshot(text.str(), "mixed-generations.yaml");
    if (!parsed.ok()) throw std::runtime_error(parsed.error().message);
    Snapshot big;
    big.source = "mixed-generations x " + std::to_string(kNodes);
    for (int i = 0; i < kNodes; ++i) {
      SimNode node = parsed->nodes[static_cast<std::size_t>(i) % parsed->nodes.size()];
      node.name += fmt::format("-r{}", static_cast<std::size_t>(i) / parsed->nodes.size());
      big.nodes.push_back(std::move(node));
    }
    return big;
  }();
  return snapshot;
}

void BM_SimulateBound5000Nodes(benchmark::State& state) {
  std::mt19937_64 rng(1);
  auto nodes = InitialNodes(BigSnapshot(), 0.1, rng);
  WorkloadSpec spec;
  spec.pods = static_cast<int>(state.range(0));
  std::vector<double> cores;
  for (const WorkloadPod& pod : GenerateWorkload(spec))
    cores.push_back(static_cast<double>(pod.cpu_request_millis) / 1000);
  for (auto _ : state) benchmark::DoNotOptimize(LowerBoundWatts(*nodes, cores, false));
}
BENCHMARK(BM_SimulateBound5000Nodes)->Arg(50000)->Arg(150000)->Unit(benchmark::kSecond);

void BM_SimulatePlacement5000Nodes(benchmark::State& state, const char* scorer) {
  SimulationRequest request;
  request.snapshot = BigSnapshot();
  request.pods = static_cast<int>(state.range(0));
  request.seeds = 1;
  request.loads = {1};
  request.scorers = {scorer};
  request.threads = 1;
  for (auto _ : state) {
    auto result = RunSimulation(request);
    if (!result.ok()) state.SkipWithError(result.error().message.c_str());
  }
}
BENCHMARK_CAPTURE(BM_SimulatePlacement5000Nodes, default, "default")
    ->Arg(10000)
    ->Unit(benchmark::kSecond);
BENCHMARK_CAPTURE(BM_SimulatePlacement5000Nodes, powerctl, "powerctl")
    ->Arg(10000)
    ->Unit(benchmark::kSecond);

}  // namespace
}  // namespace powerctl::simulate
