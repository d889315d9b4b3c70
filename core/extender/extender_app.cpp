#include "core/extender/extender_app.h"

#include "core/cluster/node_cache.h"
#include "core/common/duration.h"
#include "core/common/http_client.h"
#include "core/common/malloc_tuning.h"
#include "core/extender/cluster_writer.h"
#include "core/extender/decision_event_writer.h"
#include "core/extender/extender_service.h"
#include "core/extender/model_accuracy_monitor.h"
#include "core/kube/client.h"
#include "core/predict/predictor_factory.h"
#include "core/predict/routing_predictor.h"
#include "core/scoring/policy_metrics.h"
#include "core/telemetry/power_sources.h"
#include "core/telemetry/prometheus_client.h"
#include "core/telemetry/sources.h"
#include "core/telemetry/telemetry_service.h"

#include <cstdlib>

namespace powerctl::extender {
namespace {

std::string Identity(const ExtenderAppOptions& options) {
  return options.election.identity.empty() ? cluster::DefaultLeaseIdentity()
                                           : options.election.identity;
}

// The leader election and the writes only its winner makes. Stopped in reverse order of
// start by the destructor: the writer first, then the Lease is released.
struct ClusterWrites {
  std::unique_ptr<cluster::LeaderElection> election;
  std::unique_ptr<kube::Client> client;
  std::unique_ptr<ClusterWriter> writer;

  ~ClusterWrites() {
    if (writer) writer->Stop();
    if (election) election->Stop();
  }
};

Result<std::unique_ptr<ClusterWrites>> StartClusterWrites(
    const ExtenderAppOptions& options, cluster::NodeCache& cache,
    scoring::MetricSource& policy_metrics, server::MetricsRegistry& registry,
    std::chrono::milliseconds label_interval) {
  auto out = std::make_unique<ClusterWrites>();
  kube::ClientOptions client_options;
  client_options.log = options.log;
  client_options.connection_description = options.cluster->description;

  cluster::LeaseElectorOptions lease;
  lease.namespace_ = options.election.lease_namespace.empty() ? options.config.namespace_
                                                              : options.election.lease_namespace;
  lease.name = options.election.lease_name;
  lease.identity = Identity(options);
  lease.log = options.log;
  // One attempt per round: the round itself is retried every few seconds, and a request
  // retried with backoff could outlive the renew deadline.
  kube::ClientOptions lease_client = client_options;
  lease_client.max_attempts = 1;
  POWERCTL_TRY(lease_transport, kube::MakeCurlTransport(*options.cluster, options.transport));
  server::GaugeFamily& leader = registry.Gauge(
      "powerctl_extender_leader",
      "1 while this replica holds the Lease and writes node labels and pod-group touches");
  leader.Set(0);
  out->election = std::make_unique<cluster::LeaderElection>(
      std::make_unique<kube::Client>(std::move(lease_transport), lease_client), lease,
      [&leader](bool is_leader) { leader.Set(is_leader ? 1 : 0); });

  POWERCTL_TRY(transport, kube::MakeCurlTransport(*options.cluster, options.transport));
  out->client = std::make_unique<kube::Client>(std::move(transport), client_options);
  ClusterWriterDeps deps;
  deps.client = out->client.get();
  deps.policy_metrics = &policy_metrics;
  deps.snapshot = [&cache] { return cache.Snapshot(); };
  deps.policies_synced = [&cache] { return cache.Status().policies_synced; };
  deps.wait_for_change = [&cache](std::uint64_t version, std::chrono::milliseconds timeout) {
    cache.WaitForGroupsChange(version, timeout);
  };
  cluster::LeaderElection* election = out->election.get();
  // Writing from a cache that has not listed everything yet would undo others' work.
  deps.is_leader = [election, &cache] { return election->IsLeader() && cache.Status().synced; };
  deps.log = options.log;
  ClusterWriterOptions writer_options;
  writer_options.label_interval = label_interval;
  out->writer = std::make_unique<ClusterWriter>(std::move(deps), registry, writer_options);
  out->election->Start();
  out->writer->Start();
  return out;
}

// Decision Events for `explain`: one client of their own, and few retries, so a slow API
// server fills the writer's bounded queue rather than holding decisions for long.
Result<std::unique_ptr<DecisionEventWriter>> StartDecisionEvents(
    const ExtenderAppOptions& options, server::MetricsRegistry& registry) {
  POWERCTL_TRY(transport, kube::MakeCurlTransport(*options.cluster, options.transport));
  kube::ClientOptions client_options;
  client_options.log = options.log;
  client_options.connection_description = options.cluster->description;
  client_options.max_attempts = 2;
  DecisionEventWriterOptions writer_options;
  writer_options.instance = Identity(options);
  writer_options.log = options.log;
  auto writer = std::make_unique<DecisionEventWriter>(std::move(transport), client_options,
                                                      registry, writer_options);
  writer->Start();
  return writer;
}

// The model compared with measured power every refresh interval, off the scoring path.
Result<std::unique_ptr<ModelAccuracyMonitor>> StartModelAccuracy(
    const config::PowerctlConfig& config, const ExtenderService& service,
    const telemetry::PrometheusClient& prometheus,
    std::function<std::shared_ptr<const cluster::ClusterSnapshot>()> snapshot,
    server::MetricsRegistry& registry, std::chrono::milliseconds interval,
    std::shared_ptr<spdlog::logger> log) {
  POWERCTL_TRY(reading, telemetry::PowerReadingFromSettings(config.telemetry));
  ModelAccuracyDeps deps;
  deps.nodes = [snapshot]() -> Result<std::vector<telemetry::NodeInfo>> {
    auto s = snapshot();
    if (s == nullptr) return std::vector<telemetry::NodeInfo>{};
    return s->NodeInfos();
  };
  deps.measure = [&prometheus, reading](const std::vector<telemetry::NodeInfo>& nodes) {
    return telemetry::FetchMeasuredPower(prometheus, nodes, reading.spec, reading.window);
  };
  deps.predict = [&service](const std::vector<std::string>& nodes) {
    return service.PredictNow(nodes);
  };
  deps.log = std::move(log);
  auto monitor = std::make_unique<ModelAccuracyMonitor>(std::move(deps), registry, interval);
  monitor->Start();
  return monitor;
}

}  // namespace

Status ServeExtender(const ExtenderAppOptions& options, ScheduleServerHooks hooks) {
  // Built with glibc malloc (POWERCTL_JEMALLOC=OFF): two arenas, not glibc's default of up
  // to 8 per core. Every request allocates a few MiB on whichever server or worker thread
  // runs it, and each thread's own arena kept what it had freed (at 5,000 nodes, after a load
  // run, 173 MiB resident instead of 136). MALLOC_ARENA_MAX in the environment still decides
  // when set. With jemalloc (the default build) this does nothing: see malloc_tuning.cpp.
  if (std::getenv("MALLOC_ARENA_MAX") == nullptr) LimitMallocArenas(2);
  const config::PowerctlConfig& config = options.config;
  auto log = options.log;
  std::unique_ptr<HttpClient> http = MakeCurlHttpClient();

  // The cluster: a client for metrics.k8s.io and a cache following nodes, pods and policies.
  std::unique_ptr<kube::Client> kube;
  std::unique_ptr<cluster::NodeCache> cache;
  if (options.cluster) {
    POWERCTL_TRY(transport, kube::MakeCurlTransport(*options.cluster, options.transport));
    kube::ClientOptions client_options;
    client_options.log = log;
    client_options.connection_description = options.cluster->description;
    kube = std::make_unique<kube::Client>(std::move(transport), client_options);
    cluster::NodeCacheOptions cache_options;
    cache_options.client = client_options;
    auto connection = *options.cluster;
    auto transport_options = options.transport;
    cache = std::make_unique<cluster::NodeCache>(
        [connection, transport_options] {
          return kube::MakeCurlTransport(connection, transport_options);
        },
        cache_options);
    cache->Start();
  }
  auto snapshot = [&cache]() -> std::shared_ptr<const cluster::ClusterSnapshot> {
    return cache ? cache->Snapshot() : nullptr;
  };

  // Telemetry: a failure to set up a source degrades power scores, it does not stop the server.
  telemetry::SourceDependencies source_deps;
  source_deps.http = http.get();
  source_deps.kube = kube.get();
  source_deps.log = log;
  std::string telemetry_problem;
  std::optional<telemetry::TelemetrySources> sources;
  std::unique_ptr<telemetry::TelemetryService> telemetry_service;
  if (auto made = telemetry::MakeTelemetrySources(config.telemetry, source_deps); made.ok()) {
    sources = std::move(*made);
    telemetry::TelemetryServiceOptions telemetry_options;
    telemetry_options.max_age = sources->max_age;
    telemetry_options.refresh_interval = sources->refresh_interval;
    telemetry_options.log = log;
    telemetry_service = std::make_unique<telemetry::TelemetryService>(
        *sources->cpu, *sources->temperature,
        [snapshot]() -> Result<std::vector<telemetry::NodeInfo>> {
          auto s = snapshot();
          if (s == nullptr) return std::vector<telemetry::NodeInfo>{};
          return s->NodeInfos();
        },
        telemetry_options);
    // Warm once the cache has listed the nodes (before, a fetch would be for none); bounded, and
    // not at all without a reachable cluster: the scoring path then fetches on demand.
    if (cache && cache->WaitForSync(std::chrono::seconds(10))) telemetry_service->Warm();
  } else {
    telemetry_problem = made.error().message;
    if (log) log->warn("telemetry disabled: {}", telemetry_problem);
  }

  POWERCTL_TRY(predictor, predict::MakeConfiguredPredictor(config.predictor, *http));

  telemetry::PrometheusOptions prometheus_options;
  prometheus_options.url = config.telemetry.prometheus_url;
  prometheus_options.log = log;
  telemetry::PrometheusClient prometheus(*http, prometheus_options);
  // Policy metrics are as fresh as the other telemetry, and label policies are enforced at
  // that pace (TAS ran its enforcer on its sync period).
  std::chrono::milliseconds refresh_interval{15000};
  if (auto parsed = ParseDuration(config.telemetry.refresh_interval);
      parsed.ok() && parsed->count() > 0) {
    refresh_interval = *parsed;
  }
  scoring::PrometheusMetricOptions policy_metric_options;
  policy_metric_options.cache.refresh_after = refresh_interval;
  scoring::PrometheusMetricSource policy_metrics(prometheus, policy_metric_options);

  scoring::SchedulingDeps deps;
  deps.config = &config;
  deps.telemetry = telemetry_service.get();
  deps.predictor = predictor.predictor.get();
  deps.deadline = predictor.deadline;
  deps.policy_metrics = &policy_metrics;
  deps.snapshot = snapshot;

  server::MetricsRegistry owned_registry;
  server::MetricsRegistry& registry = hooks.metrics != nullptr ? *hooks.metrics : owned_registry;
  hooks.metrics = &registry;
  ExtenderServiceOptions service_options;
  service_options.max_request_nodes = static_cast<std::size_t>(config.extender.max_request_nodes);
  ExtenderService service(deps, registry, service_options);
  auto extra_collect = hooks.collect_metrics;
  hooks.collect_metrics = [&service, extra_collect] {
    service.CollectMetrics();
    if (extra_collect) extra_collect();
  };
  std::unique_ptr<ModelAccuracyMonitor> accuracy;
  if (config.telemetry.model_accuracy && cache) {
    auto started =
        StartModelAccuracy(config, service, prometheus, snapshot, registry, refresh_interval, log);
    // Like telemetry, a problem here degrades what the server reports; scheduling goes on.
    if (started.ok()) {
      accuracy = std::move(*started);
    } else if (log) {
      log->warn("model accuracy disabled: {}", started.error().message);
    }
  }
  auto extra_routes = hooks.add_ops_routes;
  hooks.add_ops_routes = [&service, extra_routes](server::HttpServer& ops) {
    service.AddOpsRoutes(ops);
    if (extra_routes) extra_routes(ops);
  };
  const bool has_cluster = options.cluster.has_value();
  hooks.ready = [&cache, has_cluster, telemetry_problem, &telemetry_service,
                 routing = predictor.routing] {
    server::ReadyState state;
    if (!has_cluster) {
      state.degraded.push_back(
          {"cluster", "no cluster configured: answering from what requests carry"});
    } else if (cache) {
      cluster::CacheStatus status = cache->Status();
      if (!status.ready) {
        state.degraded.push_back({"cluster", status.last_error.empty()
                                                 ? "not synced yet"
                                                 : "unreachable: " + status.last_error});
      }
      if (!status.policy_note.empty()) state.degraded.push_back({"policies", status.policy_note});
    }
    if (!telemetry_problem.empty()) state.degraded.push_back({"telemetry", telemetry_problem});
    // Degraded, still ready: power scores fall back to the unknown score, scheduling goes on.
    if (telemetry_service) {
      for (const auto& source : telemetry_service->Sources()) {
        if (source.failing) state.degraded.push_back({"telemetry/" + source.source, source.error});
      }
    }
    if (routing != nullptr) {
      for (const auto& failing : routing->FailingEndpoints())
        state.degraded.push_back({"model", failing.endpoint + ": " + failing.error});
    }
    return state;
  };

  std::unique_ptr<ClusterWrites> writes;
  if (cache) {
    auto started = StartClusterWrites(options, *cache, policy_metrics, registry, refresh_interval);
    if (!started.ok()) {
      cache->Stop();
      return started.error();
    }
    writes = std::move(*started);
  }

  std::unique_ptr<DecisionEventWriter> events;
  if (cache && options.decision_events) {
    auto started = StartDecisionEvents(options, registry);
    if (!started.ok()) {
      writes.reset();
      cache->Stop();
      return started.error();
    }
    events = std::move(*started);
    DecisionEventWriter* writer = events.get();
    service.SetDecisionObserver(
        [writer](std::shared_ptr<const scoring::Decision> d) { writer->Submit(std::move(d)); });
    if (!options.pod_namespace.empty() && !options.pod_name.empty()) {
      hooks.on_tls_warning = [writer, ns = options.pod_namespace, pod = options.pod_name,
                              instance = Identity(options),
                              also = hooks.on_tls_warning](const TlsWarning& warning) {
        DecisionEventSource source{instance, "", std::chrono::system_clock::now()};
        writer->SubmitEvent(ns, TlsFailureEvent(ns, pod, warning, source));
        if (also) also(warning);
      };
    }
  }

  Status status = RunScheduleServer(options.server, service, hooks);
  if (accuracy) accuracy->Stop();  // it predicts through `service`
  if (events) events->Stop();      // the server has drained: no more decisions come
  writes.reset();  // stops writing and releases the Lease while the cache still runs
  if (cache) cache->Stop();
  return status;
}

}  // namespace powerctl::extender
