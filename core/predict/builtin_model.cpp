#include "core/predict/builtin_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
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

namespace {

// The load-dependent watts at `u` (0..1) before the temperature factor.
double DynamicWatts(const BuiltinParams& p, double u) {
  if (p.points != nullptr) {
    const PowerCurve& c = *p.points;
    const double x = u * static_cast<double>(kPowerCurvePoints - 1);
    const auto i = std::min(static_cast<std::size_t>(x), kPowerCurvePoints - 2);
    const double t = x - static_cast<double>(i);
    return c[i] + (c[i + 1] - c[i]) * t - c[0];
  }
  // The default curve is linear: pow() was a tenth of the model's time for nothing.
  return (p.max_watts - p.idle_watts) * (p.curve == 1.0 ? u : std::pow(u, p.curve));
}

// Checks what BuiltinWatts and CheapestFillSlope share; the temperature multiplier.
Result<double> Heat(const ModelInputs& in, const BuiltinParams& p) {
  POWERCTL_CHECK_OK(ValidateBuiltinParams(p));
  // NaN would pass through std::clamp unchanged; a missing sensor must not become a number.
  for (float value : {in.cpu_fraction, in.ambient, in.cpu1, in.cpu2}) {
    if (!std::isfinite(value)) return Invalid("model input is not a finite number");
  }
  const double temperature = (Clamp01(in.ambient) + Clamp01(in.cpu1) + Clamp01(in.cpu2)) / 3.0;
  return 1.0 + p.temperature_factor * temperature;
}

}  // namespace

Result<double> BuiltinWatts(const ModelInputs& in, const BuiltinParams& p) {
  POWERCTL_TRY(heat, Heat(in, p));
  return p.idle_watts + DynamicWatts(p, Clamp01(in.cpu_fraction)) * heat;
}

Result<double> CheapestFillSlope(const ModelInputs& in, double to, const BuiltinParams& p,
                                 double up_to) {
  POWERCTL_TRY(heat, Heat(in, p));
  const double from = Clamp01(in.cpu_fraction);
  to = Clamp01(to);
  if (!(to > from)) return Invalid("the load to fill to is not above the current load");
  up_to = std::max(to, Clamp01(up_to));
  const double base = DynamicWatts(p, from);
  auto slope = [&](double y) { return (DynamicWatts(p, y) - base) / (y - from); };
  double best = slope(to);
  if (up_to > to) best = std::min(best, slope(up_to));
  if (p.points != nullptr) {
    for (std::size_t k = 1; k < kPowerCurvePoints; ++k) {
      const double y = static_cast<double>(k) / static_cast<double>(kPowerCurvePoints - 1);
      if (y > to && y < up_to) best = std::min(best, slope(y));
    }
  }
  // The power law's chords get cheaper towards `up_to` when concave or linear, dearer when
  // convex: the two ends are its only candidates.
  return best * heat;
}

Result<PowerCurve> ParsePowerCurve(std::string_view text) {
  const std::string what =
      "power-curve must be 11 comma-separated watts (active idle, 10 %, ..., 100 % load)";
  PowerCurve curve{};
  std::size_t count = 0;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = std::min(text.find(',', start), text.size());
    std::string_view item = text.substr(start, end - start);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    double value = 0;
    auto [ptr, ec] =
        std::from_chars(item.data(), item.data() + item.size(), value, std::chars_format::fixed);
    if (item.empty() || ec != std::errc() || ptr != item.data() + item.size() ||
        count >= kPowerCurvePoints) {
      return Invalid(what);
    }
    if (!std::isfinite(value) || value < 0 || value >= kMaxNodeWatts)
      return Invalid("power-curve: every point must be a number >= 0 and below 100000");
    curve[count++] = value;
    start = end + 1;
  }
  if (count != kPowerCurvePoints) return Invalid(what);
  if (!(curve.back() > curve.front()))
    return Invalid("power-curve: the watts at 100 % load must be above those at active idle");
  const double tolerance = std::max(1.0, 0.02 * curve.back());
  for (std::size_t k = 1; k < kPowerCurvePoints; ++k) {
    if (curve[k] < curve[k - 1] - tolerance) {
      return Invalid(fmt::format(
          "power-curve falls from {:g} W at {} % to {:g} W at {} % load: watts must not "
          "decrease as load grows (by more than {:g} W, 2 % of the top)",
          curve[k - 1], (k - 1) * 10, curve[k], k * 10, tolerance));
    }
    curve[k] = std::max(curve[k], curve[k - 1]);
  }
  return curve;
}

std::string FormatPowerCurve(const PowerCurve& curve) {
  std::string out;
  for (std::size_t k = 0; k < kPowerCurvePoints; ++k) {
    if (k > 0) out += ',';
    out += fmt::format("{:.1f}", curve[k]);
    if (out.size() >= 2 && out.compare(out.size() - 2, 2, ".0") == 0) out.resize(out.size() - 2);
  }
  return out;
}

BuiltinParams WithPowerCurve(BuiltinParams params, const PowerCurve& curve) {
  params.idle_watts = curve.front();
  params.max_watts = curve.back();
  params.points = std::make_shared<const PowerCurve>(curve);
  return params;
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
