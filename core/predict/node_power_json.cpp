#include "core/predict/node_power_json.h"

#include "core/predict/builtin_model.h"

#include <cmath>
#include <memory>
#include <string>

namespace powerctl::predict {
namespace {

using json = nlohmann::json;
using std::chrono::milliseconds;

json Number(const std::optional<double>& value) {
  return value ? json(*value) : json(nullptr);
}

json Seconds(milliseconds age) {
  return static_cast<double>(age.count()) / 1000.0;
}

json ReadingToJson(const telemetry::Reading& reading, telemetry::SteadyTime now) {
  json out = {{"value", Number(reading.value)}, {"source", reading.source}};
  if (reading.ok()) out["ageSeconds"] = Seconds(telemetry::Age(reading, now));
  if (!reading.missing_reason.empty()) out["missingReason"] = reading.missing_reason;
  return out;
}

json TemperatureToJson(const ModelTemperature& t, telemetry::SteadyTime now) {
  json out = ReadingToJson(t.reading, now);
  out["min"] = t.range ? json(t.range->min) : json(nullptr);
  out["max"] = t.range ? json(t.range->max) : json(nullptr);
  out["normalized"] = Number(t.normalized);
  if (!t.note.empty()) out["note"] = t.note;
  return out;
}

// The built-in model's parameters as the "model" object carries them: "form" says which of
// the two the node has ("curve": its 11 measured watts; "exponent": idle, max and exponent).
void BuiltinToJson(const BuiltinParams& b, json& model) {
  if (b.points != nullptr) {
    model["form"] = "curve";
    model["curve"] = json(*b.points);
  } else {
    model["form"] = "exponent";
    model["idleWatts"] = b.idle_watts;
    model["maxWatts"] = b.max_watts;
    model["exponent"] = b.curve;
  }
  model["temperatureFactor"] = b.temperature_factor;
}

// Field readers: absent or null is "not set"; any other wrong type fails the document.
struct Reader {
  std::string error;

  const json* Field(const json& object, const char* key, const std::string& where) {
    if (!object.is_object()) {
      Fail(where + ": not an object");
      return nullptr;
    }
    auto it = object.find(key);
    if (it == object.end() || it->is_null()) return nullptr;
    return &*it;
  }
  void Fail(const std::string& message) {
    if (error.empty()) error = message;
  }
  std::optional<double> OptNumber(const json& object, const char* key, const std::string& where) {
    const json* v = Field(object, key, where);
    if (v == nullptr) return std::nullopt;
    if (!v->is_number() || !std::isfinite(v->get<double>())) {
      Fail(where + "." + key + ": not a number");
      return std::nullopt;
    }
    return v->get<double>();
  }
  std::string String(const json& object, const char* key, const std::string& where) {
    const json* v = Field(object, key, where);
    if (v == nullptr) return "";
    if (!v->is_string()) {
      Fail(where + "." + key + ": not a string");
      return "";
    }
    return v->get<std::string>();
  }
  bool Bool(const json& object, const char* key, const std::string& where) {
    const json* v = Field(object, key, where);
    if (v == nullptr) return false;
    if (!v->is_boolean()) {
      Fail(where + "." + key + ": not a boolean");
      return false;
    }
    return v->get<bool>();
  }
  telemetry::Reading ReadingAt(const json& object, const std::string& where,
                               telemetry::SteadyTime now) {
    telemetry::Reading r;
    r.value = OptNumber(object, "value", where);
    r.source = String(object, "source", where);
    r.missing_reason = String(object, "missingReason", where);
    std::optional<double> age = OptNumber(object, "ageSeconds", where);
    if (age && *age >= 0 && *age < 1e9) {
      r.observed_at = now - milliseconds(static_cast<long long>(std::llround(*age * 1000)));
    } else {
      r.observed_at = now;
    }
    return r;
  }
  std::optional<double> Required(const json& object, const char* key, const std::string& where) {
    std::optional<double> v = OptNumber(object, key, where);
    if (!v) Fail(where + "." + key + ": missing");
    return v;
  }
  // What BuiltinToJson wrote; nullopt for a form this version does not know (or none: an
  // older extender, or a model server). The curve is at most kPowerCurvePoints numbers.
  std::optional<BuiltinParams> Builtin(const json& model, const std::string& where) {
    const std::string form = String(model, "form", where);
    BuiltinParams b;
    if (form == "curve") {
      const json* curve = Field(model, "curve", where);
      if (curve == nullptr || !curve->is_array() || curve->size() != kPowerCurvePoints) {
        Fail(where + ".curve: not a list of 11 watts");
        return std::nullopt;
      }
      PowerCurve points{};
      for (std::size_t i = 0; i < kPowerCurvePoints; ++i) {
        const json& w = (*curve)[i];
        if (!w.is_number() || !(w.get<double>() >= 0) || !(w.get<double>() <= kMaxNodeWatts)) {
          Fail(where + ".curve: not a list of 11 watts");
          return std::nullopt;
        }
        points[i] = w.get<double>();
      }
      b.points = std::make_shared<const PowerCurve>(points);
      b.idle_watts = points.front();
      b.max_watts = points.back();
    } else if (form == "exponent") {
      auto idle = Required(model, "idleWatts", where);
      auto max = Required(model, "maxWatts", where);
      auto exponent = Required(model, "exponent", where);
      if (!idle || !max || !exponent) return std::nullopt;
      b.idle_watts = *idle;
      b.max_watts = *max;
      b.curve = *exponent;
    } else {
      return std::nullopt;
    }
    if (auto factor = OptNumber(model, "temperatureFactor", where)) b.temperature_factor = *factor;
    return b;
  }
  ModelTemperature Temperature(const json& object, const std::string& where,
                               telemetry::SteadyTime now) {
    ModelTemperature t;
    t.reading = ReadingAt(object, where, now);
    std::optional<double> min = OptNumber(object, "min", where);
    std::optional<double> max = OptNumber(object, "max", where);
    if (min && max) t.range = TemperatureRange{*min, *max};
    t.normalized = OptNumber(object, "normalized", where);
    t.note = String(object, "note", where);
    return t;
  }
};

}  // namespace

json NodePowerToJson(const NodePower& p, telemetry::SteadyTime now) {
  json cpu = ReadingToJson(p.reading.cpu_cores_used, now);
  // "value" is the measurement; "usedCores" what the prediction (and the score) counts.
  cpu["unmeasuredRequestCores"] = p.unmeasured.cores;
  cpu["unmeasuredPods"] = p.unmeasured.pods;
  cpu["usedCores"] = Number(p.cpu_cores_used());
  cpu["capacityCores"] = Number(p.reading.cpu_capacity);
  cpu["fractionNow"] = Number(p.cpu_fraction_now);
  cpu["fractionAfter"] = Number(p.cpu_fraction_after);
  json model = {{"backend", p.model.backend}};
  if (p.model.backend != "builtin") {
    model["host"] = p.model.host;
    model["port"] = p.model.port;
    model["name"] = p.model.name;
    model["version"] = p.model.version;
    model["signature"] = p.model.signature;
  }
  if (p.builtin) BuiltinToJson(*p.builtin, model);
  json out = {{"node", p.node},
              {"cpu", cpu},
              {"temperatures",
               {{"ambient", TemperatureToJson(p.ambient, now)},
                {"cpu1", TemperatureToJson(p.cpu1, now)},
                {"cpu2", TemperatureToJson(p.cpu2, now)}}},
              {"model", model},
              {"wattsNow", Number(p.watts_now)},
              {"wattsAfter", Number(p.watts_after)},
              {"deltaWatts", Number(p.delta())},
              {"fillWattsPerCore", Number(p.fill_watts_per_core)},
              {"overcommitted", p.overcommitted},
              {"telemetryAgeSeconds", p.telemetry_age ? Seconds(*p.telemetry_age) : json(nullptr)},
              {"notes", p.notes}};
  if (!p.error.empty()) out["error"] = p.error;
  return out;
}

Result<NodePower> NodePowerFromJson(const json& object, telemetry::SteadyTime now) {
  Reader r;
  NodePower p;
  const std::string where = "node";
  p.node = r.String(object, "node", where);
  if (r.error.empty() && p.node.empty()) r.Fail("node.node: missing");
  std::string at = "node " + p.node;
  if (const json* cpu = r.Field(object, "cpu", at)) {
    p.reading.cpu_cores_used = r.ReadingAt(*cpu, at + ".cpu", now);
    p.reading.cpu_capacity = r.OptNumber(*cpu, "capacityCores", at + ".cpu");
    // Absent from older extenders, which added nothing.
    p.unmeasured.cores = r.OptNumber(*cpu, "unmeasuredRequestCores", at + ".cpu").value_or(0);
    p.unmeasured.pods =
        static_cast<int>(r.OptNumber(*cpu, "unmeasuredPods", at + ".cpu").value_or(0));
    p.cpu_fraction_now = r.OptNumber(*cpu, "fractionNow", at + ".cpu");
    p.cpu_fraction_after = r.OptNumber(*cpu, "fractionAfter", at + ".cpu");
  }
  p.reading.node = p.node;
  if (const json* temps = r.Field(object, "temperatures", at)) {
    if (const json* t = r.Field(*temps, "ambient", at))
      p.ambient = r.Temperature(*t, at + ".ambient", now);
    if (const json* t = r.Field(*temps, "cpu1", at)) p.cpu1 = r.Temperature(*t, at + ".cpu1", now);
    if (const json* t = r.Field(*temps, "cpu2", at)) p.cpu2 = r.Temperature(*t, at + ".cpu2", now);
    p.reading.ambient = p.ambient.reading;
    p.reading.cpu1 = p.cpu1.reading;
    p.reading.cpu2 = p.cpu2.reading;
  }
  if (const json* model = r.Field(object, "model", at)) {
    p.model.backend = r.String(*model, "backend", at + ".model");
    p.model.host = r.String(*model, "host", at + ".model");
    p.model.port = static_cast<int>(r.OptNumber(*model, "port", at + ".model").value_or(0));
    p.model.name = r.String(*model, "name", at + ".model");
    p.model.version = r.String(*model, "version", at + ".model");
    p.model.signature = r.String(*model, "signature", at + ".model");
    p.builtin = r.Builtin(*model, at + ".model");
  }
  p.watts_now = r.OptNumber(object, "wattsNow", at);
  p.watts_after = r.OptNumber(object, "wattsAfter", at);
  p.fill_watts_per_core = r.OptNumber(object, "fillWattsPerCore", at);
  p.overcommitted = r.Bool(object, "overcommitted", at);
  if (auto age = r.OptNumber(object, "telemetryAgeSeconds", at); age && *age >= 0 && *age < 1e9) {
    p.telemetry_age = milliseconds(static_cast<long long>(std::llround(*age * 1000)));
  }
  p.error = r.String(object, "error", at);
  if (const json* notes = r.Field(object, "notes", at)) {
    if (!notes->is_array()) r.Fail(at + ".notes: not a list");
    for (const json& note : notes->is_array() ? *notes : json::array()) {
      if (!note.is_string()) {
        r.Fail(at + ".notes: not a list of strings");
        break;
      }
      p.notes.push_back(note.get<std::string>());
    }
  }
  if (!r.error.empty()) return MakeError(ErrorCode::kApi, "prediction document: " + r.error);
  return p;
}

json PredictionDocument(const std::vector<NodePower>& nodes, double cpu_added,
                        telemetry::SteadyTime now) {
  json items = json::array();
  for (const NodePower& p : nodes) items.push_back(NodePowerToJson(p, now));
  return {{"apiVersion", "powerctl.io/v1alpha1"},
          {"kind", kPredictionKind},
          {"cpuAdded", cpu_added},
          {"nodes", items}};
}

Result<PredictionDocumentContents> ParsePredictionDocument(const json& document,
                                                           telemetry::SteadyTime now) {
  if (!document.is_object() || document.value("kind", json()) != kPredictionKind) {
    return MakeError(ErrorCode::kApi, "not a PowerPrediction document");
  }
  PredictionDocumentContents out;
  auto cpu = document.find("cpuAdded");
  if (cpu == document.end() || !cpu->is_number()) {
    return MakeError(ErrorCode::kApi, "prediction document: cpuAdded: not a number");
  }
  out.cpu_added = cpu->get<double>();
  auto nodes = document.find("nodes");
  if (nodes == document.end() || !nodes->is_array()) {
    return MakeError(ErrorCode::kApi, "prediction document: nodes: not a list");
  }
  for (const json& item : *nodes) {
    POWERCTL_TRY(node, NodePowerFromJson(item, now));
    out.nodes.push_back(std::move(node));
  }
  return out;
}

}  // namespace powerctl::predict
