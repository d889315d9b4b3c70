#pragma once
// The power model boundary: many (node, inputs) rows in, watts out, with a reason per
// row that could not be predicted. Backends: the built-in model, TensorFlow Serving gRPC
// and REST, and the V2 (Open) Inference Protocol.

#include <array>
#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace powerctl::predict {

// The four model inputs, in the order WAO's MinimizePower model takes them
// (docs/reference/minimizepower.md, "The model call"), each already normalised:
// CPU use as a fraction of capacity; temperatures min-max normalised with the node's labels.
struct ModelInputs {
  float cpu_fraction = 0;
  float ambient = 0;
  float cpu1 = 0;
  float cpu2 = 0;
};

// Which model predicts a row. Rows with equal Key() go to the server in one request.
struct ModelEndpoint {
  std::string backend = "builtin";  // builtin | tfserving-grpc | tfserving-rest | v2
  std::string host;                 // model servers only
  int port = 0;
  std::string name;
  std::string version;    // "" = latest
  std::string signature;  // TF Serving only; "" = serving_default

  bool operator==(const ModelEndpoint&) const = default;
  std::string Key() const {
    return backend + "|" + host + ":" + std::to_string(port) + "|" + name + "|" + version + "|" +
           signature;
  }
};

// A node's measured power curve: watts at active idle and at each 10 % load step up to 100 %,
// the levels SPECpower_ssj2008 reports; non-decreasing.
inline constexpr std::size_t kPowerCurvePoints = 11;
using PowerCurve = std::array<double, kPowerCurvePoints>;

// Per-node parameters of the built-in model (from node annotations, with defaults).
struct BuiltinParams {
  double idle_watts = 120;  // at 0% CPU
  double max_watts = 350;   // at 100% CPU, nominal temperatures
  double curve = 1.0;       // exponent of the load curve: < 1 rises early, > 1 late
  double temperature_factor =
      0.1;  // extra fraction of dynamic power per unit of normalised temperature
  // When set, the node's measured curve, followed linearly between its points instead of
  // idle + (max - idle) * u^curve (idle_watts and max_watts are then its ends). Shared: a
  // node's rows all point at one curve.
  std::shared_ptr<const PowerCurve> points;
};

// The endpoint of rows that name none.
inline const ModelEndpoint& BuiltinEndpoint() {
  static const ModelEndpoint builtin;
  return builtin;
}

struct PredictionRow {
  // For diagnostics only (no backend sends it): the caller's string, which outlives the call.
  // A view, not a copy: rows are built per request, two per node, and most real node names
  // are longer than std::string's inline buffer.
  std::string_view node;
  // Shared, not copied, for the same reason: an endpoint is five strings. Null: the built-in
  // model (read it through endpoint()).
  std::shared_ptr<const ModelEndpoint> model;
  ModelInputs inputs;
  BuiltinParams builtin;

  const ModelEndpoint& endpoint() const { return model != nullptr ? *model : BuiltinEndpoint(); }
};

// Rows are passed as a span: the caller may build them in storage of its own (see
// EstimatePower), and a std::vector converts implicitly.
using PredictionRows = std::span<const PredictionRow>;

struct Prediction {
  std::optional<double> watts;  // set when predicted
  std::string error;            // why not: stable wording, no per-row numbers
};

class Predictor {
 public:
  virtual ~Predictor() = default;
  // One result per row, in the order given. Never throws; a failing server fails only its rows.
  virtual std::vector<Prediction> Predict(PredictionRows rows,
                                          std::chrono::milliseconds deadline) = 0;
  // Whether every row for `endpoint` gets the same answer whenever the row is the same (the
  // built-in model: arithmetic on the row alone), so a caller may keep an answer and reuse it.
  // Model servers: no (they fail, time out and are redeployed).
  virtual bool RepeatsAnswers(const ModelEndpoint& /*endpoint*/) const { return false; }
};

}  // namespace powerctl::predict
