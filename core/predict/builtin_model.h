#pragma once
// The built-in power model: a per-node formula that needs no model server, so power-aware
// scoring works out of the box and stays available when a model server is down.
//
//   u      = clamp(cpu_fraction, 0, 1)
//   t      = mean(clamp(ambient, 0, 1), clamp(cpu1, 0, 1), clamp(cpu2, 0, 1))
//   watts  = idle + (max - idle) * u^curve * (1 + temperature_factor * t)
//
// Why this shape:
//  * idle + (max - idle) * u^curve is the SPECpower_ssj2008 picture of a server: a large
//    fixed idle draw plus a load-dependent part that reaches max at 100% load. Measured curves
//    are close to linear, usually slightly concave (curve < 1: power rises early) on machines
//    with aggressive frequency scaling, and convex (curve > 1) on ones that turbo late.
//  * Temperature multiplies only the load-dependent part. Hotter silicon leaks more and fans
//    spin faster as work is added, so the same extra CPU costs more watts on a hotter node.
//    A temperature term added to idle would cancel in the score, which uses after - before.
//  * Inputs are clamped: the seed does not clamp min-max normalised temperatures, and a
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
#include <vector>

namespace powerctl::predict {

// Parameter limits, shared with the annotation reader and `label nodes --idle-watts`.
inline constexpr double kMinCurve = 0.0;  // exclusive
inline constexpr double kMaxCurve = 4.0;
inline constexpr double kMaxTemperatureFactor = 1.0;
inline constexpr double kMaxNodeWatts = 100000;  // no single node draws 100 kW

// idle >= 0, max > idle, curve in (0, 4], factor in [0, 1], all finite. The message names
// the parameter in the annotation's words ("idle-watts must be ...").
Status ValidateBuiltinParams(const BuiltinParams& params);

// The formula above. Fails on invalid parameters or a NaN/infinite input.
Result<double> BuiltinWatts(const ModelInputs& inputs, const BuiltinParams& params);

// Evaluates BuiltinWatts per row with the row's own parameters; ignores the deadline
// (the formula is a few floating-point operations).
class BuiltinPredictor : public Predictor {
 public:
  std::vector<Prediction> Predict(PredictionRows rows, std::chrono::milliseconds deadline) override;

 private:
  std::once_flag pool_started_;
  std::unique_ptr<WorkerPool> pool_;
};

}  // namespace powerctl::predict
