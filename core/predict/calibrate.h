#pragma once
// Fits the built-in model (builtin_model.h) to a node's measured power, in either form:
//  * the exponent form, watts = idle + (max - idle) * u^curve: for each curve on a grid the
//    model is linear in x = u^curve, so ordinary least squares gives idle and (max - idle)
//    exactly; the curve with the smallest squared error wins (FitBuiltinModel);
//  * the measured 11-point curve (FitPowerCurve): the mean watts of the samples nearest each
//    10 % load step, unmeasured steps filled from the exponent fit, made non-decreasing.
//    Real servers' curves have a steep start and a jump near the top that one exponent
//    cannot follow.
// The temperature term is left out: the fit sees the node at its usual temperatures, and
// powerctl.io/temperature-factor stays what it was. Pure.

#include "core/common/result.h"
#include "core/predict/predictor.h"

#include <array>
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
  // The curve form: a load step with fewer samples than this is filled, not measured.
  std::size_t min_bin_samples = 3;
  // How many samples a filled point counts as when the curve is made non-decreasing: little,
  // so a measured neighbour decides where they disagree.
  double filled_bin_weight = 1;
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

// One point of a fitted curve: load step k/10 and the samples whose utilisation is nearest
// to it (within 0.05; a tie goes to the higher step).
struct CurveBin {
  int load_percent = 0;     // 0, 10, ..., 100
  std::size_t samples = 0;  // samples in this bin
  double mean_watts = 0;    // their mean watts (0 without samples)
  double watts = 0;         // the curve's point: measured or filled, then pooled
  bool measured = false;    // at least min_bin_samples samples; else filled
};

struct CurveFit {
  bool fitted = false;  // points, bins, r2 and rmse_watts are set
  // The curve as the annotation holds it (FormatPowerCurve's rounding): what the model uses.
  PowerCurve points{};
  std::array<CurveBin, kPowerCurvePoints> bins{};
  // How the unmeasured points were filled: "" (none were), "exponent fit" or "interpolation".
  std::string filled_from;
  double r2 = 0;          // samples against the curve, linear between points
  double rmse_watts = 0;  // root-mean-square residual
  // Why the curve must not be written ("" when it may).
  std::string refused;
};

// Fits the 11-point curve (watts at 0 %, 10 %, ..., 100 % load) to `samples`, cleaned and
// checked for count and utilisation range as FitBuiltinModel does:
//  1. bin k holds the samples nearest to load k/10; its value is their mean watts, moved from
//     their mean load to k/10 along the line through the neighbouring bins' means (the end bins
//     hold samples on one side only: their plain mean would read the ends low);
//  2. a bin with fewer than min_bin_samples samples is filled from `exponent` (the exponent
//     fit of the same samples, which extrapolates to loads the node never reached) when its
//     parameters are valid; otherwise interior gaps are interpolated linearly between
//     measured bins, and a missing 0 % or 100 % bin refuses the curve (extrapolating a line
//     from the nearest bins would guess the very ends that matter most);
//  3. weighted pool-adjacent-violators (isotonic regression; weight = the bin's samples,
//     filled_bin_weight for a filled one) makes it non-decreasing, so a noisy bin cannot make
//     the curve fall;
//  4. refused with fewer than two measured bins, R² below min_r2, or a curve that
//     ParsePowerCurve rejects (the 100 % point not above the 0 % one).
// An error only for options that make no sense.
Result<CurveFit> FitPowerCurve(const std::vector<PowerSample>& samples,
                               const CalibrationFit& exponent,
                               const CalibrationOptions& options = {});

}  // namespace powerctl::predict
