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

}  // namespace

Result<CalibrationFit> FitBuiltinModel(const std::vector<PowerSample>& samples,
                                       const CalibrationOptions& options) {
  if (!(options.curve_step > 0) || !(options.curve_min > 0) ||
      !(options.curve_max >= options.curve_min)) {
    return MakeError(ErrorCode::kInvalidInput,
                     "calibration curve grid: need 0 < min <= max and a positive step");
  }
  std::vector<double> u, watts;
  for (const PowerSample& s : samples) {
    if (!std::isfinite(s.utilisation) || !std::isfinite(s.watts)) continue;
    u.push_back(std::clamp(s.utilisation, 0.0, 1.0));
    watts.push_back(s.watts);
  }
  CalibrationFit fit;
  fit.samples = u.size();
  if (!u.empty()) {
    auto [lo, hi] = std::minmax_element(u.begin(), u.end());
    fit.utilisation_min = *lo;
    fit.utilisation_max = *hi;
  }
  if (fit.samples < std::max<std::size_t>(options.min_samples, 3)) {
    fit.refused = fmt::format("only {} samples (need {})", fit.samples, options.min_samples);
    return fit;
  }
  const double range = fit.utilisation_max - fit.utilisation_min;
  if (range < options.min_utilisation_range) {
    fit.refused = fmt::format(
        "CPU utilisation only ranged {:.2f}..{:.2f} (a spread of {:.2f}, need {:.2f}): idle and "
        "max cannot be told apart; calibrate over a window with both quiet and busy periods",
        fit.utilisation_min, fit.utilisation_max, range, options.min_utilisation_range);
    return fit;
  }

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
  double mean = 0;
  for (double w : watts) mean += w;
  mean /= static_cast<double>(watts.size());
  double sst = 0;
  for (double w : watts) sst += (w - mean) * (w - mean);
  fit.rmse_watts = std::sqrt(best->sse / static_cast<double>(watts.size()));
  fit.r2 = sst > 0 ? 1 - best->sse / sst : 0;

  if (Status valid = ValidateBuiltinParams(fit.params); !valid.ok()) {
    fit.refused = fmt::format("the fit gives idle {:.1f} W, max {:.1f} W: {}",
                              fit.params.idle_watts, fit.params.max_watts, valid.error().message);
  } else if (fit.r2 < options.min_r2) {
    fit.refused = fmt::format(
        "poor fit: R² {:.3f} is below {:.2f} (power does not follow CPU utilisation closely "
        "enough; RMSE {:.1f} W)",
        fit.r2, options.min_r2, fit.rmse_watts);
  }
  return fit;
}

}  // namespace powerctl::predict
