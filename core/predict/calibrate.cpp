#include "core/predict/calibrate.h"

#include "core/predict/builtin_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace powerctl::predict {
namespace {

struct Line {
  double intercept = 0, slope = 0, sse = 0;
};

// Least squares y = intercept + slope * x; nullopt when x does not vary.
std::optional<Line> FitLine(const std::vector<double>& x, const std::vector<double>& y) {
  const double n = static_cast<double>(x.size());
  double mx = 0, my = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    mx += x[i];
    my += y[i];
  }
  mx /= n;
  my /= n;
  // Centred sums: the uncentred formula loses precision with watts in the hundreds.
  double sxx = 0, sxy = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    sxx += (x[i] - mx) * (x[i] - mx);
    sxy += (x[i] - mx) * (y[i] - my);
  }
  if (!(sxx > 1e-12)) return std::nullopt;
  Line line;
  line.slope = sxy / sxx;
  line.intercept = my - line.slope * mx;
  for (std::size_t i = 0; i < x.size(); ++i) {
    double r = y[i] - (line.intercept + line.slope * x[i]);
    line.sse += r * r;
  }
  return line;
}

// The samples a fit uses: finite ones, utilisation clamped to 0..1 as the model does.
struct CleanSamples {
  std::vector<double> u, watts;
  double u_min = 0, u_max = 0;
};

CleanSamples Clean(const std::vector<PowerSample>& samples) {
  CleanSamples out;
  for (const PowerSample& s : samples) {
    if (!std::isfinite(s.utilisation) || !std::isfinite(s.watts)) continue;
    out.u.push_back(std::clamp(s.utilisation, 0.0, 1.0));
    out.watts.push_back(s.watts);
  }
  if (!out.u.empty()) {
    auto [lo, hi] = std::minmax_element(out.u.begin(), out.u.end());
    out.u_min = *lo;
    out.u_max = *hi;
  }
  return out;
}

// Why these samples cannot be fitted in either form ("" when they can).
std::string CoverageRefusal(const CleanSamples& s, const CalibrationOptions& options) {
  if (s.u.size() < std::max<std::size_t>(options.min_samples, 3)) {
    return fmt::format("only {} samples (need {})", s.u.size(), options.min_samples);
  }
  const double range = s.u_max - s.u_min;
  if (range < options.min_utilisation_range) {
    return fmt::format(
        "CPU utilisation only ranged {:.2f}..{:.2f} (a spread of {:.2f}, need {:.2f}): idle and "
        "max cannot be told apart; calibrate over a window with both quiet and busy periods",
        s.u_min, s.u_max, range, options.min_utilisation_range);
  }
  return "";
}

struct Quality {
  double r2 = 0, rmse = 0;
};

// R² and RMSE of `watts` against `predict` evaluated at each utilisation.
template <typename Predict>
Quality Measure(const CleanSamples& s, Predict predict) {
  const double n = static_cast<double>(s.watts.size());
  double mean = 0;
  for (double w : s.watts) mean += w;
  mean /= n;
  double sse = 0, sst = 0;
  for (std::size_t i = 0; i < s.u.size(); ++i) {
    const double r = s.watts[i] - predict(s.u[i]);
    sse += r * r;
    sst += (s.watts[i] - mean) * (s.watts[i] - mean);
  }
  return {sst > 0 ? 1 - sse / sst : 0, std::sqrt(sse / n)};
}

// A curve's watts at utilisation u (0..1), linear between its points, as the model reads it.
// Why a fit below the R² threshold is refused; the same words for both forms.
std::string PoorFit(double r2, double min_r2, double rmse_watts) {
  return fmt::format(
      "poor fit: R² {:.3f} is below {:.2f} (power does not follow CPU utilisation closely "
      "enough; RMSE {:.1f} W)",
      r2, min_r2, rmse_watts);
}

double CurveWatts(const PowerCurve& c, double u) {
  const double x = u * static_cast<double>(kPowerCurvePoints - 1);
  const auto i = std::min(static_cast<std::size_t>(x), kPowerCurvePoints - 2);
  return c[i] + (c[i + 1] - c[i]) * (x - static_cast<double>(i));
}

// Weighted pool-adjacent-violators: the non-decreasing sequence closest to `values` in
// weighted least squares. Each violating neighbour is merged into a block holding the
// weighted mean of its members, so a bin measured many times moves little and a filled or
// sparse one gives way. Weights must be positive.
PowerCurve PoolAdjacentViolators(const PowerCurve& values, const PowerCurve& weights) {
  struct Block {
    double weight, mean;
    std::size_t count;
  };
  std::vector<Block> blocks;
  for (std::size_t k = 0; k < values.size(); ++k) {
    blocks.push_back({weights[k], values[k], 1});
    while (blocks.size() > 1 && blocks[blocks.size() - 2].mean > blocks.back().mean) {
      Block last = blocks.back();
      blocks.pop_back();
      Block& prev = blocks.back();
      const double weight = prev.weight + last.weight;
      prev.mean = (prev.mean * prev.weight + last.mean * last.weight) / weight;
      prev.weight = weight;
      prev.count += last.count;
    }
  }
  PowerCurve out{};
  std::size_t k = 0;
  for (const Block& b : blocks) {
    for (std::size_t j = 0; j < b.count; ++j) out[k++] = b.mean;
  }
  return out;
}

}  // namespace

Result<CalibrationFit> FitBuiltinModel(const std::vector<PowerSample>& samples,
                                       const CalibrationOptions& options) {
  if (!(options.curve_step > 0) || !(options.curve_min > 0) ||
      !(options.curve_max >= options.curve_min)) {
    return MakeError(ErrorCode::kInvalidInput,
                     "calibration curve grid: need 0 < min <= max and a positive step");
  }
  const CleanSamples clean = Clean(samples);
  const std::vector<double>& u = clean.u;
  const std::vector<double>& watts = clean.watts;
  CalibrationFit fit;
  fit.samples = u.size();
  fit.utilisation_min = clean.u_min;
  fit.utilisation_max = clean.u_max;
  fit.refused = CoverageRefusal(clean, options);
  if (!fit.refused.empty()) return fit;

  std::optional<Line> best;
  double best_curve = 1;
  std::vector<double> x(u.size());
  // An index loop: adding the step repeatedly would drift off the grid.
  const int steps = static_cast<int>(
      std::floor((options.curve_max - options.curve_min) / options.curve_step + 1e-9));
  for (int k = 0; k <= steps; ++k) {
    const double curve = options.curve_min + k * options.curve_step;
    for (std::size_t i = 0; i < u.size(); ++i) x[i] = std::pow(u[i], curve);
    std::optional<Line> line = FitLine(x, watts);
    if (line && (!best || line->sse < best->sse)) {
      best = line;
      best_curve = curve;
    }
  }
  if (!best) {
    fit.refused = "CPU utilisation does not vary";
    return fit;
  }
  fit.fitted = true;
  fit.params.idle_watts = best->intercept;
  fit.params.max_watts = best->intercept + best->slope;
  fit.params.curve = best_curve;
  const Quality quality = Measure(
      clean, [&](double at) { return best->intercept + best->slope * std::pow(at, best_curve); });
  fit.rmse_watts = quality.rmse;
  fit.r2 = quality.r2;

  if (Status valid = ValidateBuiltinParams(fit.params); !valid.ok()) {
    fit.refused = fmt::format("the fit gives idle {:.1f} W, max {:.1f} W: {}",
                              fit.params.idle_watts, fit.params.max_watts, valid.error().message);
  } else if (fit.r2 < options.min_r2) {
    fit.refused = PoorFit(fit.r2, options.min_r2, fit.rmse_watts);
  }
  return fit;
}

namespace {

// Each measured bin's point at its step's load: the mean watts were measured at the bin's mean
// load, which the end bins hold only on one side (the 100 % bin's samples lie between 95 and
// 100 %, so their mean sits near 97.5 % and reads low by a quarter step of the curve's rise).
// Moved along the line through the neighbouring measured bins' means, the points of a straight
// stretch come out exact however the samples fall within each bin.
void AtStepLoads(std::array<CurveBin, kPowerCurvePoints>& bins,
                 const std::array<double, kPowerCurvePoints>& mean_load) {
  for (std::size_t k = 0; k < kPowerCurvePoints; ++k) {
    CurveBin& bin = bins[k];
    if (!bin.measured) continue;
    bin.watts = bin.mean_watts;
    std::optional<std::size_t> left, right;
    for (std::size_t j = k; j-- > 0;) {
      if (bins[j].measured) {
        left = j;
        break;
      }
    }
    for (std::size_t j = k + 1; j < kPowerCurvePoints; ++j) {
      if (bins[j].measured) {
        right = j;
        break;
      }
    }
    const std::size_t a = left.value_or(k);
    const std::size_t b = right.value_or(k);
    if (a == b || !(mean_load[b] - mean_load[a] > 1e-9)) continue;
    const double slope = (bins[b].mean_watts - bins[a].mean_watts) / (mean_load[b] - mean_load[a]);
    bin.watts += slope * (static_cast<double>(k) / 10 - mean_load[k]);
  }
}

}  // namespace

Result<CurveFit> FitPowerCurve(const std::vector<PowerSample>& samples,
                               const CalibrationFit& exponent, const CalibrationOptions& options) {
  if (options.min_bin_samples < 1 || !(options.filled_bin_weight > 0) ||
      !std::isfinite(options.filled_bin_weight)) {
    return MakeError(ErrorCode::kInvalidInput,
                     "power curve fit: need min_bin_samples >= 1 and a positive filled weight");
  }
  const CleanSamples clean = Clean(samples);
  CurveFit fit;
  for (std::size_t k = 0; k < kPowerCurvePoints; ++k) {
    fit.bins[k].load_percent = static_cast<int>(k) * 10;
  }
  fit.refused = CoverageRefusal(clean, options);
  if (!fit.refused.empty()) return fit;

  std::array<double, kPowerCurvePoints> sums{}, load_sums{};
  for (std::size_t i = 0; i < clean.u.size(); ++i) {
    const auto k = static_cast<std::size_t>(std::lround(clean.u[i] * 10));
    ++fit.bins[k].samples;
    sums[k] += clean.watts[i];
    load_sums[k] += clean.u[i];
  }
  std::size_t measured = 0;
  std::array<double, kPowerCurvePoints> mean_load{};
  for (std::size_t k = 0; k < kPowerCurvePoints; ++k) {
    CurveBin& bin = fit.bins[k];
    if (bin.samples > 0) {
      bin.mean_watts = sums[k] / static_cast<double>(bin.samples);
      mean_load[k] = load_sums[k] / static_cast<double>(bin.samples);
    }
    bin.measured = bin.samples >= options.min_bin_samples;
    if (bin.measured) ++measured;
  }
  AtStepLoads(fit.bins, mean_load);
  if (measured < 2) {
    fit.refused = fmt::format(
        "only {} of the 11 load steps (0 %, 10 %, ..., 100 %) have at least {} samples (need 2)",
        measured, options.min_bin_samples);
    return fit;
  }

  // Fill the unmeasured steps: from the exponent fit when it gave a valid model, else by
  // interpolating between measured steps, which needs both ends measured.
  const bool exponent_usable = exponent.fitted && ValidateBuiltinParams(exponent.params).ok();
  if (measured < kPowerCurvePoints) {
    fit.filled_from = exponent_usable ? "exponent fit" : "interpolation";
  }
  if (!exponent_usable) {
    for (std::size_t end : {std::size_t{0}, kPowerCurvePoints - 1}) {
      const CurveBin& bin = fit.bins[end];
      if (bin.measured) continue;
      fit.refused = fmt::format(
          "the {} % load step has {} samples (need {}) and the exponent fit cannot fill it "
          "({}); calibrate over a window that includes {} periods",
          bin.load_percent, bin.samples, options.min_bin_samples,
          exponent.refused.empty() ? "it did not run" : exponent.refused,
          end == 0 ? "idle" : "fully busy");
      return fit;
    }
  }
  for (std::size_t k = 0; k < kPowerCurvePoints; ++k) {
    CurveBin& bin = fit.bins[k];
    if (bin.measured) continue;
    if (exponent_usable) {
      const BuiltinParams& p = exponent.params;
      bin.watts = p.idle_watts +
                  (p.max_watts - p.idle_watts) * std::pow(static_cast<double>(k) / 10, p.curve);
      continue;
    }
    std::size_t left = k, right = k;
    while (!fit.bins[left].measured) --left;    // bin 0 is measured
    while (!fit.bins[right].measured) ++right;  // and so is bin 10
    const double t = static_cast<double>(k - left) / static_cast<double>(right - left);
    bin.watts = fit.bins[left].watts + (fit.bins[right].watts - fit.bins[left].watts) * t;
  }

  PowerCurve values{}, weights{};
  for (std::size_t k = 0; k < kPowerCurvePoints; ++k) {
    values[k] = fit.bins[k].watts;
    weights[k] =
        fit.bins[k].measured ? static_cast<double>(fit.bins[k].samples) : options.filled_bin_weight;
  }
  PowerCurve pooled = PoolAdjacentViolators(values, weights);
  // What is written is the annotation's text: judge and report the curve the model will use.
  Result<PowerCurve> parsed = ParsePowerCurve(FormatPowerCurve(pooled));
  fit.points = parsed.ok() ? *parsed : pooled;
  for (std::size_t k = 0; k < kPowerCurvePoints; ++k) fit.bins[k].watts = fit.points[k];
  const Quality quality = Measure(clean, [&](double at) { return CurveWatts(fit.points, at); });
  fit.r2 = quality.r2;
  fit.rmse_watts = quality.rmse;
  fit.fitted = true;

  if (!parsed.ok()) {
    fit.refused = fmt::format("the fitted curve {} is not usable: {}", FormatPowerCurve(pooled),
                              parsed.error().message);
  } else if (fit.r2 < options.min_r2) {
    fit.refused = PoorFit(fit.r2, options.min_r2, fit.rmse_watts);
  }
  return fit;
}

}  // namespace powerctl::predict
