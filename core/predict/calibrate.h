#pragma once
// Fits the built-in model's load curve (builtin_model.h) to a node's measured power:
//   watts = idle + (max - idle) * u^curve
// For each curve on a grid the model is linear in x = u^curve, so ordinary least squares
// gives idle and (max - idle) exactly; the curve with the smallest squared error wins.
// The temperature term is left out: the fit sees the node at its usual temperatures, and
// powerctl.io/temperature-factor stays what it was. Pure.

#include "core/common/result.h"
#include "core/predict/predictor.h"

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace powerctl::predict {

struct PowerSample {
  double utilisation = 0;  // fraction of the node's CPU capacity in use, 0..1
  double watts = 0;        // measured at the same time
};

struct CalibrationOptions {
  double curve_min = 0.5, curve_max = 2.0, curve_step = 0.05;
  std::size_t min_samples = 30;
  double min_utilisation_range = 0.2;  // max - min utilisation seen
  double min_r2 = 0.8;
};

struct CalibrationFit {
  bool fitted = false;      // the least squares ran: params, r2 and rmse_watts are set
  BuiltinParams params;     // idle, max and curve fitted; temperature_factor left default
  double r2 = 0;            // coefficient of determination on the samples
  double rmse_watts = 0;    // root-mean-square residual
  std::size_t samples = 0;  // finite samples used
  double utilisation_min = 0, utilisation_max = 0;
  // Why the fit must not be written ("" when it may): too few samples, too narrow a
  // utilisation range, a poor fit, or parameters the model rejects.
  std::string refused;
};

// Fits `samples` (non-finite ones dropped, utilisation clamped to 0..1 as the model does).
// Always returns a fit when the math is possible; `refused` says when it is not usable.
// An error only for options that make no sense (an empty or inverted grid).
Result<CalibrationFit> FitBuiltinModel(const std::vector<PowerSample>& samples,
                                       const CalibrationOptions& options = {});

}  // namespace powerctl::predict
