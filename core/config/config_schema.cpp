#include "core/config/config_schema.h"

#include "core/common/duration.h"
#include "core/common/edit_distance.h"
#include "core/common/encoding.h"
#include "core/common/kube_version.h"
#include "core/common/names.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>

namespace powerctl::config {
namespace {

std::string CheckDuration(const std::string& v) {
  auto d = ParseDuration(v);
  return d.ok() ? "" : d.error().message;
}
std::string CheckKubeVersion(const std::string& v) {
  auto k = KubeVersion::ParseRelease(v);
  return k.ok() ? "" : k.error().message;
}
std::string CheckDnsLabel(const std::string& v) {
  return ValidateDnsLabel(v);
}
std::string CheckDnsSubdomain(const std::string& v) {
  return ValidateDnsSubdomain(v);
}
std::string CheckQuantity(const std::string& v) {
  return ValidateQuantity(v);
}
std::string CheckImage(const std::string& v) {
  return v.empty() ? "" : ValidateImageReference(v);
}
std::string CheckOptionalDnsSubdomain(const std::string& v) {
  return v.empty() ? "" : ValidateDnsSubdomain(v);
}
std::string CheckUrlPath(const std::string& v) {
  if (v.empty() || v[0] != '/') return "must start with /";
  for (char c : v) {
    if (std::isspace(static_cast<unsigned char>(c)) || c == '?' || c == '#') {
      return "must be a plain URL path";
    }
  }
  return "";
}
std::string CheckBoolText(const std::string& v) {
  for (const char* ok : {"true", "True", "TRUE", "false", "False", "FALSE"}) {
    if (v == ok) return "";
  }
  return "\"" + v + "\" is not true or false";
}
std::string CheckUrl(const std::string& v) {
  if (v.rfind("http://", 0) != 0 && v.rfind("https://", 0) != 0)
    return "must start with http:// or https://";
  return "";
}

// A model server host: a DNS name or an IP address (IPv6 without brackets); empty allowed.
std::string CheckHost(const std::string& v) {
  if (v.empty()) return "";
  bool ipv6 = v.find(':') != std::string::npos;
  for (char c : v) {
    bool ok =
        std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || (ipv6 && c == ':');
    if (!ok) return "must be a host name or IP address";
  }
  return ipv6 ? "" : ValidateDnsSubdomain(v);
}
// A query sent to Prometheus as is: bounded, and one line (it is also written into the
// extender's ConfigMap).
std::string CheckPromQl(const std::string& v) {
  if (v.size() > 4096) return "must be at most 4096 characters";
  if (v.find_first_of("\r\n") != std::string::npos) return "must be one line";
  return "";
}
// Tensor names travel inside JSON request bodies and must match the model's signature.
std::string CheckTensorName(const std::string& v) {
  if (v.empty() || v.size() > 128) return "must be 1 to 128 characters";
  for (char c : v) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' ||
          c == '/' || c == ':')) {
      return "must be letters, digits and _-./:";
    }
  }
  return "";
}

// What each check accepts, in the words the configuration reference shows.
constexpr ValueCheck kDuration{CheckDuration, "a duration such as 30s, 5m or 1h30m"};
constexpr ValueCheck kKubeVersion{CheckKubeVersion,
                                  "a Kubernetes release: 1.36 (its newest patch) or 1.36.2"};
constexpr ValueCheck kDnsLabel{CheckDnsLabel,
                               "a DNS label: lower-case letters, digits and -, at most 63"};
constexpr ValueCheck kDnsSubdomain{
    CheckDnsSubdomain, "a DNS subdomain: lower-case letters, digits, - and ., at most 253"};
constexpr ValueCheck kOptionalDnsSubdomain{CheckOptionalDnsSubdomain, "empty, or a DNS subdomain"};
constexpr ValueCheck kQuantity{CheckQuantity, "a Kubernetes quantity such as 500m, 2 or 1.5"};
constexpr ValueCheck kImage{CheckImage,
                            "empty, or an image reference such as registry.example/powerctl:0.1.0"};
constexpr ValueCheck kUrlPath{CheckUrlPath, "a URL path starting with /"};
constexpr ValueCheck kBoolText{CheckBoolText, "true or false"};
constexpr ValueCheck kUrl{CheckUrl, "an http:// or https:// URL"};
constexpr ValueCheck kHost{CheckHost, "empty, or a host name or IP address"};
constexpr ValueCheck kPromQl{CheckPromQl, "empty, or one line of PromQL, at most 4096 characters"};
constexpr ValueCheck kTensorName{CheckTensorName, "1 to 128 letters, digits and _-./:"};

template <typename T>
FieldRef Ref(T* p) {
  return FieldRef(p);
}

// One row per key, in the order `powerctl init` writes them.
const std::vector<FieldSpec>& Fields() {
  using C = PowerctlConfig;
  static const std::vector<FieldSpec> fields = {
      {.path = "namespace",
       .help = "Namespace for the extender, the scheduler and the model server",
       .ref = [](C& c) { return Ref(&c.namespace_); },
       .check = kDnsLabel,
       .prompt = true},
      {.path = "kubernetesVersion",
       .help = "Target Kubernetes version (1.20 or later) when --kube-version is not given",
       .ref = [](C& c) { return Ref(&c.kubernetes_version); },
       .check = kKubeVersion,
       .prompt = true},

      {.path = "scheduler.name",
       .help = "schedulerName that pods set to use power-aware scheduling; also the lease name",
       .ref = [](C& c) { return Ref(&c.scheduler.name); },
       .check = kDnsSubdomain,
       .prompt = true},
      {.path = "scheduler.image",
       .help = "kube-scheduler image; empty = registry.k8s.io/kube-scheduler:<target version>",
       .ref = [](C& c) { return Ref(&c.scheduler.image); },
       .check = kImage},
      {.path = "scheduler.replicas",
       .help = "kube-scheduler replicas (leader election picks one)",
       .ref = [](C& c) { return Ref(&c.scheduler.replicas); },
       .min = 1,
       .max = 10},
      {.path = "scheduler.leaderElect",
       .help = "Use a Lease so several replicas can run",
       .ref = [](C& c) { return Ref(&c.scheduler.leader_elect); }},
      {.path = "scheduler.resourceScoring",
       .help = "Resource scores of the generated profile beside power: spread (kube-scheduler's "
               "defaults), pack (MostAllocated) or none (power alone)",
       .ref = [](C& c) { return Ref(&c.scheduler.resource_scoring); },
       .choices = {kResourceScoringSpread, kResourceScoringPack, kResourceScoringNone},
       .prompt = true},
      {.path = "scheduler.powerFirst",
       .help = "Deprecated: true is resourceScoring none; false is ignored",
       .ref = [](C& c) { return Ref(&c.scheduler.power_first); },
       .check = kBoolText,
       .deprecated = true},
      {.path = "scheduler.expectedNodes",
       .help = "Cluster size, used to size the client qps/burst when they are 0",
       .ref = [](C& c) { return Ref(&c.scheduler.expected_nodes); },
       .min = 1,
       .max = 100000},
      {.path = "scheduler.clientQPS",
       .help = "API client queries per second; 0 = derived from expectedNodes",
       .ref = [](C& c) { return Ref(&c.scheduler.client_qps); },
       .min = 0,
       .max = 10000},
      {.path = "scheduler.clientBurst",
       .help = "API client burst; 0 = twice the qps",
       .ref = [](C& c) { return Ref(&c.scheduler.client_burst); },
       .min = 0,
       .max = 20000},
      {.path = "scheduler.verbosity",
       .help = "kube-scheduler --v log level",
       .ref = [](C& c) { return Ref(&c.scheduler.verbosity); },
       .min = 0,
       .max = 10},
      {.path = "scheduler.legacyHealthzPort",
       .help = "1.20-1.22: loopback port of the scheduler's unauthenticated healthz/metrics",
       .ref = [](C& c) { return Ref(&c.scheduler.legacy_healthz_port); },
       .min = 1,
       .max = 65535},

      {.path = "extender.image",
       .help = "powerctl image for the extender (required for the extender component)",
       .ref = [](C& c) { return Ref(&c.extender.image); },
       .check = kImage,
       .prompt = true},
      {.path = "extender.replicas",
       .help = "Extender replicas",
       .ref = [](C& c) { return Ref(&c.extender.replicas); },
       .min = 1,
       .max = 20},
      {.path = "extender.port",
       .help = "Port kube-scheduler calls (TLS per tlsMode)",
       .ref = [](C& c) { return Ref(&c.extender.port); },
       .min = 1,
       .max = 65535},
      {.path = "extender.opsPort",
       .help = "Plain HTTP port for /healthz, /readyz, /metrics and read-only JSON",
       .ref = [](C& c) { return Ref(&c.extender.ops_port); },
       .min = 1,
       .max = 65535},
      {.path = "extender.tlsMode",
       .help = "mtls (scheduler presents a client certificate), tls, or insecure (plain HTTP)",
       .ref = [](C& c) { return Ref(&c.extender.tls_mode); },
       .choices = {"mtls", "tls", "insecure"},
       .prompt = true},
      {.path = "extender.urlPrefixPath",
       .help = "Path prefix of the filter/prioritize/preempt verbs",
       .ref = [](C& c) { return Ref(&c.extender.url_prefix_path); },
       .check = kUrlPath},
      {.path = "extender.weight",
       .help = "Extender weight: kube-scheduler adds score (0..10) x weight x 10 to plugin scores",
       .ref = [](C& c) { return Ref(&c.extender.weight); },
       .min = 1,
       .max = 100,
       .prompt = true},
      {.path = "extender.httpTimeout",
       .help = "How long kube-scheduler waits for the extender",
       .ref = [](C& c) { return Ref(&c.extender.http_timeout); },
       .check = kDuration},
      {.path = "extender.ignorable",
       .help = "Keep scheduling when the extender is unreachable or fails",
       .ref = [](C& c) { return Ref(&c.extender.ignorable); },
       .prompt = true},
      {.path = "extender.nodeCacheCapable",
       .help = "Send node names instead of full Node objects (faster)",
       .ref = [](C& c) { return Ref(&c.extender.node_cache_capable); }},
      {.path = "extender.maxRequestNodes",
       .help =
           "Most candidate nodes one request may name (filter, prioritize, preempt, /v1/score); "
           "more get 400",
       .ref = [](C& c) { return Ref(&c.extender.max_request_nodes); },
       .min = 1,
       .max = 1000000},
      {.path = "extender.cpuRequest",
       .help = "Extender container CPU request",
       .ref = [](C& c) { return Ref(&c.extender.cpu_request); },
       .check = kQuantity},
      {.path = "extender.memoryRequest",
       .help = "Extender container memory request",
       .ref = [](C& c) { return Ref(&c.extender.memory_request); },
       .check = kQuantity},
      {.path = "extender.memoryLimit",
       .help = "Extender container memory limit",
       .ref = [](C& c) { return Ref(&c.extender.memory_limit); },
       .check = kQuantity},

      {.path = "predictor.backend",
       .help = "Power model: builtin (no server), tfserving-grpc, tfserving-rest or v2",
       .ref = [](C& c) { return Ref(&c.predictor.backend); },
       .choices = {"builtin", "tfserving-grpc", "tfserving-rest", "v2"},
       .prompt = true},
      {.path = "predictor.timeout",
       .help = "Deadline of one batched call to the model server",
       .ref = [](C& c) { return Ref(&c.predictor.timeout); },
       .check = kDuration},
      {.path = "predictor.model.host",
       .help = "Model server host for nodes without tensorflow/* labels; empty = the model Service",
       .ref = [](C& c) { return Ref(&c.predictor.model.host); },
       .check = kHost},
      {.path = "predictor.model.name",
       .help = "Model name on the model server",
       .ref = [](C& c) { return Ref(&c.predictor.model.name); },
       .check = kDnsSubdomain},
      {.path = "predictor.model.version",
       .help = "Model version; empty = latest",
       .ref = [](C& c) { return Ref(&c.predictor.model.version); }},
      {.path = "predictor.model.signature",
       .help = "Model signature name",
       .ref = [](C& c) { return Ref(&c.predictor.model.signature); }},
      {.path = "predictor.model.servingImage",
       .help = "TensorFlow Serving image for the model component",
       .ref = [](C& c) { return Ref(&c.predictor.model.serving_image); },
       .check = kImage},
      {.path = "predictor.model.image",
       .help = "Image holding the SavedModel at /models/<name>/<version> (or set "
               "persistentVolumeClaim)",
       .ref = [](C& c) { return Ref(&c.predictor.model.image); },
       .check = kImage,
       .prompt = true,
       .ask_if = [](const C& c) { return PredictorNeedsModelServer(c); }},
      {.path = "predictor.model.persistentVolumeClaim",
       .help = "PVC holding the SavedModel at <name>/<version> (or set image)",
       .ref = [](C& c) { return Ref(&c.predictor.model.persistent_volume_claim); },
       .check = kOptionalDnsSubdomain,
       .prompt = true,
       .ask_if =
           [](const C& c) {
             return PredictorNeedsModelServer(c) && c.predictor.model.image.empty();
           }},
      {.path = "predictor.model.grpcPort",
       .help = "TensorFlow Serving gRPC port",
       .ref = [](C& c) { return Ref(&c.predictor.model.grpc_port); },
       .min = 1,
       .max = 65535},
      {.path = "predictor.model.restPort",
       .help = "TensorFlow Serving REST port",
       .ref = [](C& c) { return Ref(&c.predictor.model.rest_port); },
       .min = 1,
       .max = 65535},

      {.path = "predictor.rest.requestForm",
       .help = "tfserving-rest request form: inputs (columnar), named-inputs or instances (row)",
       .ref = [](C& c) { return Ref(&c.predictor.rest.request_form); },
       .choices = {"inputs", "named-inputs", "instances"}},
      {.path = "predictor.rest.inputName",
       .help = "Input tensor name (tfserving-rest named-inputs, v2)",
       .ref = [](C& c) { return Ref(&c.predictor.rest.input_name); },
       .check = kTensorName},
      {.path = "predictor.rest.outputName",
       .help = "Output tensor read when the model returns several (tfserving-rest, v2)",
       .ref = [](C& c) { return Ref(&c.predictor.rest.output_name); },
       .check = kTensorName},

      {.path = "telemetry.cpuSource",
       .help = "Node CPU usage from metrics-api (metrics.k8s.io) or prometheus",
       .ref = [](C& c) { return Ref(&c.telemetry.cpu_source); },
       .choices = {"metrics-api", "prometheus"},
       .prompt = true},
      {.path = "telemetry.prometheusCpuQuery",
       .help = "With cpuSource prometheus: PromQL giving each node's busy CPU in cores, one "
               "series per node; empty = node_exporter's node_cpu_seconds_total",
       .ref = [](C& c) { return Ref(&c.telemetry.prometheus_cpu_query); },
       .check = kPromQl},
      {.path = "telemetry.temperatureSource",
       .help = "Temperatures from ipmi-exporter (scraped per node) or prometheus",
       .ref = [](C& c) { return Ref(&c.telemetry.temperature_source); },
       .choices = {"ipmi-exporter", "prometheus"},
       .prompt = true},
      {.path = "telemetry.prometheusUrl",
       .help = "Prometheus base URL",
       .ref = [](C& c) { return Ref(&c.telemetry.prometheus_url); },
       .check = kUrl,
       .prompt = true,
       .ask_if =
           [](const C& c) {
             return c.telemetry.cpu_source == "prometheus" ||
                    c.telemetry.temperature_source == "prometheus";
           }},
      {.path = "telemetry.powerSource",
       .help = "Measured node power: ipmi (ipmi_exporter's DCMI gauge), kepler (Kepler 0.10+, CPU "
               "and DRAM), kepler-0.7 (Kepler 0.7-0.9's platform energy), rapl (node_exporter, CPU "
               "and DRAM) or promql (telemetry.powerQuery)",
       .ref = [](C& c) { return Ref(&c.telemetry.power_source); },
       .choices = {"ipmi", "kepler", "kepler-0.7", "rapl", "promql"}},
      {.path = "telemetry.powerQuery",
       .help = "With powerSource promql: PromQL giving each node's power in watts, one series "
               "per node",
       .ref = [](C& c) { return Ref(&c.telemetry.power_query); },
       .check = kPromQl},
      {.path = "telemetry.powerRateWindow",
       .help = "Window over which energy counters (kepler, kepler-0.7, rapl) become watts for a "
               "current reading; at least two scrape intervals",
       .ref = [](C& c) { return Ref(&c.telemetry.power_rate_window); },
       .check = kDuration},
      {.path = "telemetry.gpuPowerSource",
       .help = "Measured GPU power, shown per node by predict -o wide and doctor: none, kepler "
               "(Kepler 0.11.4+ GPU metrics) or dcgm (NVIDIA dcgm-exporter); averaged over "
               "powerRateWindow",
       .ref = [](C& c) { return Ref(&c.telemetry.gpu_power_source); },
       .choices = {"none", "kepler", "dcgm"}},
      {.path = "telemetry.modelAccuracy",
       .help = "Compare the model's predicted watts with powerSource's measured watts: per-node "
               "errors on the extender's /metrics, doctor's model-accuracy check, explain pod",
       .ref = [](C& c) { return Ref(&c.telemetry.model_accuracy); }},
      {.path = "telemetry.modelErrorWarn",
       .help = "doctor's model-accuracy check warns when a node's predicted watts are this many "
               "per cent off its measured watts",
       .ref = [](C& c) { return Ref(&c.telemetry.model_error_warn); },
       .min = 0,
       .max = 1000},
      {.path = "telemetry.modelErrorFail",
       .help = "doctor's model-accuracy check fails at this many per cent off (at least "
               "modelErrorWarn)",
       .ref = [](C& c) { return Ref(&c.telemetry.model_error_fail); },
       .min = 0,
       .max = 1000},
      {.path = "telemetry.ipmiExporterPort",
       .help = "ipmi_exporter port on each node",
       .ref = [](C& c) { return Ref(&c.telemetry.ipmi_exporter_port); },
       .min = 1,
       .max = 65535},
      {.path = "telemetry.maxAge",
       .help = "Readings older than this count as missing",
       .ref = [](C& c) { return Ref(&c.telemetry.max_age); },
       .check = kDuration},
      {.path = "telemetry.refreshInterval",
       .help = "How often telemetry is refreshed in the background",
       .ref = [](C& c) { return Ref(&c.telemetry.refresh_interval); },
       .check = kDuration},
      {.path = "telemetry.sensors.ambient",
       .help = "ipmi sensor names read as the ambient temperature",
       .ref = [](C& c) { return Ref(&c.telemetry.sensors.ambient); }},
      {.path = "telemetry.sensors.cpu1",
       .help = "ipmi sensor names read as CPU1",
       .ref = [](C& c) { return Ref(&c.telemetry.sensors.cpu1); }},
      {.path = "telemetry.sensors.cpu2",
       .help = "ipmi sensor names read as CPU2",
       .ref = [](C& c) { return Ref(&c.telemetry.sensors.cpu2); }},

      {.path = "scoring.powerWeight",
       .help = "Weight of the power score",
       .ref = [](C& c) { return Ref(&c.scoring.power_weight); },
       .min = 0,
       .max = 100},
      {.path = "scoring.policyWeight",
       .help = "Weight of scheduleonmetric policy scores",
       .ref = [](C& c) { return Ref(&c.scoring.policy_weight); },
       .min = 0,
       .max = 100},
      {.path = "scoring.realUsageWeight",
       .help = "Weight of the real memory/CPU usage score",
       .ref = [](C& c) { return Ref(&c.scoring.real_usage_weight); },
       .min = 0,
       .max = 100},
      {.path = "scoring.unknownScore",
       .help = "Score (0..10) for nodes whose power cannot be predicted",
       .ref = [](C& c) { return Ref(&c.scoring.unknown_score); },
       .min = 0,
       .max = 10},
      {.path = "scoring.objective",
       .help =
           "What the power score ranks: fill (watts per core of the cheapest way to fill the node "
           "from its load, looking past the next pod) or marginal (the pod's own watts)",
       .ref = [](C& c) { return Ref(&c.scoring.objective); },
       .choices = {kObjectiveFill, kObjectiveMarginal}},
      {.path = "scoring.tieTolerance",
       .help = "Power costs within this fraction of the cheapest node's count as ties (score 10)",
       .ref = [](C& c) { return Ref(&c.scoring.tie_tolerance); },
       .min = 0,
       .max = 1},

      {.path = "lb.cpuPerRequest",
       .help =
           "CPU one request adds, for Services without the powerctl.io/cpu-per-request annotation",
       .ref = [](C& c) { return Ref(&c.lb.cpu_per_request); },
       .check = kQuantity},
      {.path = "lb.unknownWeight",
       .help = "Load-balancing weight (1..100) of endpoints whose node has no prediction",
       .ref = [](C& c) { return Ref(&c.lb.unknown_weight); },
       .min = 1,
       .max = 100},
      {.path = "lb.mode",
       .help = "How the lb-agent balances: nftables (a table of its own) or ipvs (kube-proxy's "
               "weights)",
       .ref = [](C& c) { return Ref(&c.lb.mode); },
       .choices = {"nftables", "ipvs"}},
      {.path = "lb.resyncInterval",
       .help = "How often the lb-agent re-reads predictions and Services (it also follows watches)",
       .ref = [](C& c) { return Ref(&c.lb.resync_interval); },
       .check = kDuration},
      {.path = "lb.opsPort",
       .help = "The lb-agent's plain HTTP port for /healthz, /readyz, /metrics and /status",
       .ref = [](C& c) { return Ref(&c.lb.ops_port); },
       .min = 1,
       .max = 65535},

      {.path = "consolidate.headroom",
       .help = "CPU fraction (0..0.9) each node that receives moved pods keeps free when "
               "consolidate plans which nodes to empty",
       .ref = [](C& c) { return Ref(&c.consolidate.headroom); },
       .min = 0,
       .max = 0.9},
  };
  return fields;
}

std::string Trim(std::string_view s) {
  std::size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

}  // namespace

const std::vector<FieldSpec>& ConfigFields() {
  return Fields();
}

const FieldSpec* FindConfigField(std::string_view path) {
  for (const FieldSpec& f : ConfigFields()) {
    if (f.path == path) return &f;
  }
  return nullptr;
}

std::string EnvVarName(std::string_view path) {
  std::string out = "POWERCTL_";
  char prev = '_';
  for (char c : path) {
    if (c == '.') {
      out += '_';
    } else if (std::isupper(static_cast<unsigned char>(c)) && prev != '_' && prev != '.' &&
               !std::isupper(static_cast<unsigned char>(prev))) {
      out += '_';
      out += c;
    } else {
      out += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
    prev = c;
  }
  return out;
}

Status SetFieldFromText(PowerctlConfig& config, const FieldSpec& field, std::string_view raw) {
  std::string text = Trim(raw);
  auto fail = [&](const std::string& why) {
    return MakeError(ErrorCode::kInvalidInput, fmt::format("{}: {}", field.path, why));
  };
  for (char c : text) {
    // Every setting is one line; a control character would corrupt the YAML powerctl writes.
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      return fail("must not contain control characters");
  }
  if (text.size() > 1024) return fail("longer than 1024 characters");
  FieldRef ref = field.ref(config);
  if (auto* s = std::get_if<std::string*>(&ref)) {
    if (!field.choices.empty() &&
        std::find(field.choices.begin(), field.choices.end(), text) == field.choices.end()) {
      return fail(fmt::format("\"{}\" is not one of: {}", text, fmt::join(field.choices, ", ")));
    }
    if (field.check.fn != nullptr) {
      std::string why = field.check.fn(text);
      if (!why.empty()) return fail(why);
    }
    **s = text;
  } else if (auto* i = std::get_if<int*>(&ref)) {
    long long value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size()) {
      return fail(fmt::format("\"{}\" is not an integer", text));
    }
    if (field.min < field.max && (value < field.min || value > field.max)) {
      return fail(fmt::format("must be between {} and {} (got {})", field.min, field.max, value));
    }
    **i = static_cast<int>(value);
  } else if (auto* d = std::get_if<double*>(&ref)) {
    char* end = nullptr;
    std::string copy = text;
    double value = std::strtod(copy.c_str(), &end);
    if (copy.empty() || end != copy.c_str() + copy.size() || !std::isfinite(value)) {
      return fail(fmt::format("\"{}\" is not a number", text));
    }
    if (field.min < field.max && (value < field.min || value > field.max)) {
      return fail(fmt::format("must be between {} and {} (got {})", field.min, field.max, text));
    }
    **d = value;
  } else if (auto* b = std::get_if<bool*>(&ref)) {
    std::optional<bool> value = ParseBoolWord(text);
    if (!value) return fail(fmt::format("\"{}\" is not true or false (or yes or no)", text));
    **b = *value;
  } else if (std::holds_alternative<std::vector<std::string>*>(ref)) {
    std::vector<std::string> items;
    std::size_t start = 0;
    while (start <= text.size()) {
      std::size_t comma = text.find(',', start);
      if (comma == std::string::npos) comma = text.size();
      std::string item = Trim(std::string_view(text).substr(start, comma - start));
      if (!item.empty()) items.push_back(item);
      start = comma + 1;
    }
    return SetFieldFromList(config, field, items);
  }
  return OkStatus();
}

Status SetFieldFromList(PowerctlConfig& config, const FieldSpec& field,
                        const std::vector<std::string>& items) {
  FieldRef ref = field.ref(config);
  auto* list = std::get_if<std::vector<std::string>*>(&ref);
  if (list == nullptr) {
    return MakeError(ErrorCode::kInvalidInput,
                     fmt::format("{}: expected a single value, not a list", field.path));
  }
  for (const std::string& item : items) {
    for (char c : item) {
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
        return MakeError(ErrorCode::kInvalidInput,
                         fmt::format("{}: must not contain control characters", field.path));
      }
    }
  }
  if (items.empty()) {
    return MakeError(ErrorCode::kInvalidInput,
                     fmt::format("{}: needs at least one name", field.path));
  }
  **list = items;
  return OkStatus();
}

std::string FieldValueText(PowerctlConfig& config, const FieldSpec& field) {
  FieldRef ref = field.ref(config);
  if (auto* s = std::get_if<std::string*>(&ref)) return **s;
  if (auto* i = std::get_if<int*>(&ref)) return std::to_string(**i);
  if (auto* d = std::get_if<double*>(&ref)) return fmt::format("{}", **d);
  if (auto* b = std::get_if<bool*>(&ref)) return **b ? "true" : "false";
  if (auto* l = std::get_if<std::vector<std::string>*>(&ref))
    return fmt::format("{}", fmt::join(**l, ","));
  return "";
}

std::optional<bool> ParseBoolWord(std::string_view text) {
  if (text.size() > 5) return std::nullopt;  // "false" is the longest word
  const std::string lower = AsciiLower(text);
  for (const char* yes : {"true", "yes", "y", "on"}) {
    if (lower == yes) return true;
  }
  for (const char* no : {"false", "no", "n", "off"}) {
    if (lower == no) return false;
  }
  return std::nullopt;
}

std::string SuggestField(std::string_view unknown_path) {
  std::vector<std::string_view> paths;
  for (const FieldSpec& f : ConfigFields()) paths.push_back(f.path);
  return ClosestMatch(unknown_path, paths, 4);  // farther than 3 is no suggestion
}

}  // namespace powerctl::config
