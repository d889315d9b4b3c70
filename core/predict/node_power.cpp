#include "core/predict/node_power.h"

#include "core/common/decimal.h"
#include "core/predict/builtin_model.h"
#include "core/predict/node_params.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>

namespace powerctl::predict {
namespace {

using json = nlohmann::json;

// Below this many nodes per chunk, starting a thread costs more than it saves.
constexpr std::size_t kNodesPerChunk = 1024;

std::map<std::string, std::string> StringMap(const json& object) {
  std::map<std::string, std::string> out;
  if (!object.is_object()) return out;
  for (const auto& [key, value] : object.items()) {
    if (value.is_string()) out[key] = value.get<std::string>();
  }
  return out;
}

PreparedTemperature Normalize(const telemetry::Reading& reading, const NodeFacts& node,
                              const std::string& prefix) {
  PreparedTemperature t;
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
  // Read the way doctor reads these labels: plain decimal only (no hex, inf or nan), which
  // MinimizePower's Go ParseFloat accepts too.
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

PreparedNode PrepareNode(const NodeFacts& node, telemetry::NodeReading reading,
                         const config::PowerctlConfig& config, telemetry::SteadyTime now,
                         const std::shared_ptr<const ModelEndpoint>& usual_model) {
  PreparedNode out;
  out.node = node.name;
  out.reading = std::move(reading);
  out.ambient = Normalize(out.reading.ambient, node, "ambient");
  out.cpu1 = Normalize(out.reading.cpu1, node, "cpu1");
  out.cpu2 = Normalize(out.reading.cpu2, node, "cpu2");

  auto endpoint = ModelEndpointForNode(node.labels, config);
  if (!endpoint.ok()) {
    out.error = endpoint.error().message;
    return out;
  }
  out.model = usual_model != nullptr && *usual_model == *endpoint
                  ? usual_model
                  : std::make_shared<const ModelEndpoint>(std::move(*endpoint));
  const bool builtin = out.model->backend == "builtin";
  auto params = BuiltinParamsFromAnnotations(node.annotations);
  if (builtin && !params.ok()) {
    out.error = params.error().message;
    return out;
  }
  if (params.ok()) out.builtin = *params;
  const telemetry::Reading& cpu = out.reading.cpu_cores_used;
  if (!cpu.ok()) {
    out.error = "no CPU usage: " + cpu.missing_reason;
    return out;
  }
  if (!out.reading.cpu_capacity || !(*out.reading.cpu_capacity > 0)) {
    out.error = "node has no CPU capacity in its status";
    return out;
  }
  std::vector<std::string> missing;
  for (auto [temperature, field] :
       {std::pair{&out.ambient, &out.inputs.ambient}, std::pair{&out.cpu1, &out.inputs.cpu1},
        std::pair{&out.cpu2, &out.inputs.cpu2}}) {
    if (temperature->normalized) {
      *field = static_cast<float>(*temperature->normalized);
    } else {
      missing.push_back(temperature->note);
    }
  }
  if (!missing.empty()) {
    if (!builtin) {
      out.error = "model input missing: " + missing.front();
      return out;
    }
    for (const std::string& why : missing) out.notes.push_back(why + " (taken as nominal)");
  }
  // The age of the oldest input the prediction rests on.
  std::chrono::milliseconds age = telemetry::Age(cpu, now);
  for (auto [t, read] :
       {std::pair{&out.ambient, &out.reading.ambient}, std::pair{&out.cpu1, &out.reading.cpu1},
        std::pair{&out.cpu2, &out.reading.cpu2}}) {
    if (t->normalized) age = std::max(age, telemetry::Age(*read, now));
  }
  out.telemetry_age = age;
  return out;
}

namespace {

// Storage for the prediction rows, constructed and destroyed by the parallel chunks that
// fill and read them: a 5,000-node prioritize has 10,000 rows of about 250 bytes, and
// value-initialising and destroying them on the calling thread was a seventh of its time.
class RowStorage {
 public:
  explicit RowStorage(std::size_t n)
      : rows_(n > 0 ? std::allocator<PredictionRow>{}.allocate(n) : nullptr),
        built_(std::make_unique<bool[]>(n)),
        size_(n) {}
  ~RowStorage() {
    for (std::size_t i = 0; i < size_; ++i) Destroy(i);
    if (rows_ != nullptr) std::allocator<PredictionRow>{}.deallocate(rows_, size_);
  }
  RowStorage(const RowStorage&) = delete;
  RowStorage& operator=(const RowStorage&) = delete;

  PredictionRow& Construct(std::size_t i, PredictionRow row) {
    std::construct_at(rows_ + i, std::move(row));
    built_[i] = true;
    return rows_[i];
  }
  void Destroy(std::size_t i) {
    if (!built_[i]) return;
    std::destroy_at(rows_ + i);
    built_[i] = false;
  }
  PredictionRows All() const { return {rows_, size_}; }  // every row constructed

 private:
  PredictionRow* rows_;
  std::unique_ptr<bool[]> built_;
  std::size_t size_;
};

// The highest load fraction filling node i can reach: `reachable` cores above `used`
// (infinite or absent: its capacity).
double FillLimit(double used, double capacity, const std::vector<double>& reachable,
                 std::size_t i) {
  if (i >= reachable.size()) return 1.0;
  return FillLimitFraction(used, capacity, reachable[i]);
}

// Watts per core of the cheapest chord from where the node stands to any load from `after`
// up to `limit` (CheapestFillSlope). The built-in model's curve is read directly; a model
// server's is known at now, after and the limit only (`top`), so the cheaper of the two chords.
std::optional<double> FillCost(const PreparedNode& node, const PowerEstimate& estimate,
                               double limit, const Prediction* top) {
  const double now = *estimate.cpu_fraction_now;
  const double after = *estimate.cpu_fraction_after;
  const double cores = *node.reading.cpu_capacity;
  if (!(after > now)) return std::nullopt;
  if (top == nullptr) {
    ModelInputs inputs = node.inputs;
    inputs.cpu_fraction = static_cast<float>(now);
    auto slope = CheapestFillSlope(inputs, after, node.builtin, limit);
    if (!slope.ok()) return std::nullopt;
    return *slope / cores;
  }
  double slope = (*estimate.watts_after - *estimate.watts_now) / (after - now);
  if (top->watts && limit > after)
    slope = std::min(slope, (*top->watts - *estimate.watts_now) / (limit - now));
  return slope / cores;
}

}  // namespace

double FillLimitFraction(double used, double capacity, double reachable) {
  if (!(reachable < capacity)) return 1.0;
  return std::min(1.0, (used + std::max(0.0, reachable)) / capacity);
}

std::vector<PowerEstimate> EstimatePower(const std::vector<const PreparedNode*>& nodes,
                                         const std::vector<double>& unseen_cpu,
                                         double extra_cpu_cores, Predictor& predictor,
                                         std::chrono::milliseconds deadline, WorkerPool* pool,
                                         bool fill_cost,
                                         const std::vector<double>& fill_reachable_cpu) {
  std::vector<PowerEstimate> results(nodes.size());
  std::vector<double> fill_limit(fill_cost ? nodes.size() : 0, 1.0);
  // Rows per node that can be predicted: now and after, and, for the fill cost on a model
  // server, the highest load it can reach (the built-in model's curve is read directly:
  // CheapestFillSlope). Where each node's rows go is fixed first, so they can then be filled (and
  // read back) in parallel chunks.
  constexpr std::size_t kNoRow = static_cast<std::size_t>(-1);
  std::vector<std::size_t> first_row(nodes.size(), kNoRow);
  std::vector<std::uint8_t> rows_of(nodes.size(), 0);
  std::size_t row_count = 0;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (!nodes[i]->error.empty()) continue;
    const PreparedNode& node = *nodes[i];
    const bool builtin = node.model == nullptr || node.model->backend == "builtin";
    first_row[i] = row_count;
    rows_of[i] = fill_cost && !builtin ? 3 : 2;
    row_count += rows_of[i];
  }
  auto for_each_chunk = [&](const std::function<void(std::size_t, std::size_t)>& chunk) {
    if (pool != nullptr) {
      pool->ForEachChunk(nodes.size(), kNodesPerChunk, chunk);
    } else {
      chunk(0, nodes.size());
    }
  };
  RowStorage rows(row_count);
  for_each_chunk([&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) {
      const PreparedNode& node = *nodes[i];
      PowerEstimate& out = results[i];
      const telemetry::NodeReading& reading = node.reading;
      if (reading.cpu_cores_used.ok() && reading.cpu_capacity && *reading.cpu_capacity > 0) {
        // Usage above capacity happens (metrics windows, throttling); the model input is a
        // fraction.
        const double capacity = *reading.cpu_capacity;
        const double used =
            *reading.cpu_cores_used.value + (i < unseen_cpu.size() ? unseen_cpu[i] : 0.0);
        out.cpu_fraction_now = std::min(used / capacity, 1.0);
        out.overcommitted = used + extra_cpu_cores > capacity;
        out.cpu_fraction_after = std::min((used + extra_cpu_cores) / capacity, 1.0);
        if (fill_cost) fill_limit[i] = FillLimit(used, capacity, fill_reachable_cpu, i);
      }
      if (first_row[i] == kNoRow) {
        out.error = node.error;
        continue;
      }
      ModelInputs inputs = node.inputs;
      inputs.cpu_fraction = static_cast<float>(*out.cpu_fraction_now);
      PredictionRow& now =
          rows.Construct(first_row[i], PredictionRow{node.node, node.model, inputs, node.builtin});
      PredictionRow& after = rows.Construct(first_row[i] + 1, now);
      after.inputs.cpu_fraction = static_cast<float>(*out.cpu_fraction_after);
      if (rows_of[i] == 3)
        rows.Construct(first_row[i] + 2, now).inputs.cpu_fraction =
            static_cast<float>(fill_limit[i]);
    }
  });
  if (row_count == 0) return results;

  std::vector<Prediction> predictions = predictor.Predict(rows.All(), deadline);
  for_each_chunk([&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) {
      if (first_row[i] == kNoRow) continue;
      PowerEstimate& out = results[i];
      const std::size_t k = first_row[i];
      const std::size_t count = rows_of[i];
      for (std::size_t r = 0; r < count; ++r) rows.Destroy(k + r);
      if (k + count > predictions.size()) {
        out.error = "predictor returned too few results";
        continue;
      }
      const Prediction& now = predictions[k];
      const Prediction& after = predictions[k + 1];
      if (!now.watts) {
        out.error = now.error;
      } else if (!after.watts) {
        out.error = after.error;
      } else {
        out.watts_now = now.watts;
        out.watts_after = after.watts;
        if (fill_cost)
          out.fill_watts_per_core =
              FillCost(*nodes[i], out, fill_limit[i], count == 3 ? &predictions[k + 2] : nullptr);
      }
    }
  });
  return results;
}

std::vector<NodePower> PredictNodePower(
    const std::vector<NodeFacts>& nodes,
    const std::map<std::string, telemetry::NodeReading>& readings,
    const config::PowerctlConfig& config, Predictor& predictor, const PowerQuery& query) {
  std::vector<PreparedNode> prepared;
  prepared.reserve(nodes.size());
  for (const NodeFacts& node : nodes) {
    telemetry::NodeReading reading;
    if (auto found = readings.find(node.name); found != readings.end()) {
      reading = found->second;
    } else {
      reading.node = node.name;
      reading.cpu_cores_used = telemetry::MissingReading("no telemetry for this node");
    }
    prepared.push_back(PrepareNode(node, std::move(reading), config, query.now));
  }
  std::vector<const PreparedNode*> pointers;
  for (const PreparedNode& p : prepared) pointers.push_back(&p);
  std::vector<double> unmeasured_cores(nodes.size(), 0.0);
  for (std::size_t i = 0; i < nodes.size() && i < query.unmeasured.size(); ++i)
    unmeasured_cores[i] = query.unmeasured[i].cores;
  std::vector<PowerEstimate> estimates =
      EstimatePower(pointers, unmeasured_cores, query.extra_cpu_cores, predictor, query.deadline,
                    nullptr, query.fill_cost);

  std::vector<NodePower> results(nodes.size());
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    PreparedNode& p = prepared[i];
    PowerEstimate& e = estimates[i];
    NodePower& out = results[i];
    out.node = std::move(p.node);
    for (auto [to, from, reading] : {std::tuple{&out.ambient, &p.ambient, &p.reading.ambient},
                                     std::tuple{&out.cpu1, &p.cpu1, &p.reading.cpu1},
                                     std::tuple{&out.cpu2, &p.cpu2, &p.reading.cpu2}}) {
      *to = ModelTemperature{*reading, from->range, from->normalized, std::move(from->note)};
    }
    out.reading = std::move(p.reading);
    // EstimatePower adds it to a measured usage only; so is it shown.
    if (i < query.unmeasured.size() && out.reading.cpu_cores_used.ok())
      out.unmeasured = query.unmeasured[i];
    out.error = std::move(e.error);
    if (p.model != nullptr) out.model = *p.model;
    out.cpu_fraction_now = e.cpu_fraction_now;
    out.cpu_fraction_after = e.cpu_fraction_after;
    out.overcommitted = e.overcommitted;
    if (out.overcommitted) out.notes.push_back("the added CPU exceeds the node's capacity");
    // A node whose annotations do not parse has the defaults in `p.builtin` (and that error):
    // those are not its model, so they are not shown as such.
    if (query.fill_cost && p.model != nullptr && p.model->backend == "builtin" &&
        BuiltinParamsFromAnnotations(nodes[i].annotations).ok()) {
      out.builtin = p.builtin;
    }
    if (!p.error.empty()) continue;
    for (std::string& note : p.notes) out.notes.push_back(std::move(note));
    out.telemetry_age = p.telemetry_age;
    out.watts_now = e.watts_now;
    out.watts_after = e.watts_after;
    if (out.error.empty()) out.fill_watts_per_core = e.fill_watts_per_core;
  }
  return results;
}

std::vector<NodePower> PredictNodePowerWithFill(
    const std::vector<NodeFacts>& nodes,
    const std::map<std::string, telemetry::NodeReading>& readings,
    const config::PowerctlConfig& config, Predictor& predictor, PowerQuery query) {
  query.fill_cost = true;
  return PredictNodePower(nodes, readings, config, predictor, query);
}

}  // namespace powerctl::predict
