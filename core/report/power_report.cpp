#include "core/report/power_report.h"

#include "core/cluster/node_cache.h"
#include "core/cluster/pod_info.h"
#include "core/common/names.h"
#include "core/config/names.h"
#include "core/kube/quantity.h"
#include "core/predict/node_params.h"
#include "core/predict/node_power_json.h"
#include "core/predict/predictor_factory.h"
#include "core/scoring/node_cpu.h"
#include "core/telemetry/node_mapping.h"
#include "core/telemetry/sources.h"
#include "core/telemetry/telemetry_service.h"

#include <fmt/format.h>

namespace powerctl::report {
namespace {

using json = nlohmann::json;

Error Invalid(const std::string& message) {
  return MakeError(ErrorCode::kInvalidInput, message);
}

Result<std::vector<json>> SelectNodes(kube::Client& kube, const PredictRequest& request) {
  if (request.nodes.empty()) {
    kube::ListOptions options;
    options.label_selector = request.selector;
    POWERCTL_TRY(items, kube.List("/api/v1/nodes", options));
    if (items.empty()) {
      return MakeError(ErrorCode::kNotFound, request.selector.empty()
                                                 ? "the cluster has no nodes"
                                                 : "no nodes match selector " + request.selector);
    }
    return items;
  }
  std::vector<json> items;
  for (const std::string& name : request.nodes) {
    auto node = kube.Get("/api/v1/nodes/" + name);
    if (!node.ok()) {
      if (node.error().code == ErrorCode::kNotFound) {
        return MakeError(ErrorCode::kNotFound, "node \"" + name + "\" not found");
      }
      return node.error();
    }
    items.push_back(std::move(*node));
  }
  return items;
}

std::string Describe(const config::PowerctlConfig& config,
                     const telemetry::TelemetrySources& sources) {
  return fmt::format("computed locally: CPU from {}, temperatures from {}, model {}",
                     sources.cpu->Describe(), sources.temperature->Describe(),
                     config.predictor.backend);
}

Result<PowerReport> AskExtender(const std::vector<std::string>& names, const std::string& cpu_text,
                                const config::PowerctlConfig& config,
                                const PredictDependencies& deps) {
  std::string path = ExtenderPredictionsPath(config, names, cpu_text);
  auto document = deps.kube->Get(path);
  const std::string who =
      fmt::format("extender {}/{}", config.namespace_, config::NamesFor(config).extender);
  if (!document.ok()) return WithContext(document.error(), who);
  PowerReport report;
  report.now = deps.clock.now();
  auto contents = predict::ParsePredictionDocument(*document, report.now);
  if (!contents.ok()) return WithContext(contents.error(), who);
  report.from_extender = true;
  report.answered_by = who + " (through the API server's service proxy to its ops port)";
  report.cpu_added = contents->cpu_added;
  report.nodes = std::move(contents->nodes);
  return report;
}

// The pods bound to each of `nodes`, as the cluster cache keeps them (terminal ones left out).
void AddBoundPods(const std::vector<json>& pods, std::vector<cluster::NodeState>& nodes) {
  std::map<std::string, cluster::NodeState*, std::less<>> by_name;
  for (cluster::NodeState& node : nodes) by_name[node.name] = &node;
  for (const json& object : pods) {
    auto pod = std::make_shared<const cluster::PodInfo>(cluster::PodInfoFromJson(object));
    auto node = by_name.find(pod->node_name);
    if (pod->node_name.empty() || pod->Terminal() || node == by_name.end()) continue;
    node->second->requested.cpu_cores += pod->requests.cpu_cores;
    node->second->requested.memory_bytes += pod->requests.memory_bytes;
    node->second->pods.push_back(std::move(pod));
  }
}

// The cluster's pods that may hold resources (not Succeeded or Failed).
Result<std::vector<json>> ListLivePods(kube::Client& kube) {
  kube::ListOptions options;
  options.field_selector = "status.phase!=Succeeded,status.phase!=Failed";
  return kube.List("/api/v1/pods", options);
}

// GPU watts beside them, when telemetry.gpuPowerSource names an exporter.
void AddGpuPower(PowerReport& report, const std::vector<telemetry::NodeInfo>& infos,
                 const config::PowerctlConfig& config,
                 const telemetry::PrometheusClient& prometheus, std::chrono::seconds window) {
  auto warn = [&](const std::string& why) { report.warnings.push_back("GPU power: " + why); };
  auto source =
      telemetry::ParseGpuPowerSource(config.telemetry.gpu_power_source, "telemetry.gpuPowerSource");
  if (!source.ok()) return warn(source.error().message);
  if (*source == telemetry::GpuPowerSource::kNone) return;
  auto gpu = telemetry::FetchGpuPower(prometheus, infos, *source, window);
  if (!gpu.ok()) return warn(gpu.error().message);
  report.gpu_power = std::move(*gpu);
  report.gpu_source = std::string(telemetry::GpuPowerSourceName(*source));
}

// Measured watts beside the predictions. Prometheus failing is a warning: the predictions
// stand without them.
void AddMeasuredPower(PowerReport& report, const std::vector<json>& node_objects,
                      const config::PowerctlConfig& config, const PredictDependencies& deps) {
  auto warn = [&](const std::string& why) { report.warnings.push_back("measured power: " + why); };
  auto reading = telemetry::PowerReadingFromSettings(config.telemetry);
  if (!reading.ok()) return warn(reading.error().message);
  telemetry::PrometheusClient prometheus(
      *deps.http, telemetry::PrometheusOptions{config.telemetry.prometheus_url,
                                               std::chrono::seconds(5), deps.log});
  std::vector<telemetry::NodeInfo> infos;
  for (const json& node : node_objects) infos.push_back(telemetry::NodeInfoFromJson(node));
  auto measured = telemetry::FetchMeasuredPower(prometheus, infos, reading->spec, reading->window);
  if (!measured.ok()) return warn(measured.error().message);
  report.measured_power = std::move(*measured);
  report.measured_source = std::string(telemetry::PowerSourceName(reading->spec.source));
  AddGpuPower(report, infos, config, prometheus, reading->window);
}

}  // namespace

Result<PowerReport> PredictLocally(const std::vector<json>& node_objects, double cpu_added,
                                   const config::PowerctlConfig& config,
                                   const PredictDependencies& deps, const std::vector<json>* pods) {
  std::vector<telemetry::NodeInfo> infos;
  std::vector<predict::NodeFacts> facts;
  std::vector<std::string> names;
  std::vector<cluster::NodeState> states;
  for (const json& node : node_objects) {
    infos.push_back(telemetry::NodeInfoFromJson(node));
    facts.push_back(predict::NodeFactsFromJson(node));
    names.push_back(facts.back().name);
    states.push_back(cluster::NodeStateFromJson(node));
  }
  if (pods != nullptr) AddBoundPods(*pods, states);
  telemetry::SourceDependencies source_deps;
  source_deps.http = deps.http;
  source_deps.kube = deps.kube;
  source_deps.time.clock = deps.clock;
  source_deps.log = deps.log;
  POWERCTL_TRY(sources, telemetry::MakeTelemetrySources(config.telemetry, source_deps));
  POWERCTL_TRY(predictor, predict::MakeConfiguredPredictor(config.predictor, *deps.http));

  telemetry::TelemetryServiceOptions options;
  options.max_age = sources.max_age;
  options.refresh_interval = sources.refresh_interval;
  options.time = source_deps.time;
  options.log = deps.log;
  telemetry::TelemetryService service(
      *sources.cpu, *sources.temperature, [infos] { return infos; }, options);
  // Fetched once here; read below node by node, as the scoring path reads it.
  if (auto fetched = service.Readings(telemetry::Wait::kIfEmpty, names); !fetched.ok())
    return fetched.error();

  PowerReport report;
  report.answered_by = Describe(config, sources);
  report.cpu_added = cpu_added;
  report.now = deps.clock.now();
  predict::PowerQuery query;
  query.extra_cpu_cores = cpu_added;
  query.deadline = predictor.deadline;
  query.now = report.now;
  // Each node's CPU as the scores count it: the reading as prioritize reads it, plus the pods
  // bound to the node that its usage metrics cannot show yet.
  telemetry::TelemetryView view = service.View(telemetry::Wait::kNever);
  const auto wall_now = deps.wall_now();
  std::map<std::string, telemetry::NodeReading> readings;
  for (const cluster::NodeState& state : states) {
    scoring::NodeCpu cpu = scoring::NodeCpuOf(state, &view, wall_now);
    readings[state.name] = std::move(cpu.reading);
    query.unmeasured.push_back(cpu.unmeasured);
  }
  report.nodes =
      predict::PredictNodePowerWithFill(facts, readings, config, *predictor.predictor, query);
  return report;
}

Result<PredictSource> ParsePredictSource(const std::string& text) {
  if (text == "auto") return PredictSource::kAuto;
  if (text == "local") return PredictSource::kLocal;
  if (text == "extender") return PredictSource::kExtender;
  return Invalid("--source \"" + text + "\": must be auto, local or extender");
}

std::string ExtenderPredictionsPath(const config::PowerctlConfig& config,
                                    const std::vector<std::string>& nodes, const std::string& cpu) {
  // http:<service>:<port name>: the ops port is plain HTTP (the scheduler port is TLS).
  std::string path =
      fmt::format("/api/v1/namespaces/{}/services/http:{}:ops/proxy{}?cpu={}", config.namespace_,
                  config::NamesFor(config).extender, predict::kPredictionsPath, cpu);
  // Node names are DNS subdomains and CPU quantities [0-9.a-zA-Z+-]: nothing to escape.
  for (const std::string& node : nodes) path += "&node=" + node;
  return path;
}

Result<PowerReport> ReportPower(const PredictRequest& request, const config::PowerctlConfig& config,
                                const PredictDependencies& deps) {
  if (deps.kube == nullptr || deps.http == nullptr) {
    return MakeError(ErrorCode::kInternal, "ReportPower: missing dependencies");
  }
  auto cores = kube::ParseCpuCores(request.cpu);
  if (!cores.ok() || *cores < 0 || *cores > 1e6) {
    return Invalid("--cpu \"" + request.cpu + "\": not a CPU quantity (e.g. 1, 2.5 or 500m)");
  }
  for (const std::string& node : request.nodes) {
    if (std::string why = ValidateDnsSubdomain(node); !why.empty()) {
      return Invalid("node name \"" + node + "\": " + why);
    }
  }
  if (!request.nodes.empty() && !request.selector.empty()) {
    return Invalid("give node names or --selector, not both");
  }
  POWERCTL_TRY(node_objects, SelectNodes(*deps.kube, request));
  std::vector<std::string> names;
  for (const json& node : node_objects) names.push_back(predict::NodeFactsFromJson(node).name);

  std::string extender_failure;
  if (request.source != PredictSource::kLocal) {
    auto answer = AskExtender(names, request.cpu, config, deps);
    if (answer.ok() && request.measure_power) {
      AddMeasuredPower(*answer, node_objects, config, deps);
    }
    if (answer.ok() || request.source == PredictSource::kExtender) return answer;
    extender_failure = answer.error().message;
  }
  auto pods = ListLivePods(*deps.kube);
  POWERCTL_TRY(report,
               PredictLocally(node_objects, *cores, config, deps, pods.ok() ? &*pods : nullptr));
  if (!pods.ok()) {
    report.warnings.push_back(
        "pods could not be listed (" + pods.error().message +
        "): CPU requested by pods not yet in the usage metrics is not counted, which the "
        "scores count");
  }
  if (!extender_failure.empty()) {
    report.warnings.push_back("the extender did not answer (" + extender_failure +
                              "); computed locally");
  }
  if (request.measure_power) AddMeasuredPower(report, node_objects, config, deps);
  return report;
}

}  // namespace powerctl::report
