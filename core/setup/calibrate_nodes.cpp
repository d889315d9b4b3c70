#include "core/setup/calibrate_nodes.h"

#include "core/common/decimal.h"
#include "core/kube/resources.h"
#include "core/predict/builtin_model.h"
#include "core/predict/node_params.h"
#include "core/setup/access.h"
#include "core/setup/label_nodes.h"
#include "core/telemetry/kepler.h"

#include <fmt/format.h>

#include <cstdint>

namespace powerctl::setup {
namespace {

using json = nlohmann::json;

Error Invalid(const std::string& message) {
  return MakeError(ErrorCode::kInvalidInput, message);
}

std::string Seconds(std::chrono::seconds d) {
  return std::to_string(d.count()) + "s";
}

// node -> sample time (ms) -> value. When several series map to one node (two scrape jobs)
// the one with the most samples wins: averaging a BMC's reading with another is no better.
using ByNode = std::map<std::string, std::map<std::int64_t, double>>;

ByNode Index(const telemetry::QueryResult& result, const telemetry::NodeNameMapper& mapper) {
  ByNode out;
  for (const telemetry::PromSeries& series : result.series) {
    std::optional<std::string> node = mapper.Map(series.metric);
    if (!node) continue;
    std::map<std::int64_t, double> points;
    for (const telemetry::PromSample& s : series.samples) {
      points[std::chrono::duration_cast<std::chrono::milliseconds>(s.time.time_since_epoch())
                 .count()] = s.value;
    }
    auto& slot = out[*node];
    if (points.size() > slot.size()) slot = std::move(points);
  }
  return out;
}

// The power series a node has no history of, for the refusal.
std::string PowerHistoryName(const telemetry::PowerQuerySpec& power) {
  if (power.source == telemetry::PowerSource::kIpmi) return power.gauge_metric;
  return fmt::format("{} power", telemetry::PowerSourceName(power.source));
}

std::map<std::string, std::string> StringMap(const json& object) {
  std::map<std::string, std::string> out;
  for (const auto& [key, value] : object.items()) {
    if (value.is_string()) out[key] = value.get<std::string>();
  }
  return out;
}

std::map<std::string, std::string> Annotations(const predict::BuiltinParams& params) {
  // Fixed-point text that the annotation reader takes back ("1e2" it would refuse).
  return {{predict::kIdleWattsAnnotation, FormatDecimal(params.idle_watts, 1)},
          {predict::kMaxWattsAnnotation, FormatDecimal(params.max_watts, 1)},
          {predict::kCurveAnnotation, FormatDecimal(params.curve, 2)}};
}

// The curve form writes the curve and, beside it, the exponent fit (its R² is not the
// node's: the curve is what the model follows). When the exponent fit gave no valid model
// the curve was filled without it, and its ends with a straight line stand in.
std::map<std::string, std::string> CurveAnnotations(const NodeCalibration& c) {
  predict::BuiltinParams exponent = c.fit.params;
  if (!c.fit.fitted || !predict::ValidateBuiltinParams(exponent).ok()) {
    exponent.idle_watts = c.curve.points.front();
    exponent.max_watts = c.curve.points.back();
    exponent.curve = 1;
  }
  std::map<std::string, std::string> out = Annotations(exponent);
  out[predict::kPowerCurveAnnotation] = predict::FormatPowerCurve(c.curve.points);
  return out;
}

}  // namespace

Result<CalibrationForm> ParseCalibrationForm(std::string_view text) {
  if (text == "curve") return CalibrationForm::kCurve;
  if (text == "exponent") return CalibrationForm::kExponent;
  return Invalid(fmt::format("--form \"{}\": must be curve or exponent", text));
}

std::string_view CalibrationFormName(CalibrationForm form) {
  return form == CalibrationForm::kCurve ? "curve" : "exponent";
}

Status ValidateCalibrateRequest(const CalibrateRequest& request) {
  int ways = (!request.nodes.empty() ? 1 : 0) + (!request.selector.empty() ? 1 : 0) +
             (request.all ? 1 : 0);
  if (ways != 1) {
    return Invalid("name the nodes, or give -l SELECTOR, or --all (exactly one of them)");
  }
  if (request.step.count() <= 0) return Invalid("--step: must be at least 1s, e.g. 5m");
  if (request.window <= request.step) {
    return Invalid("--window: must be longer than --step (e.g. --window 7d --step 5m)");
  }
  if (request.window / request.step > kMaxRangePoints) {
    return Invalid(fmt::format(
        "--window {}s / --step {}s is {} points per node; Prometheus answers at most {}: use a "
        "larger --step",
        request.window.count(), request.step.count(), request.window / request.step,
        kMaxRangePoints));
  }
  if (!(request.fit.min_r2 >= 0 && request.fit.min_r2 <= 1)) {
    return Invalid("--min-r2: must be between 0 and 1");
  }
  if (!(request.fit.min_utilisation_range >= 0 && request.fit.min_utilisation_range <= 1)) {
    return Invalid("--min-utilisation-range: must be between 0 and 1");
  }
  if (request.fit.min_samples < 3) return Invalid("--min-samples: must be at least 3");
  if (request.fit.min_bin_samples < 1) return Invalid("--min-bin-samples: must be at least 1");
  if (request.power.source == telemetry::PowerSource::kIpmi && request.power.gauge_metric.empty()) {
    return Invalid("--power-metric: must not be empty");
  }
  if (request.power.source == telemetry::PowerSource::kPromQl &&
      request.power.custom_query.empty()) {
    return Invalid("--power-query: must be set with --power-source promql");
  }
  return OkStatus();
}

std::string UtilisationQuery(const CalibrateRequest& request) {
  return fmt::format("1 - avg by ({}) (rate(node_cpu_seconds_total{{mode=\"idle\"}}[{}]))",
                     request.mapping.GroupBy(), Seconds(request.step));
}

Result<telemetry::PowerQuery> PowerWattsQuery(const CalibrateRequest& request) {
  telemetry::PowerQuerySpec spec = request.power;
  spec.mapping = request.mapping;
  return telemetry::BuildPowerQuery(spec, request.step);
}

Result<CalibrationReport> CalibrateNodes(kube::Client& client,
                                         const telemetry::PrometheusClient& prometheus,
                                         const CalibrateRequest& request) {
  POWERCTL_CHECK_OK(ValidateCalibrateRequest(request));
  POWERCTL_TRY(nodes, SelectNodes(client, request.nodes, request.selector, request.all));

  const telemetry::WallTime end = request.end.value_or(std::chrono::system_clock::now());
  const telemetry::WallTime start = end - request.window;
  const auto step = std::chrono::duration_cast<std::chrono::milliseconds>(request.step);
  POWERCTL_TRY(utilisation, prometheus.QueryRange(UtilisationQuery(request), start, end, step));
  POWERCTL_TRY(power_query, PowerWattsQuery(request));
  POWERCTL_TRY(power, prometheus.QueryRange(power_query.promql, start, end, step));

  std::vector<telemetry::NodeInfo> infos;
  for (const json& node : nodes) infos.push_back(telemetry::NodeInfoFromJson(node));
  telemetry::NodeNameMapper mapper(infos, request.mapping);
  telemetry::NodeNameMapper power_mapper(infos, power_query.mapping);
  ByNode u_by_node = Index(utilisation, mapper);
  ByNode w_by_node = Index(power, power_mapper);

  // Which zones each node's Kepler series sum: RAPL's or hwmon's sensors.
  std::map<std::string, std::vector<std::string>> kepler_zones;
  if (request.power.source == telemetry::PowerSource::kKepler) {
    POWERCTL_TRY(zones, telemetry::KeplerZonesByNode(prometheus, infos, request.mapping));
    kepler_zones = std::move(zones);
  }
  // For nodes without power history: the other Kepler generation may be the one there.
  std::optional<std::vector<telemetry::KeplerGenerations>> generations;
  auto hint = [&](std::size_t i) {
    if (!generations) {
      auto found = telemetry::DetectKeplerGenerations(prometheus, infos, request.mapping);
      generations =
          found.ok() ? std::move(*found) : std::vector<telemetry::KeplerGenerations>(infos.size());
    }
    return telemetry::KeplerGenerationHint(request.power.source, (*generations)[i]);
  };
  const bool kepler_source = request.power.source == telemetry::PowerSource::kKepler ||
                             request.power.source == telemetry::PowerSource::kKepler07;

  CalibrationReport report;
  report.power_source = request.power.source;
  report.power_measures = power_query.measures;
  report.whole_server = power_query.whole_server;
  std::vector<std::string> refused;
  for (const json& node : nodes) {
    NodeCalibration c;
    c.node = node["metadata"].value("name", "");
    // Range queries evaluate both expressions at the same instants, so samples pair by time.
    std::vector<predict::PowerSample> samples;
    const auto& u = u_by_node[c.node];
    const auto& w = w_by_node[c.node];
    for (const auto& [t, watts] : w) {
      if (auto it = u.find(t); it != u.end()) samples.push_back({it->second, watts});
    }
    POWERCTL_TRY(fit, predict::FitBuiltinModel(samples, request.fit));
    c.fit = fit;
    c.form = request.form;
    c.refused = c.fit.refused;
    if (request.form == CalibrationForm::kCurve) {
      POWERCTL_TRY(curve, predict::FitPowerCurve(samples, c.fit, request.fit));
      c.curve = curve;
      c.refused = c.curve.refused;
      for (const predict::CurveBin& b : c.curve.bins) c.measured_steps += b.measured ? 1 : 0;
    }
    if (c.fit.samples > 0) c.load_range_covered = c.fit.utilisation_max - c.fit.utilisation_min;
    if (auto zones = kepler_zones.find(c.node); zones != kepler_zones.end())
      c.power_zones = telemetry::DescribeKeplerZones(zones->second);
    if (u.empty() || w.empty()) {
      c.refused = fmt::format("no {} history in Prometheus for this node",
                              u.empty() && w.empty() ? "power or CPU"
                              : u.empty()            ? "node_cpu_seconds_total"
                                                     : PowerHistoryName(request.power));
      if (w.empty() && kepler_source) {
        if (std::string why = hint(report.nodes.size()); !why.empty()) c.refused += ": " + why;
      }
    }
    if (c.refused.empty()) {
      auto current = StringMap(node["metadata"].value("annotations", json::object()));
      c.annotations =
          request.form == CalibrationForm::kCurve ? CurveAnnotations(c) : Annotations(c.fit.params);
      std::map<std::string, std::string> merged = current;
      for (const auto& [key, value] : c.annotations) {
        c.changed = c.changed || current[key] != value;
        merged[key] = value;
      }
      // A curve left behind would override the exponent fit just written.
      if (request.form == CalibrationForm::kExponent &&
          merged.erase(predict::kPowerCurveAnnotation) > 0) {
        c.removed.push_back(predict::kPowerCurveAnnotation);
        c.changed = true;
      }
      // The node's other parameter (temperature-factor) must still go with the new ones.
      if (auto params = predict::BuiltinParamsFromAnnotations(merged); !params.ok()) {
        c.refused = params.error().message;
        c.annotations.clear();
        c.removed.clear();
        c.changed = false;
      }
    }
    if (!c.refused.empty()) refused.push_back(fmt::format("node/{}: {}", c.node, c.refused));
    report.nodes.push_back(std::move(c));
  }

  if (!refused.empty() && !request.skip_unfit) {
    for (NodeCalibration& c : report.nodes) c.changed = false;
    report.not_written =
        fmt::format("{}; no node was changed (--skip-unfit writes the nodes that fit)",
                    fmt::join(refused, "; "));
    return report;
  }
  POWERCTL_TRY(missing, MissingPermissions(client, {{"patch", "", "nodes", "", ""}}));
  if (!missing.empty()) return PermissionError("calibrate", missing);
  if (request.dry_run == DryRunMode::kClient) return report;

  std::string collection = kube::CollectionPath(*kube::FindResourceType("Node"), "");
  for (const NodeCalibration& c : report.nodes) {
    if (!c.changed) continue;
    json annotations = c.annotations;
    for (const std::string& key : c.removed) annotations[key] = nullptr;  // merge patch: delete
    json patch = {{"metadata", {{"annotations", annotations}}}};
    auto patched =
        client.MergePatch(collection + "/" + c.node, patch, request.dry_run == DryRunMode::kServer);
    if (!patched.ok()) return WithContext(patched.error(), "annotating node/" + c.node);
  }
  return report;
}

Result<std::map<std::string, std::vector<double>>> MeasuredPowerCurves(
    kube::Client& client, const telemetry::PrometheusClient& prometheus,
    const telemetry::PowerQuerySpec& power) {
  CalibrateRequest request;
  request.all = true;
  request.skip_unfit = true;
  request.dry_run = DryRunMode::kClient;
  request.form = CalibrationForm::kCurve;
  request.power = power;
  auto report = CalibrateNodes(client, prometheus, request);
  if (!report.ok()) return report.error();
  std::map<std::string, std::vector<double>> curves;
  for (const NodeCalibration& node : report->nodes) {
    if (!node.refused.empty() || !node.curve.fitted || !node.curve.refused.empty()) continue;
    curves[node.node].assign(node.curve.points.begin(), node.curve.points.end());
  }
  return curves;
}

}  // namespace powerctl::setup
