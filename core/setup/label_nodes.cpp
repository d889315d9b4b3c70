#include "core/setup/label_nodes.h"

#include "core/common/decimal.h"
#include "core/common/duration.h"
#include "core/common/names.h"
#include "core/kube/resources.h"
#include "core/predict/builtin_model.h"
#include "core/predict/node_params.h"
#include "core/setup/access.h"
#include "core/telemetry/temperature_history.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>

namespace powerctl::setup {
namespace {

using json = nlohmann::json;

Error Invalid(const std::string& message) {
  return MakeError(ErrorCode::kInvalidInput, message);
}

// Plain decimal only: MinimizePower reads labels with Go's strconv.ParseFloat, which rejects
// the hexadecimal ("0x12") std::strtod would let through; "inf" and "nan" are refused as
// well, since no label or annotation value means them.
Result<double> ParseNumber(const std::string& flag, const std::string& text) {
  std::optional<double> value = ParseDecimal(text);
  if (!value) return Invalid(fmt::format("{}: \"{}\" is not a number", flag, text));
  return *value;
}

// A built-in model parameter. The annotation reader takes only fixed-point decimal
// ("135.5"), so that is all the flag takes; each value is checked on its own here, and
// together with the node's other annotations in LabelNodes.
Status AddParameter(std::map<std::string, std::string>& annotations, const std::string& flag,
                    const std::optional<std::string>& text, const char* key) {
  if (!text) return OkStatus();
  std::optional<double> value = ParseDecimal(*text, DecimalForm::kFixed);
  if (!value) {
    return Invalid(fmt::format("{} {}: not a plain decimal number (like 135.5)", flag, *text));
  }
  // Every other parameter at a value that cannot be the one at fault, so the message
  // names this one.
  predict::BuiltinParams probe{0, predict::kMaxNodeWatts, 1, 0};
  if (flag == "--idle-watts") probe.idle_watts = *value;
  if (flag == "--max-watts") probe.max_watts = *value;
  if (flag == "--curve") probe.curve = *value;
  if (flag == "--temperature-factor") probe.temperature_factor = *value;
  if (flag == "--max-watts" && *value <= 0) {
    return Invalid(fmt::format("{} {}: max-watts must be greater than 0", flag, *text));
  }
  if (Status valid = predict::ValidateBuiltinParams(probe); !valid.ok()) {
    return Invalid(fmt::format("{} {}: {}", flag, *text, valid.error().message));
  }
  annotations[key] = *text;
  return OkStatus();
}

Status AddRange(std::map<std::string, std::string>& labels, const std::string& flag,
                const std::string& text, const char* min_key, const char* max_key) {
  std::size_t colon = text.find(':');
  if (colon == std::string::npos)
    return Invalid(fmt::format("{} {}: expected MIN:MAX, e.g. 18:35", flag, text));
  std::string min_text = text.substr(0, colon);
  std::string max_text = text.substr(colon + 1);
  POWERCTL_TRY(min, ParseNumber(flag, min_text));
  POWERCTL_TRY(max, ParseNumber(flag, max_text));
  if (!(max > min)) {
    return Invalid(fmt::format("{} {}: the maximum must be greater than the minimum", flag, text));
  }
  if (min < -50 || max > 150) {
    return Invalid(fmt::format("{} {}: outside -50..150 degrees Celsius", flag, text));
  }
  for (const std::string& v : {min_text, max_text}) {
    if (std::string why = ValidateLabelValue(v); !why.empty()) {
      return Invalid(fmt::format(
          "{} {}: \"{}\" is not a valid label value ({}); negative temperatures cannot be "
          "stored in labels",
          flag, text, v, why));
    }
  }
  labels[min_key] = min_text;
  labels[max_key] = max_text;
  return OkStatus();
}

Status AddValue(std::map<std::string, std::string>& labels, const std::string& flag,
                const std::optional<std::string>& value, const char* key) {
  if (!value) return OkStatus();
  if (value->empty()) return Invalid(fmt::format("{}: must not be empty", flag));
  if (std::string why = ValidateLabelValue(*value); !why.empty()) {
    return Invalid(fmt::format("{} {}: not a valid label value ({})", flag, *value, why));
  }
  labels[key] = *value;
  return OkStatus();
}

// One selected node and what it gets.
struct LabelPlan {
  json node;
  NodeChanges changes;
  NodeLabelResult result;
};

// --from-prometheus: each node's ranges from its own history. A node without usable history
// fails the command before anything changes, or with --skip-missing is left alone.
Status DeriveRanges(const telemetry::PrometheusClient& prometheus, const LabelNodesRequest& request,
                    std::vector<LabelPlan>& plans) {
  std::vector<telemetry::NodeInfo> infos;
  for (const LabelPlan& p : plans) infos.push_back(telemetry::NodeInfoFromJson(p.node));
  telemetry::TemperatureHistoryOptions options;
  options.window = request.window;
  options.sensors = request.sensors;
  options.mapping = request.mapping;
  POWERCTL_TRY(history, telemetry::FetchTemperatureHistory(prometheus, infos, options));
  // "7d" as the user wrote it rather than FormatDuration's "168h".
  const std::int64_t seconds = request.window.count();
  const std::string window =
      seconds % 86400 == 0 ? fmt::format("{}d", seconds / 86400)
                           : FormatDuration(std::chrono::duration_cast<Duration>(request.window));
  const std::string where =
      fmt::format("Prometheus at {} over the last {}", prometheus.url(), window);
  std::vector<std::string> problems;
  std::size_t usable = 0;
  for (LabelPlan& p : plans) {
    const telemetry::NodeTemperatureHistory& h = history[p.result.node];
    std::vector<std::string> why = h.missing;
    struct Role {
      const char* name;
      const std::optional<telemetry::SensorHistory>& history;
      const char* min_key;
      const char* max_key;
    };
    for (const Role& role :
         {Role{"ambient", h.ambient, kAmbientMin, kAmbientMax},
          Role{"cpu1", h.cpu1, kCpu1Min, kCpu1Max}, Role{"cpu2", h.cpu2, kCpu2Min, kCpu2Max}}) {
      if (!role.history) continue;
      std::string range = telemetry::WholeDegreeRange(*role.history);
      Status added = AddRange(p.changes.labels, fmt::format("derived {}", role.name), range,
                              role.min_key, role.max_key);
      if (!added.ok()) {
        why.push_back(added.error().message);
        continue;
      }
      p.result.derived.push_back(DerivedRange{role.name, role.history->sensor, role.history->min,
                                              role.history->max, role.history->samples, range});
    }
    if (why.empty()) {
      ++usable;
      continue;
    }
    p.result.skipped = fmt::format("{}", fmt::join(why, "; "));
    problems.push_back(fmt::format("node/{}: {}", p.result.node, p.result.skipped));
  }
  if (!problems.empty() && !request.skip_missing) {
    return MakeError(ErrorCode::kNotFound,
                     fmt::format("no usable temperature history in {} for {}; no node was changed "
                                 "(--skip-missing labels the other nodes)",
                                 where, fmt::join(problems, "; ")));
  }
  if (usable == 0) {
    return MakeError(ErrorCode::kNotFound,
                     fmt::format("no selected node has usable temperature history in {}: {}", where,
                                 fmt::join(problems, "; ")));
  }
  return OkStatus();
}

std::map<std::string, std::string> StringMap(const json& object) {
  std::map<std::string, std::string> out;
  for (const auto& [key, value] : object.items()) {
    if (value.is_string()) out[key] = value.get<std::string>();
  }
  return out;
}

// The keys of `desired` that differ on the node; a differing value without --overwrite is a
// conflict.
void Compare(const std::string& node, const std::map<std::string, std::string>& current,
             const std::map<std::string, std::string>& desired, const char* what, bool overwrite,
             std::vector<std::string>& changed, std::vector<std::string>& conflicts) {
  for (const auto& [key, value] : desired) {
    auto it = current.find(key);
    if (it == current.end()) {
      changed.push_back(key);
    } else if (it->second != value) {
      if (!overwrite)
        conflicts.push_back(
            fmt::format("node/{}: {}{} is {} (want {})", node, what, key, it->second, value));
      changed.push_back(key);
    }
  }
}

// The built-in parameters the node ends up with must be usable together: --idle-watts 400
// on a node annotated max-watts=350 would leave the node without a model.
std::optional<std::string> CheckParameters(const std::string& node,
                                           const std::map<std::string, std::string>& current,
                                           const std::map<std::string, std::string>& desired) {
  if (desired.empty()) return std::nullopt;
  std::map<std::string, std::string> merged = current;
  for (const auto& [key, value] : desired) merged[key] = value;
  auto params = predict::BuiltinParamsFromAnnotations(merged);
  if (params.ok()) return std::nullopt;
  std::vector<std::string> values;
  for (const char* key :
       {predict::kIdleWattsAnnotation, predict::kMaxWattsAnnotation, predict::kCurveAnnotation,
        predict::kTemperatureFactorAnnotation, predict::kPowerCurveAnnotation}) {
    if (auto it = merged.find(key); it != merged.end())
      values.push_back(fmt::format("{}={}", key, it->second));
  }
  return fmt::format("node/{}: {} (the node would have {})", node, params.error().message,
                     fmt::join(values, ", "));
}

}  // namespace

Result<std::vector<json>> SelectNodes(kube::Client& client, const std::vector<std::string>& names,
                                      const std::string& selector, bool all) {
  std::string collection = kube::CollectionPath(*kube::FindResourceType("Node"), "");
  if (!names.empty()) {
    std::vector<json> nodes;
    std::vector<std::string> missing;
    for (const std::string& name : names) {
      auto node = client.Get(collection + "/" + name);
      if (node.ok()) {
        nodes.push_back(*node);
      } else if (node.error().code == ErrorCode::kNotFound) {
        missing.push_back(name);
      } else {
        return node.error();
      }
    }
    if (!missing.empty()) {
      return MakeError(ErrorCode::kNotFound,
                       fmt::format("node{} not found: {}; no node was changed",
                                   missing.size() == 1 ? "" : "s", fmt::join(missing, ", ")));
    }
    return nodes;
  }
  kube::ListOptions options;
  options.label_selector = selector;
  POWERCTL_TRY(nodes, client.List(collection, options));
  if (nodes.empty()) {
    return MakeError(ErrorCode::kNotFound,
                     all ? "the cluster has no nodes" : "no node matches -l " + selector);
  }
  return nodes;
}

Result<NodeChanges> DesiredNodeChanges(const LabelNodesRequest& request) {
  int ways = (!request.nodes.empty() ? 1 : 0) + (!request.selector.empty() ? 1 : 0) +
             (request.all ? 1 : 0);
  if (ways != 1)
    return Invalid("name the nodes, or give -l SELECTOR, or --all (exactly one of them)");
  if (request.from_prometheus && (request.ambient || request.cpu1 || request.cpu2)) {
    return Invalid(
        "--from-prometheus derives the --ambient, --cpu1 and --cpu2 ranges; give either, not both");
  }
  if (request.from_prometheus && request.window.count() <= 0) {
    return Invalid("--window: must be longer than zero, e.g. 7d");
  }
  if (!request.from_prometheus && request.skip_missing) {
    return Invalid("--skip-missing only applies to --from-prometheus");
  }
  NodeChanges changes;
  auto& labels = changes.labels;
  if (request.ambient)
    POWERCTL_CHECK_OK(AddRange(labels, "--ambient", *request.ambient, kAmbientMin, kAmbientMax));
  if (request.cpu1)
    POWERCTL_CHECK_OK(AddRange(labels, "--cpu1", *request.cpu1, kCpu1Min, kCpu1Max));
  if (request.cpu2)
    POWERCTL_CHECK_OK(AddRange(labels, "--cpu2", *request.cpu2, kCpu2Min, kCpu2Max));
  POWERCTL_CHECK_OK(AddValue(labels, "--model-host", request.model_host, kModelHost));
  if (request.model_port) {
    char* end = nullptr;
    long port = std::strtol(request.model_port->c_str(), &end, 10);
    if (request.model_port->empty() || *end != '\0' || port < 1 || port > 65535) {
      return Invalid(
          fmt::format("--model-port {}: must be a port number 1-65535", *request.model_port));
    }
  }
  POWERCTL_CHECK_OK(AddValue(labels, "--model-port", request.model_port, kModelPort));
  POWERCTL_CHECK_OK(AddValue(labels, "--model-name", request.model_name, kModelName));
  POWERCTL_CHECK_OK(AddValue(labels, "--model-version", request.model_version, kModelVersion));
  POWERCTL_CHECK_OK(
      AddValue(labels, "--model-signature", request.model_signature, kModelSignature));

  auto& annotations = changes.annotations;
  POWERCTL_CHECK_OK(
      AddParameter(annotations, "--idle-watts", request.idle_watts, predict::kIdleWattsAnnotation));
  POWERCTL_CHECK_OK(
      AddParameter(annotations, "--max-watts", request.max_watts, predict::kMaxWattsAnnotation));
  POWERCTL_CHECK_OK(AddParameter(annotations, "--curve", request.curve, predict::kCurveAnnotation));
  POWERCTL_CHECK_OK(AddParameter(annotations, "--temperature-factor", request.temperature_factor,
                                 predict::kTemperatureFactorAnnotation));
  if (request.power_curve) {
    if (request.idle_watts || request.max_watts || request.curve) {
      return Invalid(
          "--power-curve gives the whole curve: it replaces --idle-watts, --max-watts and "
          "--curve, so give it alone");
    }
    auto curve = predict::ParsePowerCurve(*request.power_curve);
    if (!curve.ok()) return WithContext(curve.error(), "--power-curve " + *request.power_curve);
    annotations[predict::kPowerCurveAnnotation] = predict::FormatPowerCurve(*curve);
  }
  if (request.idle_watts && request.max_watts &&
      !(*ParseDecimal(*request.max_watts) > *ParseDecimal(*request.idle_watts))) {
    return Invalid(fmt::format("--max-watts {}: must be greater than --idle-watts {}",
                               *request.max_watts, *request.idle_watts));
  }
  if (labels.empty() && annotations.empty() && !request.from_prometheus) {
    return Invalid(
        "nothing to set: give --ambient, --cpu1, --cpu2 (or --from-prometheus), "
        "--model-host/--model-port/"
        "--model-name and/or --idle-watts/--max-watts/--curve/--temperature-factor or "
        "--power-curve");
  }
  return changes;
}

Result<std::map<std::string, std::string>> DesiredNodeLabels(const LabelNodesRequest& request) {
  POWERCTL_TRY(changes, DesiredNodeChanges(request));
  return changes.labels;
}

namespace {

// idle/max/curve written to a node that keeps a power curve: the model follows the curve, so
// the new values change nothing until it is removed. Said, not refused: calibrate writes both,
// and a curve may be removed later on purpose.
std::string ShadowedByCurve(const std::string& node, const std::map<std::string, std::string>& has,
                            const std::map<std::string, std::string>& sets) {
  if (!has.contains(predict::kPowerCurveAnnotation) ||
      sets.contains(predict::kPowerCurveAnnotation)) {
    return "";
  }
  for (const char* key :
       {predict::kIdleWattsAnnotation, predict::kMaxWattsAnnotation, predict::kCurveAnnotation}) {
    if (sets.contains(key)) {
      return fmt::format(
          "node/{0} has {1}, which the built-in model follows instead of idle-watts, max-watts "
          "and curve: the new values take effect once it is removed (kubectl annotate node {0} "
          "{1}-)",
          node, predict::kPowerCurveAnnotation);
    }
  }
  return "";
}

}  // namespace

Result<std::vector<NodeLabelResult>> LabelNodes(kube::Client& client,
                                                const LabelNodesRequest& request,
                                                const telemetry::PrometheusClient* prometheus) {
  POWERCTL_TRY(changes, DesiredNodeChanges(request));
  if (request.from_prometheus && prometheus == nullptr) {
    return MakeError(ErrorCode::kInternal, "--from-prometheus without a Prometheus client");
  }
  POWERCTL_TRY(nodes, SelectNodes(client, request.nodes, request.selector, request.all));

  std::vector<LabelPlan> plans;
  for (json& node : nodes) {
    LabelPlan plan{std::move(node), changes, {}};
    plan.result.node = plan.node["metadata"].value("name", "");
    plans.push_back(std::move(plan));
  }
  if (request.from_prometheus) POWERCTL_CHECK_OK(DeriveRanges(*prometheus, request, plans));

  std::vector<std::string> conflicts, invalid;
  for (LabelPlan& p : plans) {
    if (!p.result.skipped.empty()) continue;
    const json& metadata = p.node["metadata"];
    auto labels = StringMap(metadata.value("labels", json::object()));
    auto annotations = StringMap(metadata.value("annotations", json::object()));
    Compare(p.result.node, labels, p.changes.labels, "", request.overwrite, p.result.keys_changed,
            conflicts);
    Compare(p.result.node, annotations, p.changes.annotations, "annotation ", request.overwrite,
            p.result.keys_changed, conflicts);
    if (auto why = CheckParameters(p.result.node, annotations, p.changes.annotations))
      invalid.push_back(*why);
    p.result.changed = !p.result.keys_changed.empty();
    p.result.warning = ShadowedByCurve(p.result.node, annotations, p.changes.annotations);
  }
  if (!invalid.empty()) {
    return Invalid(fmt::format("{}; no node was changed", fmt::join(invalid, "; ")));
  }
  if (!conflicts.empty()) {
    return MakeError(ErrorCode::kConflict,
                     fmt::format("{}; use --overwrite to change existing values (no node was "
                                 "changed)",
                                 fmt::join(conflicts, "; ")));
  }
  POWERCTL_TRY(missing, MissingPermissions(client, {{"patch", "", "nodes", "", ""}}));
  if (!missing.empty()) return PermissionError("label nodes", missing);

  std::vector<NodeLabelResult> results;
  for (const LabelPlan& p : plans) results.push_back(p.result);
  if (request.dry_run == DryRunMode::kClient) return results;

  std::string collection = kube::CollectionPath(*kube::FindResourceType("Node"), "");
  for (const LabelPlan& p : plans) {
    if (!p.result.changed) continue;
    json patch = {{"metadata", json::object()}};
    for (const auto& [key, value] : p.changes.labels) patch["metadata"]["labels"][key] = value;
    for (const auto& [key, value] : p.changes.annotations)
      patch["metadata"]["annotations"][key] = value;
    auto patched = client.MergePatch(collection + "/" + p.result.node, patch,
                                     request.dry_run == DryRunMode::kServer);
    if (!patched.ok()) return WithContext(patched.error(), "labelling node/" + p.result.node);
  }
  return results;
}

}  // namespace powerctl::setup
