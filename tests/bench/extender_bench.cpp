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
//
// The server is set up as schedule-server runs it: decisions are recorded and handed to a
// decision writer (its thread not started: the request thread's share, queueing, is what is
// measured), and untimed calls first fill the record until Trim compacts one old decision per
// call, as it does once a server has answered a few dozen requests.
//
// Instructions per call, which a busy machine does not change (docs/benchmarks.md): under
// callgrind with collection off at the start, only the timed loop is counted, after the
// untimed calls have warmed the caches of the server (prepared nodes, decoded names);
// POWERCTL_BENCH_ITERATIONS=N runs exactly N calls, so the count divides by N:
//
//   POWERCTL_BENCH_ITERATIONS=20 valgrind --tool=callgrind --collect-atstart=no
//     build/tests/bench/powerctl_bench --benchmark_filter='^BM_ExtenderPrioritizeNodeNames/500/'

#include "core/extender/decision_event_writer.h"
#include "core/extender/extender_service.h"
#include "core/predict/builtin_model.h"
#include "tests/unit/fake_transport.h"
#include "tests/unit/telemetry_fakes.h"

#include <benchmark/benchmark.h>
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#else
#define CALLGRIND_TOGGLE_COLLECT
#endif

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <vector>

namespace powerctl::extender {
namespace {

using json = nlohmann::json;

// "node-17", or with long_names a name as cloud providers give them (41 characters: longer
// than std::string's 15-character inline buffer, as most real node names are).
std::string NodeName(std::int64_t i, bool long_names) {
  if (!long_names) return "node-" + std::to_string(i);
  return "ip-10-0-" + std::to_string(i / 250) + "-" + std::to_string(i % 250) +
         ".eu-west-1.compute.internal";
}

json NodeObject(std::int64_t i, bool long_names) {
  return {{"metadata",
           {{"name", NodeName(i, long_names)},
            {"labels", {{"kubernetes.io/hostname", NodeName(i, long_names)}}},
            {"annotations",
             {{"powerctl.io/idle-watts", std::to_string(80 + i % 50)},
              {"powerctl.io/max-watts", "400"}}}}},
          {"status",
           {{"allocatable", {{"cpu", "64"}, {"memory", "256Gi"}}}, {"capacity", {{"cpu", "64"}}}}}};
}

// A Pod as kube-scheduler 1.20 sends it: from its informer, managedFields included.
json FullPod() {
  json pod = json::parse(R"({
    "metadata": {"name": "web-7d4b9c6f5-x2k8q", "generateName": "web-7d4b9c6f5-",
      "namespace": "default", "uid": "0b7a6f1e-5d4c-4b3a-9f8e-7d6c5b4a3f2e",
      "resourceVersion": "123456", "creationTimestamp": "2026-11-25T10:00:00Z",
      "labels": {"app": "web", "pod-template-hash": "7d4b9c6f5", "tier": "frontend"},
      "annotations": {"kubernetes.io/psp": "restricted"},
      "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
        "name": "web-7d4b9c6f5", "uid": "9a8b7c6d-5e4f-3a2b-1c0d-9e8f7a6b5c4d",
        "controller": true, "blockOwnerDeletion": true}],
      "managedFields": [{"manager": "kube-controller-manager", "operation": "Update",
        "apiVersion": "v1", "time": "2026-11-25T10:00:00Z", "fieldsType": "FieldsV1",
        "fieldsV1": {"f:metadata": {"f:generateName": {}, "f:labels": {".": {}, "f:app": {},
          "f:pod-template-hash": {}, "f:tier": {}}, "f:ownerReferences": {".": {}}},
          "f:spec": {"f:containers": {"k:{\"name\":\"web\"}": {".": {}, "f:image": {},
          "f:name": {}, "f:ports": {}, "f:resources": {"f:requests": {"f:cpu": {},
          "f:memory": {}}}}}, "f:schedulerName": {}}}}]},
    "spec": {"schedulerName": "powerctl-scheduler", "serviceAccountName": "default",
      "containers": [{"name": "web", "image": "registry.example/web:1.4.2",
        "ports": [{"containerPort": 8080, "protocol": "TCP"}],
        "resources": {"requests": {"cpu": "500m", "memory": "256Mi"}},
        "volumeMounts": [{"name": "kube-api-access", "readOnly": true,
          "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}]}],
      "volumes": [{"name": "kube-api-access", "projected": {"sources": [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}}]}}],
      "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists",
        "effect": "NoExecute", "tolerationSeconds": 300}],
      "restartPolicy": "Always", "terminationGracePeriodSeconds": 30,
      "dnsPolicy": "ClusterFirst", "priority": 0, "enableServiceLinks": true},
    "status": {"phase": "Pending", "qosClass": "Burstable"}})");
  return pod;
}

void Run(benchmark::State& state, bool names_mode, bool filter, bool bind_per_call = false,
         bool long_names = false) {
  const std::int64_t n = state.range(0);
  auto snapshot = std::make_shared<cluster::ClusterSnapshot>();
  json items = json::array();
  json names = json::array();
  std::vector<telemetry::NodeInfo> infos;
  for (std::int64_t i = 0; i < n; ++i) {
    json node = NodeObject(i, long_names);
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
  config::PowerctlConfig config;
  // POWERCTL_BENCH_OBJECTIVE=marginal: the power score's older objective, for comparison.
  if (const char* o = std::getenv("POWERCTL_BENCH_OBJECTIVE")) config.scoring.objective = o;
  predict::BuiltinPredictor builtin;
  scoring::SchedulingDeps deps;
  deps.config = &config;
  deps.telemetry = &telemetry;
  deps.predictor = &builtin;
  if (const char* w = std::getenv("POWERCTL_BENCH_WORKERS")) deps.workers = std::stoul(w);
  // With bind_per_call, each call first sees a new snapshot in which one more node has one
  // more pod, as NodeCache::Snapshot() publishes it after a bind (built on the request's
  // thread, as there).
  std::shared_ptr<const cluster::ClusterSnapshot> current = snapshot;
  std::int64_t binds = 0;
  bool bound = false;
  deps.snapshot = [&]() -> std::shared_ptr<const cluster::ClusterSnapshot> {
    if (!bound) return current;
    bound = false;
    auto next = std::make_shared<cluster::ClusterSnapshot>(*current);
    const std::size_t at = static_cast<std::size_t>(binds * 7919 % n);
    cluster::NodeState changed = *next->nodes[at];
    auto pod = std::make_shared<cluster::PodInfo>();
    pod->namespace_ = "default";
    pod->name = "bound-" + std::to_string(binds);
    pod->node_name = changed.name;
    pod->phase = "Pending";
    pod->requests.cpu_cores = 0.5;
    changed.pods.push_back(std::move(pod));
    changed.requested.cpu_cores += 0.5;
    next->nodes[at] = std::make_shared<const cluster::NodeState>(std::move(changed));
    next->version = static_cast<std::uint64_t>(++binds);
    current = std::move(next);
    return current;
  };
  server::MetricsRegistry metrics;
  ExtenderService service(deps, metrics);
  DecisionEventWriter writer(std::make_unique<kube::fake::FakeTransport>(), kube::ClientOptions{},
                             metrics, DecisionEventWriterOptions{});
  service.SetDecisionObserver(
      [&writer](std::shared_ptr<const scoring::Decision> d) { writer.Submit(std::move(d)); });
  json pod = bind_per_call
                 ? FullPod()
                 : json{{"metadata", {{"name", "p"}, {"namespace", "default"}, {"uid", "u"}}},
                        {"spec",
                         {{"containers",
                           {{{"name", "c"}, {"resources", {{"requests", {{"cpu", "500m"}}}}}}}}}}};
  server::HttpRequest request;
  request.method = "POST";
  request.body = names_mode ? json{{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", names}}.dump()
                            : json{{"Pod", pod},
                                   {"Nodes", {{"metadata", json::object()}, {"items", items}}},
                                   {"NodeNames", nullptr}}
                                  .dump();
  std::vector<double> millis;
  // The untimed calls (see the top of the file): past the record's node budget, so that each
  // timed call compacts an old decision. Callgrind counts from here.
  const auto warm = ExtenderServiceOptions{}.keep_node_entries / static_cast<std::size_t>(n) + 1;
  for (std::size_t i = 0; i < warm; ++i) {
    bound = bind_per_call;
    server::HttpResponse r = filter ? service.Filter(request) : service.Prioritize(request);
    if (r.after_send) r.after_send();
  }
  CALLGRIND_TOGGLE_COLLECT;
  for (auto _ : state) {
    bound = bind_per_call;
    auto start = std::chrono::steady_clock::now();
    server::HttpResponse r = filter ? service.Filter(request) : service.Prioritize(request);
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
  CALLGRIND_TOGGLE_COLLECT;
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
// NodeNames prioritize with names as long as cloud providers' (see NodeName).
void BM_ExtenderPrioritizeLongNames(benchmark::State& state) {
  Run(state, true, false, false, true);
}
// Prioritize as in tests/bench/scheduler_throughput.py: a bind between calls, a full Pod.
void BM_ExtenderPrioritizeAfterBind(benchmark::State& state) {
  Run(state, true, false, true);
}
// The cluster sizes, and POWERCTL_BENCH_ITERATIONS (read when the benchmarks are registered).
void Sizes(benchmark::internal::Benchmark* b) {
  for (int n : {100, 500, 1000, 5000}) b->Arg(n);
  b->Unit(benchmark::kMillisecond);
  if (const char* n = std::getenv("POWERCTL_BENCH_ITERATIONS")) b->Iterations(std::stol(n));
}
void OneSize(benchmark::internal::Benchmark* b, int n) {
  b->Arg(n)->Unit(benchmark::kMillisecond);
  if (const char* i = std::getenv("POWERCTL_BENCH_ITERATIONS")) b->Iterations(std::stol(i));
}

BENCHMARK(BM_ExtenderPrioritizeNodeNames)->Apply(Sizes);
BENCHMARK(BM_ExtenderPrioritizeNodes)->Apply(Sizes);
BENCHMARK(BM_ExtenderFilterNodeNames)->Apply(Sizes);
BENCHMARK(BM_ExtenderFilterNodes)->Apply(Sizes);
BENCHMARK(BM_ExtenderPrioritizeLongNames)->Apply([](benchmark::internal::Benchmark* b) {
  OneSize(b, 5000);
});
BENCHMARK(BM_ExtenderPrioritizeAfterBind)->Apply([](benchmark::internal::Benchmark* b) {
  OneSize(b, 500);
  OneSize(b, 5000);
});

}  // namespace
}  // namespace powerctl::extender
