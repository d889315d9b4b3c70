#include "core/config/config_schema.h"

#include "core/common/duration.h"
#include "core/common/edit_distance.h"
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
  auto k = KubeVersion::Parse(v);
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

template <typename T>
FieldRef Ref(T* p) {
  return FieldRef(p);
}

// Keys in the order `powerctl init` writes them.
std::vector<FieldSpec> MakeFields() {
  using C = PowerctlConfig;
  std::vector<FieldSpec> f;
  auto add = [&](FieldSpec s) { f.push_back(std::move(s)); };
  add({"namespace",
       "Namespace for the extender, the scheduler and the model server",
       [](C& c) { return Ref(&c.namespace_); },
       {},
       0,
       0,
       CheckDnsLabel,
       true});
  add({"kubernetesVersion",
       "Target Kubernetes version (1.20 to 1.34) when --kube-version is not given",
       [](C& c) { return Ref(&c.kubernetes_version); },
       {},
       0,
       0,
       CheckKubeVersion,
       true});

  add({"scheduler.name",
       "schedulerName that pods set to use power-aware scheduling; also the lease name",
       [](C& c) { return Ref(&c.scheduler.name); },
       {},
       0,
       0,
       CheckDnsSubdomain,
       true});
  add({"scheduler.image",
       "kube-scheduler image; empty = registry.k8s.io/kube-scheduler:<target version>",
       [](C& c) { return Ref(&c.scheduler.image); },
       {},
       0,
       0,
       CheckImage});
  add({"scheduler.replicas",
       "kube-scheduler replicas (leader election picks one)",
       [](C& c) { return Ref(&c.scheduler.replicas); },
       {},
       1,
       10});
  add({"scheduler.leaderElect", "Use a Lease so several replicas can run",
       [](C& c) { return Ref(&c.scheduler.leader_elect); }});
  add({"scheduler.resourceScoring",
       "Resource scores of the generated profile beside power: spread (kube-scheduler's "
       "defaults), pack (MostAllocated) or none (power alone)",
       [](C& c) { return Ref(&c.scheduler.resource_scoring); },
       {kResourceScoringSpread, kResourceScoringPack, kResourceScoringNone},
       0,
       0,
       nullptr,
       true});
  add({"scheduler.powerFirst",
       "Deprecated: true is resourceScoring none; false is ignored",
       [](C& c) { return Ref(&c.scheduler.power_first); },
       {},
       0,
       0,
       CheckBoolText,
       false,
       true});
  add({"scheduler.expectedNodes",
       "Cluster size, used to size the client qps/burst when they are 0",
       [](C& c) { return Ref(&c.scheduler.expected_nodes); },
       {},
       1,
       100000});
  add({"scheduler.clientQPS",
       "API client queries per second; 0 = derived from expectedNodes",
       [](C& c) { return Ref(&c.scheduler.client_qps); },
       {},
       0,
       10000});
  add({"scheduler.clientBurst",
       "API client burst; 0 = twice the qps",
       [](C& c) { return Ref(&c.scheduler.client_burst); },
       {},
       0,
       20000});
  add({"scheduler.verbosity",
       "kube-scheduler --v log level",
       [](C& c) { return Ref(&c.scheduler.verbosity); },
       {},
       0,
       10});
  add({"scheduler.legacyHealthzPort",
       "1.20-1.22: loopback port of the scheduler's unauthenticated healthz/metrics",
       [](C& c) { return Ref(&c.scheduler.legacy_healthz_port); },
       {},
       1,
       65535});

  add({"extender.image",
       "powerctl image for the extender (required for the extender component)",
       [](C& c) { return Ref(&c.extender.image); },
       {},
       0,
       0,
       CheckImage,
       true});
  add({"extender.replicas",
       "Extender replicas",
       [](C& c) { return Ref(&c.extender.replicas); },
       {},
       1,
       20});
  add({"extender.port",
       "Port kube-scheduler calls (TLS per tlsMode)",
       [](C& c) { return Ref(&c.extender.port); },
       {},
       1,
       65535});
  add({"extender.opsPort",
       "Plain HTTP port for /healthz, /readyz, /metrics and read-only JSON",
       [](C& c) { return Ref(&c.extender.ops_port); },
       {},
       1,
       65535});
  add({"extender.tlsMode",
       "mtls (scheduler presents a client certificate), tls, or insecure (plain HTTP)",
       [](C& c) { return Ref(&c.extender.tls_mode); },
       {"mtls", "tls", "insecure"},
       0,
       0,
       nullptr,
       true});
  add({"extender.urlPrefixPath",
       "Path prefix of the filter/prioritize/preempt verbs",
       [](C& c) { return Ref(&c.extender.url_prefix_path); },
       {},
       0,
       0,
       CheckUrlPath});
  add({"extender.weight",
       "Extender weight: kube-scheduler adds score (0..10) x weight x 10 to plugin scores",
       [](C& c) { return Ref(&c.extender.weight); },
       {},
       1,
       100,
       nullptr,
       true});
  add({"extender.httpTimeout",
       "How long kube-scheduler waits for the extender",
       [](C& c) { return Ref(&c.extender.http_timeout); },
       {},
       0,
       0,
       CheckDuration});
  add({"extender.ignorable", "Keep scheduling when the extender is unreachable or fails",
       [](C& c) { return Ref(&c.extender.ignorable); }});
  add({"extender.nodeCacheCapable", "Send node names instead of full Node objects (faster)",
       [](C& c) { return Ref(&c.extender.node_cache_capable); }});
  add({"extender.maxRequestNodes",
       "Most candidate nodes one request may name (filter, prioritize, preempt, /v1/score); "
       "more get 400",
       [](C& c) { return Ref(&c.extender.max_request_nodes); },
       {},
       1,
       1000000});
  add({"extender.cpuRequest",
       "Extender container CPU request",
       [](C& c) { return Ref(&c.extender.cpu_request); },
       {},
       0,
       0,
       CheckQuantity});
  add({"extender.memoryRequest",
       "Extender container memory request",
       [](C& c) { return Ref(&c.extender.memory_request); },
       {},
       0,
       0,
       CheckQuantity});
  add({"extender.memoryLimit",
       "Extender container memory limit",
       [](C& c) { return Ref(&c.extender.memory_limit); },
       {},
       0,
       0,
       CheckQuantity});

  add({"predictor.backend",
       "Power model: builtin (no server), tfserving-grpc, tfserving-rest or v2",
       [](C& c) { return Ref(&c.predictor.backend); },
       {"builtin", "tfserving-grpc", "tfserving-rest", "v2"},
       0,
       0,
       nullptr,
       true});
  add({"predictor.timeout",
       "Deadline of one batched call to the model server",
       [](C& c) { return Ref(&c.predictor.timeout); },
       {},
       0,
       0,
       CheckDuration});
  add({"predictor.model.host",
       "Model server host for nodes without tensorflow/* labels; empty = the model Service",
       [](C& c) { return Ref(&c.predictor.model.host); },
       {},
       0,
       0,
       CheckHost});
  add({"predictor.model.name",
       "Model name on the model server",
       [](C& c) { return Ref(&c.predictor.model.name); },
       {},
       0,
       0,
       CheckDnsSubdomain});
  add({"predictor.model.version", "Model version; empty = latest",
       [](C& c) { return Ref(&c.predictor.model.version); }});
  add({"predictor.model.signature", "Model signature name",
       [](C& c) { return Ref(&c.predictor.model.signature); }});
  add({"predictor.model.servingImage",
       "TensorFlow Serving image for the model component",
       [](C& c) { return Ref(&c.predictor.model.serving_image); },
       {},
       0,
       0,
       CheckImage});
  add({"predictor.model.image",
       "Image holding the SavedModel at /models/<name>/<version> (or set persistentVolumeClaim)",
       [](C& c) { return Ref(&c.predictor.model.image); },
       {},
       0,
       0,
       CheckImage});
  add({"predictor.model.persistentVolumeClaim",
       "PVC holding the SavedModel at <name>/<version> (or set image)",
       [](C& c) { return Ref(&c.predictor.model.persistent_volume_claim); },
       {},
       0,
       0,
       CheckOptionalDnsSubdomain});
  add({"predictor.model.grpcPort",
       "TensorFlow Serving gRPC port",
       [](C& c) { return Ref(&c.predictor.model.grpc_port); },
       {},
       1,
       65535});
  add({"predictor.model.restPort",
       "TensorFlow Serving REST port",
       [](C& c) { return Ref(&c.predictor.model.rest_port); },
       {},
       1,
       65535});

  add({"predictor.rest.requestForm",
       "tfserving-rest request form: inputs (columnar), named-inputs or instances (row)",
       [](C& c) { return Ref(&c.predictor.rest.request_form); },
       {"inputs", "named-inputs", "instances"}});
  add({"predictor.rest.inputName",
       "Input tensor name (tfserving-rest named-inputs, v2)",
       [](C& c) { return Ref(&c.predictor.rest.input_name); },
       {},
       0,
       0,
       CheckTensorName});
  add({"predictor.rest.outputName",
       "Output tensor read when the model returns several (tfserving-rest, v2)",
       [](C& c) { return Ref(&c.predictor.rest.output_name); },
       {},
       0,
       0,
       CheckTensorName});

  add({"telemetry.cpuSource",
       "Node CPU usage from metrics-api (metrics.k8s.io) or prometheus",
       [](C& c) { return Ref(&c.telemetry.cpu_source); },
       {"metrics-api", "prometheus"},
       0,
       0,
       nullptr,
       true});
  add({"telemetry.temperatureSource",
       "Temperatures from ipmi-exporter (scraped per node) or prometheus",
       [](C& c) { return Ref(&c.telemetry.temperature_source); },
       {"ipmi-exporter", "prometheus"},
       0,
       0,
       nullptr,
       true});
  add({"telemetry.prometheusUrl",
       "Prometheus base URL",
       [](C& c) { return Ref(&c.telemetry.prometheus_url); },
       {},
       0,
       0,
       CheckUrl});
  add({"telemetry.ipmiExporterPort",
       "ipmi_exporter port on each node",
       [](C& c) { return Ref(&c.telemetry.ipmi_exporter_port); },
       {},
       1,
       65535});
  add({"telemetry.maxAge",
       "Readings older than this count as missing",
       [](C& c) { return Ref(&c.telemetry.max_age); },
       {},
       0,
       0,
       CheckDuration});
  add({"telemetry.refreshInterval",
       "How often telemetry is refreshed in the background",
       [](C& c) { return Ref(&c.telemetry.refresh_interval); },
       {},
       0,
       0,
       CheckDuration});
  add({"telemetry.sensors.ambient", "ipmi sensor names read as the ambient temperature",
       [](C& c) { return Ref(&c.telemetry.sensors.ambient); }});
  add({"telemetry.sensors.cpu1", "ipmi sensor names read as CPU1",
       [](C& c) { return Ref(&c.telemetry.sensors.cpu1); }});
  add({"telemetry.sensors.cpu2", "ipmi sensor names read as CPU2",
       [](C& c) { return Ref(&c.telemetry.sensors.cpu2); }});

  add({"scoring.powerWeight",
       "Weight of the power score",
       [](C& c) { return Ref(&c.scoring.power_weight); },
       {},
       0,
       100});
  add({"scoring.policyWeight",
       "Weight of scheduleonmetric policy scores",
       [](C& c) { return Ref(&c.scoring.policy_weight); },
       {},
       0,
       100});
  add({"scoring.realUsageWeight",
       "Weight of the real memory/CPU usage score",
       [](C& c) { return Ref(&c.scoring.real_usage_weight); },
       {},
       0,
       100});
  add({"scoring.unknownScore",
       "Score (0..10) for nodes whose power cannot be predicted",
       [](C& c) { return Ref(&c.scoring.unknown_score); },
       {},
       0,
       10});
  add({"scoring.objective",
       "What the power score ranks: fill (watts per core of the cheapest way to fill the node "
       "from its load, looking past the next pod) or marginal (the pod's own watts)",
       [](C& c) { return Ref(&c.scoring.objective); },
       {kObjectiveFill, kObjectiveMarginal}});
  add({"scoring.tieTolerance",
       "Power costs within this fraction of the cheapest node's count as ties (score 10)",
       [](C& c) { return Ref(&c.scoring.tie_tolerance); },
       {},
       0,
       1});

  add({"lb.cpuPerRequest",
       "CPU one request adds, for Services without the powerctl.io/cpu-per-request annotation",
       [](C& c) { return Ref(&c.lb.cpu_per_request); },
       {},
       0,
       0,
       CheckQuantity});
  add({"lb.unknownWeight",
       "Load-balancing weight (1..100) of endpoints whose node has no prediction",
       [](C& c) { return Ref(&c.lb.unknown_weight); },
       {},
       1,
       100});
  add({"lb.mode",
       "How the lb-agent balances: nftables (a table of its own) or ipvs (kube-proxy's weights)",
       [](C& c) { return Ref(&c.lb.mode); },
       {"nftables", "ipvs"}});
  add({"lb.resyncInterval",
       "How often the lb-agent re-reads predictions and Services (it also follows watches)",
       [](C& c) { return Ref(&c.lb.resync_interval); },
       {},
       0,
       0,
       CheckDuration});
  add({"lb.opsPort",
       "The lb-agent's plain HTTP port for /healthz, /readyz, /metrics and /status",
       [](C& c) { return Ref(&c.lb.ops_port); },
       {},
       1,
       65535});
  return f;
}

std::string Trim(std::string_view s) {
  std::size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

}  // namespace

const std::vector<FieldSpec>& ConfigFields() {
  static const std::vector<FieldSpec> fields = MakeFields();
  return fields;
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
    if (field.check != nullptr) {
      std::string why = field.check(text);
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
    if (text == "true" || text == "True" || text == "TRUE") {
      **b = true;
    } else if (text == "false" || text == "False" || text == "FALSE") {
      **b = false;
    } else {
      return fail(fmt::format("\"{}\" is not true or false", text));
    }
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

std::string SuggestField(std::string_view unknown_path) {
  std::string best;
  std::size_t best_distance = 4;  // farther than this is no suggestion
  for (const FieldSpec& f : ConfigFields()) {
    std::size_t d = EditDistance(unknown_path, f.path);
    if (d < best_distance) {
      best_distance = d;
      best = f.path;
    }
  }
  return best;
}

}  // namespace powerctl::config
