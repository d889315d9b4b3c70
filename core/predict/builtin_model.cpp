#include "core/predict/builtin_model.h"

#include "core/common/parallel.h"

#include <algorithm>
#include <cmath>

namespace powerctl::predict {

namespace {

constexpr std::size_t kRowsPerChunk = 2048;

Error Invalid(std::string message) {
  return MakeError(ErrorCode::kInvalidInput, std::move(message));
}

double Clamp01(double value) {
  return std::clamp(value, 0.0, 1.0);
}

}  // namespace

Status ValidateBuiltinParams(const BuiltinParams& p) {
  if (!std::isfinite(p.idle_watts) || p.idle_watts < 0 || p.idle_watts >= kMaxNodeWatts) {
    return Invalid("idle-watts must be a number >= 0 and below 100000");
  }
  if (!std::isfinite(p.max_watts) || p.max_watts > kMaxNodeWatts) {
    return Invalid("max-watts must be a number of at most 100000");
  }
  if (p.max_watts <= p.idle_watts) {
    return Invalid("max-watts must be greater than idle-watts");
  }
  if (!std::isfinite(p.curve) || p.curve <= kMinCurve || p.curve > kMaxCurve) {
    return Invalid("curve must be greater than 0 and at most 4");
  }
  if (!std::isfinite(p.temperature_factor) || p.temperature_factor < 0 ||
      p.temperature_factor > kMaxTemperatureFactor) {
    return Invalid("temperature-factor must be between 0 and 1");
  }
  return OkStatus();
}

Result<double> BuiltinWatts(const ModelInputs& in, const BuiltinParams& p) {
  POWERCTL_CHECK_OK(ValidateBuiltinParams(p));
  // NaN would pass through std::clamp unchanged; a missing sensor must not become a number.
  for (float value : {in.cpu_fraction, in.ambient, in.cpu1, in.cpu2}) {
    if (!std::isfinite(value)) return Invalid("model input is not a finite number");
  }
  // The default curve is linear: pow() was a tenth of the model's time for nothing.
  const double load =
      p.curve == 1.0 ? Clamp01(in.cpu_fraction) : std::pow(Clamp01(in.cpu_fraction), p.curve);
  const double temperature = (Clamp01(in.ambient) + Clamp01(in.cpu1) + Clamp01(in.cpu2)) / 3.0;
  return p.idle_watts +
         (p.max_watts - p.idle_watts) * load * (1.0 + p.temperature_factor * temperature);
}

std::vector<Prediction> BuiltinPredictor::Predict(PredictionRows rows,
                                                  std::chrono::milliseconds /*deadline*/) {
  std::vector<Prediction> out(rows.size());
  auto run = [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) {
      Result<double> watts = BuiltinWatts(rows[i].inputs, rows[i].builtin);
      if (watts.ok()) {
        out[i].watts = *watts;
      } else {
        out[i].error = "built-in model: " + watts.error().message;
      }
    }
  };
  // Pure arithmetic per row: large batches (a 5,000-node prioritize has 10,000 rows) are
  // split across cores, on threads started the first time one comes.
  if (rows.size() < 2 * kRowsPerChunk) {
    run(0, rows.size());
    return out;
  }
  std::call_once(pool_started_,
                 [&] { pool_ = std::make_unique<WorkerPool>(DefaultWorkers() - 1); });
  pool_->ForEachChunk(rows.size(), kRowsPerChunk, run);
  return out;
}

}  // namespace powerctl::predict
