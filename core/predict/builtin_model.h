#pragma once
// The built-in power model: a per-node formula that needs no model server, so power-aware
// scoring works out of the box and stays available when a model server is down.
//
//   u      = clamp(cpu_fraction, 0, 1)
//   t      = mean(clamp(ambient, 0, 1), clamp(cpu1, 0, 1), clamp(cpu2, 0, 1))
//   watts  = idle + (max - idle) * u^curve * (1 + temperature_factor * t)
//
// or, for a node with a measured curve P (watts at 0 %, 10 %, ..., 100 % load):
//
//   watts  = P(0) + (P(u) - P(0)) * (1 + temperature_factor * t), P linear between points
//
// Why this shape:
//  * idle + (max - idle) * u^curve is the SPECpower_ssj2008 picture of a server: a large
//    fixed idle draw plus a load-dependent part that reaches max at 100% load. Measured curves
//    are close to linear, usually slightly concave (curve < 1: power rises early) on machines
//    with aggressive frequency scaling, and convex (curve > 1) on ones that turbo late.
//  * Temperature multiplies only the load-dependent part. Hotter silicon leaks more and fans
//    spin faster as work is added, so the same extra CPU costs more watts on a hotter node.
//    A temperature term added to idle would cancel in the score, which uses after - before.
//  * Inputs are clamped: MinimizePower does not clamp min-max normalised temperatures, and a
//    reading outside the labelled range must not make the formula extrapolate wildly.
//  * Monotone non-decreasing in CPU for every valid parameter set (curve > 0, max > idle,
//    factor >= 0), so adding a pod never predicts a power decrease.

#include "core/common/result.h"
#include "core/common/worker_pool.h"
#include "core/predict/predictor.h"

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace powerctl::predict {

// Parameter limits, shared with the annotation reader and `label nodes --idle-watts`.
inline constexpr double kMinCurve = 0.0;  // exclusive
inline constexpr double kMaxCurve = 4.0;
inline constexpr double kMaxTemperatureFactor = 1.0;
inline constexpr double kMaxNodeWatts = 100000;  // no single node draws 100 kW

// idle >= 0, max > idle, curve in (0, 4], factor in [0, 1], all finite. The message names
// the parameter in the annotation's words ("idle-watts must be ..."). A curve's points are
// checked when it is parsed (ParsePowerCurve), not here.
Status ValidateBuiltinParams(const BuiltinParams& params);

// The formula above. Fails on invalid parameters or a NaN/infinite input.
Result<double> BuiltinWatts(const ModelInputs& inputs, const BuiltinParams& params);

// A measured curve from text: 11 comma-separated watts (active idle, 10 %, ..., 100 %), each
// 0..kMaxNodeWatts, the last above the first. Measured curves wobble: a point may sit below
// an earlier one by up to tolerance (2 % of the top, at least 1 W) and is then raised to it,
// so the curve never falls; a larger fall is an error naming the two load levels.
Result<PowerCurve> ParsePowerCurve(std::string_view text);
// "W0,W10,...,W100" with at most one decimal, as the annotation holds it.
std::string FormatPowerCurve(const PowerCurve& curve);
// `params` following `curve` (idle_watts and max_watts set to its ends).
BuiltinParams WithPowerCurve(BuiltinParams params, const PowerCurve& curve);

// The cheapest average slope of raising a node's load from inputs.cpu_fraction to any level
// between `to` and `up_to` (at most 1): min over y in [to, up_to] of (W(y) - W(now)) / (y - now),
// in watts per unit of load fraction (divide by the node's cores for watts per core). This is
// the slope of the node's lower convex hull from where it stands, as far as it can still be
// filled, which is what filling nodes cheapest-first optimises (see scoring/power_score.h).
// Exact: a curve's chords are cheapest at `to`, at `up_to` or at one of its points between;
// the power law's at `to` (curve > 1) or at `up_to` (curve <= 1). Fails as BuiltinWatts does,
// or when `to` is not above the current fraction. An `up_to` below `to` counts as `to`.
Result<double> CheapestFillSlope(const ModelInputs& inputs, double to, const BuiltinParams& params,
                                 double up_to = 1.0);

// Evaluates BuiltinWatts per row with the row's own parameters; ignores the deadline
// (the formula is a few floating-point operations).
class BuiltinPredictor : public Predictor {
 public:
  std::vector<Prediction> Predict(PredictionRows rows, std::chrono::milliseconds deadline) override;
  bool RepeatsAnswers(const ModelEndpoint& /*endpoint*/) const override { return true; }

 private:
  std::once_flag pool_started_;
  std::unique_ptr<WorkerPool> pool_;
};

}  // namespace powerctl::predict
