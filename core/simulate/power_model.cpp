#include "core/simulate/power_model.h"

#include "core/predict/builtin_model.h"
#include "core/predict/node_params.h"

#include <algorithm>
#include <cmath>
#include <optional>

namespace powerctl::simulate {
namespace {

std::optional<double> Normalised(const SimNode& node, const std::optional<double>& reading,
                                 const std::string& prefix) {
  auto min = node.labels.find(prefix + "/min");
  auto max = node.labels.find(prefix + "/max");
  if (!reading || min == node.labels.end() || max == node.labels.end()) return std::nullopt;
  double lo = std::strtod(min->second.c_str(), nullptr);
  double hi = std::strtod(max->second.c_str(), nullptr);
  if (!(hi > lo)) return std::nullopt;
  return std::clamp((*reading - lo) / (hi - lo), 0.0, 1.0);
}

double CurveAt(const std::vector<double>& curve, double fraction) {
  double x = std::clamp(fraction, 0.0, 1.0) * static_cast<double>(kCurvePoints - 1);
  auto i = std::min(static_cast<std::size_t>(x), kCurvePoints - 2);
  double t = x - static_cast<double>(i);
  return curve[i] + (curve[i + 1] - curve[i]) * t;
}

double FitExponent(const std::vector<double>& curve) {
  const double idle = curve.front();
  const double span = curve.back() - idle;
  double best = 1.0;
  double best_error = INFINITY;
  for (double k = 0.05; k <= predict::kMaxCurve + 1e-9; k += 0.01) {
    double error = 0;
    for (std::size_t i = 1; i + 1 < kCurvePoints; ++i) {
      double u = static_cast<double>(i) / static_cast<double>(kCurvePoints - 1);
      double d = idle + span * std::pow(u, k) - curve[i];
      error += d * d;
    }
    if (error < best_error) {
      best_error = error;
      best = k;
    }
  }
  return best;
}

}  // namespace

double NormalisedTemperature(const SimNode& node) {
  double sum = 0;
  sum += Normalised(node, node.ambient, "ambient").value_or(0);
  sum += Normalised(node, node.cpu1, "cpu1").value_or(0);
  sum += Normalised(node, node.cpu2, "cpu2").value_or(0);
  return sum / 3.0;
}

BuiltinParams BelievedParams(const SimNode& node, BeliefForm form) {
  BuiltinParams defaults;
  if (!node.power_curve.empty() && form == BeliefForm::kCurve) {
    predict::PowerCurve curve{};
    std::copy_n(node.power_curve.begin(), kCurvePoints, curve.begin());
    defaults = predict::WithPowerCurve(defaults, curve);
  } else if (!node.power_curve.empty()) {
    defaults.idle_watts = node.power_curve.front();
    defaults.max_watts = node.power_curve.back();
    defaults.curve = FitExponent(node.power_curve);
  }
  // An invalid annotation keeps the defaults: the loader's caller validates snapshots.
  auto params = predict::BuiltinParamsFromAnnotations(node.annotations, defaults);
  return params.ok() ? *params : defaults;
}

double TrueWatts(const SimNode& node, double cpu_fraction) {
  // No fit here: a curve is the truth itself, and only its temperature factor is read.
  auto annotated = predict::BuiltinParamsFromAnnotations(node.annotations);
  BuiltinParams p = annotated.ok() ? *annotated : BuiltinParams{};
  const double heat = 1.0 + p.temperature_factor * NormalisedTemperature(node);
  if (node.power_curve.empty()) {
    double load = std::pow(std::clamp(cpu_fraction, 0.0, 1.0), p.curve);
    return p.idle_watts + (p.max_watts - p.idle_watts) * load * heat;
  }
  const double idle = node.power_curve.front();
  return idle + (CurveAt(node.power_curve, cpu_fraction) - idle) * heat;
}

double Uniform01(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

BuiltinParams WithError(BuiltinParams params, double error, std::mt19937_64& rng) {
  if (error <= 0) return params;
  double idle = params.idle_watts * (1 + error * (2 * Uniform01(rng) - 1));
  double max = params.max_watts * (1 + error * (2 * Uniform01(rng) - 1));
  idle = std::max(0.0, idle);
  max = std::max(max, idle + 1.0);
  if (params.points != nullptr) {
    // The same two errors on a curve: its ends move, its shape in between stretches along.
    const predict::PowerCurve& truth = *params.points;
    const double span = truth.back() - truth.front();
    predict::PowerCurve believed{};
    for (std::size_t k = 0; k < believed.size(); ++k)
      believed[k] = idle + (truth[k] - truth.front()) * (max - idle) / span;
    return predict::WithPowerCurve(params, believed);
  }
  params.idle_watts = idle;
  params.max_watts = max;
  return params;
}

PeaksModel FitPeaksModel(const BuiltinParams& params, double normalised_temperature) {
  std::vector<double> x, y;
  for (int pct = 0; pct <= 100; pct += 5) {
    predict::ModelInputs in;
    in.cpu_fraction = static_cast<float>(pct / 100.0);
    in.ambient = in.cpu1 = in.cpu2 = static_cast<float>(normalised_temperature);
    auto watts = predict::BuiltinWatts(in, params);
    x.push_back(pct);
    y.push_back(watts.ok() ? *watts : 0.0);
  }
  PeaksModel best;
  double best_error = INFINITY;
  // k2 in 1/percent; both signs: a concave curve is k1 < 0, k2 < 0.
  for (double k2 = -0.1; k2 <= 0.1 + 1e-12; k2 += 0.0005) {
    if (std::abs(k2) < 1e-6) continue;
    double n = static_cast<double>(x.size()), se = 0, sy = 0, see = 0, sey = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      double e = std::exp(k2 * x[i]);
      se += e;
      sy += y[i];
      see += e * e;
      sey += e * y[i];
    }
    double det = n * see - se * se;
    if (std::abs(det) < 1e-12) continue;
    double k1 = (n * sey - se * sy) / det;
    double k0 = (sy - k1 * se) / n;
    double error = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      double d = k0 + k1 * std::exp(k2 * x[i]) - y[i];
      error += d * d;
    }
    if (error < best_error) {
      best_error = error;
      best = {k0, k1, k2};
    }
  }
  return best;
}

}  // namespace powerctl::simulate
