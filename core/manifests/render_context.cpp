#include "core/manifests/render_context.h"

#include "core/common/duration.h"
#include "core/common/encoding.h"
#include "core/config/config_writer.h"

#include <fmt/format.h>

#include <algorithm>

namespace powerctl::manifests {
namespace {

using json = nlohmann::ordered_json;

// In-cluster path where the scheduler's Secret is mounted.
constexpr const char* kSchedulerTlsDir = "/etc/powerctl/tls";

// The resource score plugins of the generated profile (scheduler.resourceScoring), as the
// profile's `plugins.score` changes (false: kube-scheduler's defaults) and NodeResourcesFit's
// scoring strategy (false: its default, LeastAllocated). kube-scheduler's defaults spread pods
// over empty nodes: LeastAllocated and BalancedAllocation, one plugin each up to 1.21 (config
// v1beta1), LeastAllocated folded into NodeResourcesFit's score from 1.22 (v1beta2 removed
// NodeResources{Least,Most}Allocated). Disabling NodeResourcesFit under `score` keeps its filter.
//   pack: MostAllocated (the NodeResourcesMostAllocated plugin up to 1.21, NodeResourcesFit's
//         scoringStrategy type MostAllocated from 1.22), cpu and memory weight 1 each, and no
//         BalancedAllocation: kept, it pulled pods toward matching CPU and memory fractions
//         instead of cheap watts, up to 1.3 % worse than the default scheduler on a
//         homogeneous cluster (docs/scheduler-profile.md has the measurements).
//   none: neither, so among feasible nodes power decides; affinity, taints and topology
//         spread keep their say.
struct ResourceScoring {
  json score_plugins = false;
  json fit_scoring_strategy = false;
};

json ScorePlugins(json disabled, json enabled) {
  return {{"hasDisabled", !disabled.empty()},
          {"disabled", std::move(disabled)},
          {"hasEnabled", !enabled.empty()},
          {"enabled", std::move(enabled)}};
}

ResourceScoring ResourceScoringFor(const std::string& choice, const KubeVersion& v) {
  const bool v1beta1 = !v.AtLeast(22);
  ResourceScoring out;
  if (choice == config::kResourceScoringNone) {
    out.score_plugins =
        ScorePlugins(json::array({v1beta1 ? "NodeResourcesLeastAllocated" : "NodeResourcesFit",
                                  "NodeResourcesBalancedAllocation"}),
                     json::array());
  } else if (choice == config::kResourceScoringPack && v1beta1) {
    out.score_plugins = ScorePlugins(
        json::array({"NodeResourcesLeastAllocated", "NodeResourcesBalancedAllocation"}),
        json::array({json{{"name", "NodeResourcesMostAllocated"}, {"weight", 1}}}));
  } else if (choice == config::kResourceScoringPack) {
    out.score_plugins =
        ScorePlugins(json::array({"NodeResourcesBalancedAllocation"}), json::array());
    out.fit_scoring_strategy = "MostAllocated";
  }
  return out;
}

std::string ExtenderHost(const config::PowerctlConfig& config) {
  return fmt::format("powerctl-extender.{}.svc", config.namespace_);
}

std::string ModelConfigText(const config::ModelSettings& model) {
  std::string policy;
  if (!model.version.empty()) {
    policy =
        fmt::format("    model_version_policy {{ specific {{ versions: {} }} }}\n", model.version);
  }
  return fmt::format(
      "model_config_list {{\n  config {{\n    name: \"{0}\"\n    base_path: \"/models/{0}\"\n"
      "    model_platform: \"tensorflow\"\n{1}  }}\n}}\n",
      model.name, policy);
}

json PoliciesContext(const config::PowerctlConfig& config) {
  json list = json::array();
  for (const config::Policy& p : config.policies) {
    json strategies = json::array();
    for (const auto& [name, strategy] : p.strategies) {
      json rules = json::array();
      for (const config::PolicyRule& r : strategy.rules) {
        rules.push_back({{"metricname", r.metric_name},
                         {"operator", r.op},
                         {"hasTarget", r.has_target},
                         {"target", r.target},
                         {"hasLabels", !r.labels.empty()},
                         {"labels", r.labels}});
      }
      strategies.push_back(
          {{"strategy", name},
           {"logicalOperator",
            strategy.logical_operator.empty() ? json(false) : json(strategy.logical_operator)},
           {"rules", rules}});
    }
    list.push_back({{"name", p.name},
                    {"namespace", p.namespace_.empty() ? config.namespace_ : p.namespace_},
                    {"strategies", strategies}});
  }
  return list;
}

}  // namespace

std::string ConfigHash(std::string_view config_text,
                       std::initializer_list<std::string_view> mounted_certificates) {
  std::string input(config_text);
  for (std::string_view pem : mounted_certificates) {
    input += "\n---\n";
    input += pem;
  }
  return Sha256Hex(input).substr(0, 16);
}

CertificateRequest ExtenderCertificateRequest(const config::PowerctlConfig& config) {
  CertificateRequest request;
  std::string base = "powerctl-extender";
  std::string ns = config.namespace_;
  request.server_common_name = ExtenderHost(config);
  request.server_dns_names = {base, base + "." + ns, base + "." + ns + ".svc",
                              base + "." + ns + ".svc.cluster.local", "localhost"};
  request.server_ip_addresses = {"127.0.0.1", "::1"};
  request.client_common_name = config.scheduler.name;
  return request;
}

std::string SchedulerFeatureGates(const KubeVersion& v) {
  // OpportunisticBatching (beta, on by default from 1.35) may place a pod like the previous
  // one on the next node of the previous ranking without asking the extender's prioritize.
  // The lines that have it as a settable beta gate get it off; a newer line may lock it, and
  // a locked gate given on the command line stops kube-scheduler from starting.
  // docs/reference/kube-scheduler-config.md#opportunistic-batching
  if (v.AtLeast(35) && v.minor <= 37) return "OpportunisticBatching=false";
  return "";
}

std::string SchedulerConfigApiVersion(const KubeVersion& v) {
  if (v.AtLeast(25)) return "kubescheduler.config.k8s.io/v1";
  if (v.AtLeast(23)) return "kubescheduler.config.k8s.io/v1beta3";
  if (v.AtLeast(22)) return "kubescheduler.config.k8s.io/v1beta2";
  return "kubescheduler.config.k8s.io/v1beta1";
}

json BuildRenderContext(const config::PowerctlConfig& config, const RenderOptions& options) {
  const KubeVersion& v = options.version;
  config::ObjectNames names = config::NamesFor(config);
  const config::SchedulerSettings& s = config.scheduler;
  const config::ExtenderSettings& e = config.extender;

  int qps = s.client_qps > 0 ? s.client_qps : std::clamp(s.expected_nodes / 10, 50, 500);
  int burst = s.client_burst > 0 ? s.client_burst : 2 * qps;
  bool tls = e.tls_mode != "insecure";
  bool mutual = e.tls_mode == "mtls";

  json ctx;
  ctx["namespace"] = config.namespace_;
  ctx["kube"] = {{"version", v.MinorString()}, {"imageTag", v.ImageTag()}};

  json sched;
  sched["name"] = s.name;
  sched["serviceAccount"] = names.scheduler_service_account;
  sched["configMap"] = names.scheduler_config_map;
  sched["tlsSecret"] = names.scheduler_tls_secret;
  sched["kubeSchedulerBinding"] = names.scheduler_kube_scheduler;
  sched["volumeSchedulerBinding"] = names.scheduler_volume_scheduler;
  sched["authReaderBinding"] = names.scheduler_auth_reader;
  sched["tlsDir"] = kSchedulerTlsDir;
  sched["image"] = s.image.empty() ? "registry.k8s.io/kube-scheduler:" + v.ImageTag() : s.image;
  sched["replicas"] = s.replicas;
  sched["leaderElect"] = s.leader_elect;
  sched["verbosity"] = s.verbosity;
  sched["qps"] = qps;
  sched["burst"] = burst;
  sched["configApiVersion"] = SchedulerConfigApiVersion(v);
  // v1beta1/v1beta2 configs always open kube-scheduler's unauthenticated healthz/metrics
  // listener: with --config, 1.20 ignores --port=0 and rejects a :0 port here. Binding it
  // to loopback keeps it inside the pod (or the host, out of cluster).
  sched["legacyBindAddresses"] = !v.AtLeast(23);
  sched["legacyBindAddress"] = fmt::format("127.0.0.1:{}", s.legacy_healthz_port);
  // Profiles carry their own percentageOfNodesToScore from 1.27; the top-level
  // field (kept everywhere) means the same with a single profile.
  sched["profilePercentage"] = v.AtLeast(27);
  sched["featureGates"] = SchedulerFeatureGates(v);
  ResourceScoring scoring = ResourceScoringFor(s.resource_scoring, v);
  sched["resourceScoring"] = s.resource_scoring;
  sched["scorePlugins"] = scoring.score_plugins;
  sched["fitScoringStrategy"] = scoring.fit_scoring_strategy;
  sched["kubeconfig"] = options.out_of_cluster ? json(options.kubeconfig_path) : json(false);

  json ext;
  ext["name"] = names.extender;
  ext["serviceAccount"] = names.extender;
  ext["clusterRole"] = names.extender_cluster_role;
  ext["configMap"] = names.extender_config_map;
  ext["tlsSecret"] = names.extender_tls_secret;
  ext["leaseName"] = names.extender_lease;
  ext["image"] = e.image;
  ext["replicas"] = e.replicas;
  ext["port"] = e.port;
  ext["opsPort"] = e.ops_port;
  ext["opsPortText"] = std::to_string(e.ops_port);
  ext["weight"] = e.weight;
  ext["ignorable"] = e.ignorable;
  ext["nodeCacheCapable"] = e.node_cache_capable;
  ext["httpTimeout"] = FormatDuration(
      ParseDuration(e.http_timeout).ok() ? *ParseDuration(e.http_timeout) : Duration(5000));
  ext["cpuRequest"] = e.cpu_request;
  ext["memoryRequest"] = e.memory_request;
  ext["memoryLimit"] = e.memory_limit;
  ext["urlPrefix"] = options.out_of_cluster
                         ? options.extender_url
                         : fmt::format("{}://{}:{}{}", tls ? "https" : "http", ExtenderHost(config),
                                       e.port, e.url_prefix_path);
  std::string dir = options.out_of_cluster ? options.cert_dir : kSchedulerTlsDir;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  ext["tls"] = {{"enabled", tls},
                {"mutual", mutual},
                // Out of cluster the URL names an address, so the certificate is checked against
                // the Service name.
                {"serverName", options.out_of_cluster ? json(ExtenderHost(config)) : json(false)},
                {"caFile", dir + "/ca.crt"},
                {"certFile", dir + (options.out_of_cluster ? "/client.crt" : "/tls.crt")},
                {"keyFile", dir + (options.out_of_cluster ? "/client.key" : "/tls.key")}};
  ext["configText"] = config::WriteConfigYaml(config, config::ConfigStyle::kPlain);
  const std::string config_text = ext["configText"].get<std::string>();
  ext["configHash"] =
      tls && options.keys != nullptr
          ? ConfigHash(config_text, {options.keys->ca_cert, options.keys->server_cert})
          : ConfigHash(config_text);

  const config::ModelSettings& m = config.predictor.model;
  json model;
  model["deployment"] = names.model;
  model["service"] = names.model;
  model["configMap"] = names.model_config_map;
  model["servingImage"] = m.serving_image;
  model["image"] = m.image.empty() ? json(false) : json(m.image);
  model["persistentVolumeClaim"] =
      m.persistent_volume_claim.empty() ? json(false) : json(m.persistent_volume_claim);
  model["grpcPort"] = m.grpc_port;
  model["restPort"] = m.rest_port;
  model["statusPath"] = "/v1/models/" + m.name;
  model["modelConfigText"] = ModelConfigText(m);

  json secrets = json::object();
  if (options.keys != nullptr) {
    secrets = {{"caCert", Base64Encode(options.keys->ca_cert)},
               {"serverCert", Base64Encode(options.keys->server_cert)},
               {"serverKey", Base64Encode(options.keys->server_key)},
               {"clientCert", Base64Encode(options.keys->client_cert)},
               {"clientKey", Base64Encode(options.keys->client_key)}};
  }

  ctx["scheduler"] = sched;
  ctx["extender"] = ext;
  ctx["model"] = model;
  ctx["secrets"] = secrets;
  ctx["policies"] = PoliciesContext(config);

  // The lb-agent runs the extender's image (one powerctl binary) with the same powerctl.yaml,
  // in a ConfigMap of its own so `apply lb` needs nothing of the extender component.
  json lb;
  lb["name"] = names.lb_agent;
  lb["serviceAccount"] = names.lb_agent;
  lb["clusterRole"] = names.lb_cluster_role;
  lb["configMap"] = names.lb_config_map;
  lb["image"] = e.image;
  lb["configHash"] = ConfigHash(config_text);  // the agent mounts no certificate
  lb["opsPort"] = config.lb.ops_port;
  lb["opsPortText"] = std::to_string(config.lb.ops_port);
  // The agent predicts as `predict --source local` does: NodeMetrics are read only when
  // they are the CPU source, so only then does its ClusterRole grant them.
  lb["metricsApi"] = config.telemetry.cpu_source == "metrics-api";
  ctx["lb"] = lb;
  ctx["consolidate"] = {{"serviceAccount", names.consolidate},
                        {"clusterRole", names.consolidate_cluster_role}};
  return ctx;
}

}  // namespace powerctl::manifests
