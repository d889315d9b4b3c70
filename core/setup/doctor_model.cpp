// The model against measured power, judged for doctor.

#include "core/setup/doctor_model.h"

#include "core/predict/node_power.h"
#include "core/predict/predictor_factory.h"
#include "core/telemetry/power_sources.h"
#include "core/telemetry/prometheus_client.h"
#include "core/telemetry/sources.h"
#include "core/telemetry/telemetry_service.h"

#include <fmt/format.h>

#include <algorithm>
#include <memory>

namespace powerctl::setup {
namespace {

using json = nlohmann::json;

// How many nodes a message names before "and N more".
constexpr std::size_t kNamed = 3;

std::string Percent(double fraction) {
  return fmt::format("{:.0f}%", fraction * 100);
}

}  // namespace

Result<predict::ModelAccuracy> MeasureModelAccuracy(kube::Client& client, HttpClient& http,
                                                    const config::PowerctlConfig& config,
                                                    const std::vector<std::string>& only) {
  std::vector<json> node_objects;
  if (only.empty()) {
    POWERCTL_TRY(items, client.List("/api/v1/nodes"));
    node_objects = std::move(items);
  } else {
    for (const std::string& name : only) {
      POWERCTL_TRY(node, client.Get("/api/v1/nodes/" + name));
      node_objects.push_back(std::move(node));
    }
  }
  std::vector<telemetry::NodeInfo> infos;
  std::vector<predict::NodeFacts> facts;
  std::vector<std::string> names;
  for (const json& node : node_objects) {
    infos.push_back(telemetry::NodeInfoFromJson(node));
    facts.push_back(predict::NodeFactsFromJson(node));
    names.push_back(facts.back().name);
  }

  POWERCTL_TRY(reading, telemetry::PowerReadingFromSettings(config.telemetry));
  telemetry::PrometheusClient prometheus(
      http, telemetry::PrometheusOptions{config.telemetry.prometheus_url, std::chrono::seconds(5),
                                         nullptr});
  POWERCTL_TRY(measured,
               telemetry::FetchMeasuredPower(prometheus, infos, reading.spec, reading.window));

  telemetry::SourceDependencies source_deps;
  source_deps.http = &http;
  source_deps.kube = &client;
  POWERCTL_TRY(sources, telemetry::MakeTelemetrySources(config.telemetry, source_deps));
  POWERCTL_TRY(predictor, predict::MakeConfiguredPredictor(config.predictor, http));
  telemetry::TelemetryServiceOptions options;
  options.max_age = sources.max_age;
  options.refresh_interval = sources.refresh_interval;
  options.time = source_deps.time;
  telemetry::TelemetryService service(
      *sources.cpu, *sources.temperature, [infos] { return infos; }, options);
  POWERCTL_TRY(readings, service.Readings(telemetry::Wait::kIfEmpty, names));
  // At the CPU the usage metrics measure, nothing added: what the measured watts also saw.
  predict::PowerQuery query;
  query.extra_cpu_cores = 0;
  query.deadline = predictor.deadline;
  query.now = source_deps.time.clock.now();
  return predict::CompareModel(
      predict::PredictNodePower(facts, readings, config, *predictor.predictor, query), measured);
}

CheckResult JudgeModelAccuracy(const predict::ModelAccuracy& accuracy,
                               const config::PowerctlConfig& config) {
  CheckResult r{kModelAccuracyCheckId, "The power model matches measured power", CheckStatus::kPass,
                "", ""};
  const auto& t = config.telemetry;
  const std::string source = t.power_source;
  if (accuracy.nodes.empty()) {
    r.status = CheckStatus::kWarn;
    std::string why;
    for (std::size_t i = 0; i < accuracy.not_compared.size() && i < kNamed; ++i) {
      why += fmt::format("{}{}: {}", i ? "; " : "", accuracy.not_compared[i].node,
                         accuracy.not_compared[i].reason);
    }
    if (accuracy.not_compared.size() > kNamed) {
      why += fmt::format("; and {} more", accuracy.not_compared.size() - kNamed);
    }
    r.message = fmt::format("no node has both a prediction and a measured power ({}){}", source,
                            why.empty() ? "" : ": " + why);
    r.fix = "powerctl predict -o wide; check that Prometheus at " + t.prometheus_url + " has the " +
            source + " series (docs/reference/power-metrics.md)";
    return r;
  }
  const double warn = t.model_error_warn / 100, fail = t.model_error_fail / 100;
  std::vector<const predict::NodeAccuracy*> off;
  for (const predict::NodeAccuracy& n : accuracy.nodes) {  // worst first
    if (n.relative_error >= warn) off.push_back(&n);
  }
  const std::string mean = Percent(*accuracy.mean_absolute_percentage_error);
  if (off.empty()) {
    r.message = fmt::format("{} node{} compared with measured {} power: mean error {}, worst {}",
                            accuracy.nodes.size(), accuracy.nodes.size() == 1 ? "" : "s", source,
                            mean, DescribeNodeAccuracy(*accuracy.Worst()));
    return r;
  }
  const bool failed = off.front()->relative_error >= fail;
  r.status = failed ? CheckStatus::kFail : CheckStatus::kWarn;
  std::string named;
  for (std::size_t i = 0; i < off.size() && i < kNamed; ++i) {
    named += (i ? "; " : "") + DescribeNodeAccuracy(*off[i]);
  }
  if (off.size() > kNamed) named += fmt::format("; and {} more", off.size() - kNamed);
  r.message = fmt::format(
      "{} of {} node{} {} {} or more off measured {} power (telemetry.modelErrorWarn; FAIL from "
      "modelErrorFail, {}): {}; mean error {}",
      off.size(), accuracy.nodes.size(), accuracy.nodes.size() == 1 ? "" : "s",
      off.size() == 1 ? "is" : "are", Percent(warn), source, Percent(fail), named, mean);
  std::string nodes;
  for (std::size_t i = 0; i < off.size() && i < kNamed; ++i) nodes += " " + off[i]->node;
  r.fix = fmt::format("fit each node's model to its measured power: powerctl calibrate{}{}", nodes,
                      off.size() > kNamed ? " (or --all)" : "");
  return r;
}

CheckResult CheckModelAccuracy(kube::Client& client, HttpClient* http,
                               const config::PowerctlConfig& config) {
  CheckResult r{kModelAccuracyCheckId, "The power model matches measured power", CheckStatus::kSkip,
                "", ""};
  if (!config.telemetry.model_accuracy) {
    r.message =
        "telemetry.modelAccuracy is off: no measured power to compare the model with (set it "
        "and telemetry.powerSource to check the model)";
    return r;
  }
  std::unique_ptr<HttpClient> owned;
  if (http == nullptr) {
    owned = MakeCurlHttpClient();
    http = owned.get();
  }
  auto accuracy = MeasureModelAccuracy(client, *http, config);
  if (!accuracy.ok()) {
    r.status = CheckStatus::kWarn;
    r.message = "cannot compare the model with measured power: " + accuracy.error().message;
    r.fix = "powerctl predict -o wide shows each node's prediction and measured power";
    return r;
  }
  return JudgeModelAccuracy(*accuracy, config);
}

}  // namespace powerctl::setup
