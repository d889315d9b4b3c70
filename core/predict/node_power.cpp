#include "core/predict/node_power.h"

#include "core/common/decimal.h"
#include "core/predict/node_params.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

namespace powerctl::predict {
namespace {

using json = nlohmann::json;

std::map<std::string, std::string> StringMap(const json& object) {
  std::map<std::string, std::string> out;
  if (!object.is_object()) return out;
  for (const auto& [key, value] : object.items()) {
    if (value.is_string()) out[key] = value.get<std::string>();
  }
  return out;
}

ModelTemperature Normalize(const telemetry::Reading& reading, const NodeFacts& node,
                           const std::string& prefix) {
  ModelTemperature t;
  t.reading = reading;
  std::string error;
  t.range = TemperatureRangeFromLabels(node.labels, prefix, &error);
  if (!error.empty()) {
    t.note = error;
  } else if (!t.range) {
    t.note = fmt::format("no {0}/min and {0}/max labels", prefix);
  } else if (!reading.ok()) {
    t.note = fmt::format("no {} temperature: {}", prefix, reading.missing_reason);
  } else {
    double n = (*reading.value - t.range->min) / (t.range->max - t.range->min);
    t.normalized = std::clamp(n, 0.0, 1.0);
  }
  return t;
}

}  // namespace

NodeFacts NodeFactsFromJson(const json& node) {
  NodeFacts facts;
  if (!node.is_object()) return facts;
  const json& metadata = node.value("metadata", json::object());
  if (!metadata.is_object()) return facts;
  if (metadata.contains("name") && metadata["name"].is_string()) {
    facts.name = metadata["name"].get<std::string>();
  }
  facts.labels = StringMap(metadata.value("labels", json::object()));
  facts.annotations = StringMap(metadata.value("annotations", json::object()));
  return facts;
}

std::optional<TemperatureRange> TemperatureRangeFromLabels(
    const std::map<std::string, std::string>& labels, const std::string& prefix,
    std::string* error) {
  auto min_it = labels.find(prefix + "/min");
  auto max_it = labels.find(prefix + "/max");
  if (min_it == labels.end() || max_it == labels.end()) return std::nullopt;
  // Read the way doctor and the seed read these labels (no hex, inf or nan).
  auto min = ParseDecimal(min_it->second);
  auto max = ParseDecimal(max_it->second);
  if (!min || !max || !(*max > *min)) {
    if (error != nullptr) {
      *error = fmt::format(
          "labels {0}/min={1} {0}/max={2}: not a range of decimal numbers with max > min", prefix,
          min_it->second, max_it->second);
    }
    return std::nullopt;
  }
  return TemperatureRange{*min, *max};
}

std::vector<NodePower> PredictNodePower(
    const std::vector<NodeFacts>& nodes,
    const std::map<std::string, telemetry::NodeReading>& readings,
    const manifests::PowerctlConfig& config, Predictor& predictor, const PowerQuery& query) {
  std::vector<NodePower> results(nodes.size());
  std::vector<PredictionRow> rows;
  std::vector<std::size_t> row_owner;  // rows come in pairs (now, after) per node
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const NodeFacts& node = nodes[i];
    NodePower& out = results[i];
    out.node = node.name;
    auto found = readings.find(node.name);
    if (found == readings.end()) {
      out.reading.node = node.name;
      out.reading.cpu_cores_used = telemetry::MissingReading("no telemetry for this node");
    } else {
      out.reading = found->second;
    }
    out.ambient = Normalize(out.reading.ambient, node, "ambient");
    out.cpu1 = Normalize(out.reading.cpu1, node, "cpu1");
    out.cpu2 = Normalize(out.reading.cpu2, node, "cpu2");

    auto endpoint = ModelEndpointForNode(node.labels, config);
    auto params = BuiltinParamsFromAnnotations(node.annotations);
    const telemetry::Reading& cpu = out.reading.cpu_cores_used;
    std::optional<double> capacity = out.reading.cpu_capacity;
    if (!endpoint.ok()) {
      out.error = endpoint.error().message;
      continue;
    }
    out.model = *endpoint;
    if (out.model.backend == "builtin" && !params.ok()) {
      out.error = params.error().message;
      continue;
    }
    if (!cpu.ok()) {
      out.error = "no CPU usage: " + cpu.missing_reason;
      continue;
    }
    if (!capacity || !(*capacity > 0)) {
      out.error = "node has no CPU capacity in its status";
      continue;
    }
    // Usage above capacity happens (metrics windows, throttling); the model input is a fraction.
    double used = *cpu.value;
    out.cpu_fraction_now = std::min(used / *capacity, 1.0);
    out.overcommitted = used + query.extra_cpu_cores > *capacity;
    out.cpu_fraction_after = std::min((used + query.extra_cpu_cores) / *capacity, 1.0);
    if (out.overcommitted) out.notes.push_back("the added CPU exceeds the node's capacity");

    bool builtin = out.model.backend == "builtin";
    ModelInputs inputs;
    inputs.cpu_fraction = static_cast<float>(*out.cpu_fraction_now);
    std::vector<std::string> missing;
    for (auto [temperature, field] :
         {std::pair{&out.ambient, &inputs.ambient}, std::pair{&out.cpu1, &inputs.cpu1},
          std::pair{&out.cpu2, &inputs.cpu2}}) {
      if (temperature->normalized) {
        *field = static_cast<float>(*temperature->normalized);
      } else {
        missing.push_back(temperature->note);
      }
    }
    if (!missing.empty()) {
      if (!builtin) {
        out.error = "model input missing: " + missing.front();
        continue;
      }
      for (const std::string& why : missing) out.notes.push_back(why + " (taken as nominal)");
    }
    // The age of the oldest input the prediction rests on.
    std::chrono::milliseconds age = telemetry::Age(cpu, query.now);
    for (const ModelTemperature* t : {&out.ambient, &out.cpu1, &out.cpu2}) {
      if (t->normalized) age = std::max(age, telemetry::Age(t->reading, query.now));
    }
    out.telemetry_age = age;

    PredictionRow row;
    row.node = node.name;
    row.model = out.model;
    row.inputs = inputs;
    if (params.ok()) row.builtin = *params;
    rows.push_back(row);
    row.inputs.cpu_fraction = static_cast<float>(*out.cpu_fraction_after);
    rows.push_back(row);
    row_owner.push_back(i);
  }
  if (rows.empty()) return results;

  std::vector<Prediction> predictions = predictor.Predict(rows, query.deadline);
  for (std::size_t k = 0; k < row_owner.size(); ++k) {
    NodePower& out = results[row_owner[k]];
    const Prediction* now = 2 * k < predictions.size() ? &predictions[2 * k] : nullptr;
    const Prediction* after = 2 * k + 1 < predictions.size() ? &predictions[2 * k + 1] : nullptr;
    if (now == nullptr || after == nullptr) {
      out.error = "predictor returned too few results";
    } else if (!now->watts) {
      out.error = now->error;
    } else if (!after->watts) {
      out.error = after->error;
    } else {
      out.watts_now = now->watts;
      out.watts_after = after->watts;
    }
  }
  return results;
}

}  // namespace powerctl::predict
