#pragma once
// The powerctl.yaml model: every setting with its default. The field table in
// config_schema.cpp documents each key, its environment variable and its range;
// `powerctl init` writes the file from that table, so the two cannot drift.
//
// Precedence: built-in defaults < config file < POWERCTL_* environment < flags (--set, -n, ...).

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace powerctl::config {

// One rule of a TASPolicy strategy (telemetry.intel.com/v1alpha1).
struct PolicyRule {
  std::string metric_name;
  std::string op;  // Equals | LessThan | GreaterThan
  std::int64_t target = 0;
  bool has_target = false;
  std::vector<std::string> labels;  // labeling strategy only: "key=value"
};

struct PolicyStrategy {
  std::string logical_operator;  // "" (anyOf) | allOf | anyOf
  std::vector<PolicyRule> rules;
};

// A telemetry policy, rendered as a TASPolicy object.
struct Policy {
  std::string name;
  std::string namespace_;  // "" means the pods' namespace is the powerctl namespace
  std::map<std::string, PolicyStrategy>
      strategies;  // dontschedule, scheduleonmetric, deschedule, labeling
};

// scheduler.resourceScoring: which resource score plugins the generated kube-scheduler profile
// runs beside powerctl's extender (docs/scheduler-profile.md has the measurements).
inline constexpr const char* kResourceScoringSpread = "spread";  // LeastAllocated + Balanced
inline constexpr const char* kResourceScoringPack = "pack";      // MostAllocated
inline constexpr const char* kResourceScoringNone = "none";      // power alone decides

struct SchedulerSettings {
  std::string name =
      "powerctl-scheduler";  // schedulerName pods set; also the profile and lease name
  std::string image;         // "" = registry.k8s.io/kube-scheduler:<target version>
  int replicas = 1;
  bool leader_elect = true;
  std::string resource_scoring = kResourceScoringSpread;
  // Deprecated (before resourceScoring): "" when not given, else "true" or "false". LoadConfig
  // turns true into resourceScoring none and ignores false, with a warning.
  std::string power_first;
  int expected_nodes = 100;  // sizes clientConnection qps/burst when they are 0
  int client_qps = 0;        // 0 = derived from expected_nodes
  int client_burst = 0;      // 0 = 2 x qps
  int verbosity = 2;
  // 1.20-1.22 only: v1beta1/v1beta2 configs always open an unauthenticated healthz/metrics
  // listener (--port=0 is ignored with --config); powerctl binds it to loopback on this port.
  int legacy_healthz_port = 10251;
};

struct ExtenderSettings {
  std::string image = "localhost/powerctl:0.1.0";  // required when the extender is generated
  int replicas = 1;
  int port = 8443;                // kube-scheduler's (m)TLS port
  int ops_port = 8080;            // plain: /healthz, /readyz, /metrics, read-only JSON
  std::string tls_mode = "mtls";  // mtls | tls | insecure
  std::string url_prefix_path = "/scheduler";
  int weight = 5;  // kube-scheduler multiplies scores (0..10) by weight x 10
  std::string http_timeout = "2s";
  bool ignorable = true;           // scheduling goes on when the extender is down
  bool node_cache_capable = true;  // send node names, not full Node objects
  // Requests naming more candidates are refused: Kubernetes supports 5,000 nodes, so this is
  // three times any real cluster, and it bounds the work and memory of one request.
  int max_request_nodes = 15000;
  std::string cpu_request = "100m";
  std::string memory_request = "64Mi";
  std::string memory_limit = "256Mi";
};

struct ModelSettings {
  std::string host;  // "" = the Service `powerctl generate model` creates (<model>.<namespace>.svc)
  std::string name = "power";
  std::string version;  // "" = latest
  std::string signature = "serving_default";
  std::string serving_image = "docker.io/tensorflow/serving:2.14.1";
  std::string image;  // an image holding the SavedModel under /models/<name>/<version>
  std::string persistent_volume_claim;  // or a PVC holding it
  int grpc_port = 8500;
  int rest_port = 8501;
};

// JSON protocols (tfserving-rest, v2): how the request is written and which output is read.
struct RestSettings {
  std::string request_form = "inputs";  // tfserving-rest: inputs | named-inputs | instances
  std::string input_name = "inputs";    // named-inputs and v2: the model's input tensor
  std::string output_name = "outputs";  // read when the model answers with several outputs
};

struct PredictorSettings {
  std::string backend = "builtin";  // builtin | tfserving-grpc | tfserving-rest | v2
  std::string timeout = "1s";       // deadline of one batched prediction call
  ModelSettings model;
  RestSettings rest;
};

struct SensorNames {
  std::vector<std::string> ambient{"Ambient", "Inlet Temp"};
  std::vector<std::string> cpu1{"CPU1", "CPU1 Temp"};
  std::vector<std::string> cpu2{"CPU2", "CPU2 Temp"};
};

struct TelemetrySettings {
  std::string cpu_source = "metrics-api";            // metrics-api | prometheus
  std::string temperature_source = "ipmi-exporter";  // ipmi-exporter | prometheus
  std::string prometheus_url = "http://prometheus.monitoring.svc:9090";
  std::string prometheus_cpu_query;  // "" = node_exporter's busy CPU (telemetry/sources.h)
  // Measured node power (telemetry/power_sources.h): ipmi | kepler | kepler-0.7 | rapl | promql.
  std::string power_source = "ipmi";
  std::string power_query;               // with promql: watts per node, one series per node
  std::string power_rate_window = "5m";  // counters' rate() window for a current reading
  // Measured GPU power (telemetry/gpu_power.h): none | kepler | dcgm.
  std::string gpu_power_source = "none";
  // Compare the model's watts with powerSource's continuously (predict/model_accuracy.h): the
  // extender's /metrics, doctor's model-accuracy check, explain pod. Off by default: it needs
  // the power source in Prometheus, which many clusters do not have.
  bool model_accuracy = false;
  double model_error_warn = 10;  // per cent: doctor WARNs about a node whose model is further off
  double model_error_fail = 25;  // per cent: ... FAILs
  int ipmi_exporter_port = 9290;
  std::string max_age = "2m";  // older readings count as missing
  std::string refresh_interval = "15s";
  SensorNames sensors;
};

// scoring.objective: what the power score ranks (scoring/power_score.h says why).
inline constexpr const char* kObjectiveFill = "fill";
inline constexpr const char* kObjectiveMarginal = "marginal";

struct ScoringSettings {
  double power_weight = 1.0;
  double policy_weight = 1.0;
  double real_usage_weight = 0.0;
  int unknown_score = 5;  // 0..10 for nodes without a prediction
  std::string objective = kObjectiveFill;
  // Power costs within this fraction of the cheapest count as ties: half of simulate's default
  // prediction error (10 %), since two nodes' errors partly cancel.
  double tie_tolerance = 0.05;
};

// `lb weights` and the lb-agent.
struct LbSettings {
  // CPU one request adds, for Services without the powerctl.io/cpu-per-request annotation
  // (WAO v2's default for its waok8s.github.io/cpu-per-request).
  std::string cpu_per_request = "100m";
  int unknown_weight = 50;  // 1..100 for endpoints whose node has no prediction
  // The lb-agent: nftables (its own table, ahead of kube-proxy) or ipvs (the weights of
  // kube-proxy's IPVS real servers, where kube-proxy runs in IPVS mode with wrr).
  std::string mode = "nftables";
  std::string resync_interval = "30s";  // predictions and Services are re-read this often
  int ops_port = 9447;                  // the agent's /healthz, /readyz, /metrics, /status
};

// `consolidate`: emptying nodes so they can be switched off.
struct ConsolidateSettings {
  // CPU fraction every node that receives moved pods keeps free: its requests with them stay
  // within (1 - headroom) of its allocatable, room for spikes and for pods still to come.
  double headroom = 0.2;
};

struct PowerctlConfig {
  std::string namespace_ = "powerctl";
  std::string kubernetes_version = "1.37";  // the newest known minor
  SchedulerSettings scheduler;
  ExtenderSettings extender;
  PredictorSettings predictor;
  TelemetrySettings telemetry;
  ScoringSettings scoring;
  LbSettings lb;
  ConsolidateSettings consolidate;
  std::vector<Policy> policies;
  // What LoadConfig noticed but accepted (deprecated keys), for the commands to show.
  std::vector<std::string> warnings;
};

// The tfserving backends are served by the model component (TensorFlow Serving); builtin and
// v2 need no model server of powerctl's.
inline bool PredictorNeedsModelServer(const PowerctlConfig& config) {
  return config.predictor.backend == "tfserving-grpc" ||
         config.predictor.backend == "tfserving-rest";
}

}  // namespace powerctl::config
