#include "core/explain/local_scoring.h"

#include "core/common/json_fields.h"
#include "core/kube/pod_resources.h"
#include "core/predict/predictor_factory.h"
#include "core/scoring/pod_groups.h"
#include "core/scoring/policies.h"
#include "core/scoring/policy_metrics.h"
#include "core/scoring/scheduling_core.h"
#include "core/telemetry/prometheus_client.h"
#include "core/telemetry/sources.h"
#include "core/telemetry/telemetry_service.h"

#include <fmt/format.h>

namespace powerctl::explain {
namespace {

using json = nlohmann::json;

bool Terminal(const json& pod) {
  const std::string phase = StringField(pod, {"status", "phase"});
  return phase == "Succeeded" || phase == "Failed";
}

}  // namespace

std::string PodKey(const json& pod) {
  return StringField(pod, {"metadata", "namespace"}) + "/" + StringField(pod, {"metadata", "name"});
}

Result<ClusterObjects> ListClusterObjects(kube::Client& kube) {
  ClusterObjects out;
  POWERCTL_TRY(nodes, kube.List("/api/v1/nodes"));
  out.nodes = std::move(nodes);
  kube::ListOptions running;
  running.field_selector = "status.phase!=Succeeded,status.phase!=Failed";
  POWERCTL_TRY(pods, kube.List("/api/v1/pods", running));
  out.pods = std::move(pods);
  auto policies = kube.List("/apis/telemetry.intel.com/v1alpha1/taspolicies");
  if (policies.ok()) {
    out.policies = std::move(*policies);
  } else if (policies.error().code != ErrorCode::kNotFound &&
             policies.error().code != ErrorCode::kForbidden) {
    return policies.error();
  }
  return out;
}

std::shared_ptr<const cluster::ClusterSnapshot> SnapshotOf(const ClusterObjects& objects,
                                                           const std::string& exclude_key) {
  auto snapshot = std::make_shared<cluster::ClusterSnapshot>();
  std::map<std::string, std::vector<std::shared_ptr<const cluster::PodInfo>>> by_node;
  std::map<std::string, std::vector<cluster::PodInfo>> groups;
  for (const json& object : objects.pods) {
    if (Terminal(object)) continue;
    auto pod = std::make_shared<const cluster::PodInfo>(cluster::PodInfoFromJson(object));
    ++snapshot->pod_count;
    if (auto group = pod->labels.find(cluster::kPodGroupLabel);
        group != pod->labels.end() && !group->second.empty()) {
      groups[pod->namespace_ + "/" + group->second].push_back(*pod);
    }
    if (!pod->node_name.empty() && pod->Key() != exclude_key)
      by_node[pod->node_name].push_back(pod);
  }
  for (const json& object : objects.nodes) {
    cluster::NodeState node = cluster::NodeStateFromJson(object);
    for (auto& pod : by_node[node.name]) {
      node.requested.cpu_cores += pod->requests.cpu_cores;
      node.requested.memory_bytes += pod->requests.memory_bytes;
      node.pods.push_back(std::move(pod));
    }
    snapshot->PutNode(std::move(node));
  }
  snapshot->IndexNodes();
  for (auto& [key, members] : groups) {
    snapshot->pod_groups[key] =
        std::make_shared<const std::vector<cluster::PodInfo>>(std::move(members));
  }
  for (const json& object : objects.policies) {
    const std::string key = PodKey(object);
    auto policy = config::PolicyFromJson(object);
    if (policy.ok()) {
      snapshot->policies[key] = std::move(*policy);
    } else {
      snapshot->invalid_policies[key] = policy.error().message;
    }
  }
  snapshot->version = 1;
  return snapshot;
}

Result<ComputedDecision> DecideLocally(const json& pod, const std::vector<std::string>& candidates,
                                       const ClusterObjects& objects,
                                       const config::PowerctlConfig& config,
                                       const LocalScoringDeps& deps) {
  if (deps.kube == nullptr || deps.http == nullptr) {
    return MakeError(ErrorCode::kInternal, "DecideLocally: missing dependencies");
  }
  ComputedDecision out;
  std::shared_ptr<const cluster::ClusterSnapshot> snapshot = SnapshotOf(objects, PodKey(pod));

  // Telemetry as the server reads it, fetched once (the server's caches are warm; ours are
  // filled here before deciding, since the scoring path itself never waits).
  telemetry::SourceDependencies source_deps;
  source_deps.http = deps.http;
  source_deps.kube = deps.kube;
  source_deps.time.clock = deps.clock;
  source_deps.log = deps.log;
  std::optional<telemetry::TelemetrySources> sources;
  std::unique_ptr<telemetry::TelemetryService> telemetry_service;
  if (auto made = telemetry::MakeTelemetrySources(config.telemetry, source_deps); made.ok()) {
    sources = std::move(*made);
    telemetry::TelemetryServiceOptions options;
    options.max_age = sources->max_age;
    options.refresh_interval = sources->refresh_interval;
    options.time = source_deps.time;
    options.log = deps.log;
    std::vector<telemetry::NodeInfo> infos = snapshot->NodeInfos();
    telemetry_service = std::make_unique<telemetry::TelemetryService>(
        *sources->cpu, *sources->temperature, [infos] { return infos; }, options);
    auto warmed = telemetry_service->Readings(telemetry::Wait::kIfEmpty, candidates);
    if (!warmed.ok()) out.warnings.push_back("telemetry: " + warmed.error().message);
    out.answered_by = fmt::format("computed locally: CPU from {}, temperatures from {}, model {}",
                                  sources->cpu->Describe(), sources->temperature->Describe(),
                                  config.predictor.backend);
  } else {
    out.warnings.push_back("telemetry disabled: " + made.error().message);
    out.answered_by = "computed locally without telemetry, model " + config.predictor.backend;
  }
  POWERCTL_TRY(predictor, predict::MakeConfiguredPredictor(config.predictor, *deps.http));

  telemetry::PrometheusOptions prometheus_options;
  prometheus_options.url = config.telemetry.prometheus_url;
  prometheus_options.log = deps.log;
  telemetry::PrometheusClient prometheus(*deps.http, prometheus_options);
  scoring::PrometheusMetricSource policy_metrics(prometheus, scoring::PrometheusMetricOptions{});

  scoring::SchedulingDeps scheduling;
  scheduling.config = &config;
  scheduling.telemetry = telemetry_service.get();
  scheduling.predictor = predictor.predictor.get();
  scheduling.deadline = predictor.deadline;
  scheduling.policy_metrics = &policy_metrics;
  scheduling.snapshot = [snapshot] { return snapshot; };
  scheduling.clock = deps.clock;
  scheduling.workers = 1;
  scoring::SchedulingCore core(std::move(scheduling));

  out.filter = core.Filter(pod, candidates, json::array());
  std::vector<std::string> passed;
  for (const scoring::NodeDecision& n : out.filter.nodes) {
    if (n.passed != false) passed.push_back(n.node);
  }
  if (!passed.empty()) out.prioritize = core.Prioritize(pod, passed, json::array());
  return out;
}

}  // namespace powerctl::explain
