#include "core/lb/weights.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace powerctl::lb {

const char* WeightBasisName(WeightBasis basis) {
  switch (basis) {
    case WeightBasis::kPredicted:
      return "predicted";
    case WeightBasis::kSaturated:
      return "saturated";
    case WeightBasis::kUnknown:
      return "unknown";
  }
  return "unknown";
}

std::vector<EndpointWeight> ComputeWeights(const std::vector<EndpointPrediction>& endpoints,
                                           int unknown_weight) {
  unknown_weight = std::clamp(unknown_weight, kMinWeight, kMaxWeight);
  std::vector<EndpointWeight> out(endpoints.size());
  std::optional<double> cheapest;
  for (std::size_t i = 0; i < endpoints.size(); ++i) {
    const EndpointPrediction& e = endpoints[i];
    EndpointWeight& w = out[i];
    if (e.saturated) {
      w.basis = WeightBasis::kSaturated;
      continue;
    }
    bool finite = e.watts_now && e.watts_after && std::isfinite(*e.watts_now) &&
                  std::isfinite(*e.watts_after);
    if (!e.error.empty() || !finite) {
      w.basis = WeightBasis::kUnknown;
      continue;
    }
    w.basis = WeightBasis::kPredicted;
    // A negative delta (a non-monotone model) counts as free rather than as a failure.
    w.delta_watts = std::max(0.0, *e.watts_after - *e.watts_now);
    cheapest = std::min(cheapest.value_or(*w.delta_watts), *w.delta_watts);
  }
  for (std::size_t i = 0; i < endpoints.size(); ++i) {
    EndpointWeight& w = out[i];
    switch (w.basis) {
      case WeightBasis::kSaturated:
        w.weight = kMinWeight;
        w.reason = "saturated: the CPU in use plus one request exceeds the node's capacity";
        break;
      case WeightBasis::kUnknown: {
        w.weight = unknown_weight;
        const std::string& why = endpoints[i].error;
        w.reason = fmt::format("no prediction ({}); default weight",
                               why.empty() ? "the model returned no finite watts" : why);
        break;
      }
      case WeightBasis::kPredicted: {
        double ratio = (*cheapest + kDeltaFloorWatts) / (*w.delta_watts + kDeltaFloorWatts);
        w.weight = std::clamp(static_cast<int>(std::lround(100.0 * ratio)), kMinWeight, kMaxWeight);
        w.reason = *w.delta_watts <= *cheapest
                       ? fmt::format("+{:.2f} W per request, the cheapest", *w.delta_watts)
                       : fmt::format("+{:.2f} W per request (the cheapest +{:.2f} W)",
                                     *w.delta_watts, *cheapest);
        break;
      }
    }
  }
  return out;
}

std::vector<int64_t> WaoV1Weights(const std::vector<std::optional<double>>& scores) {
  if (scores.empty()) return {};
  if (scores.size() == 1) return {1};
  std::optional<double> lowest;
  for (const auto& s : scores) {
    if (s && *s >= 0) lowest = std::min(lowest.value_or(*s), *s);
  }
  if (!lowest) return std::vector<int64_t>(scores.size(), 1);
  std::vector<int64_t> out;
  for (const auto& s : scores) {
    if (!s || *s < 0 || *s == 0) {
      out.push_back(0);  // no traffic; for a 0 W score Go divides by zero (see the header)
      continue;
    }
    // Go's int(float) truncates toward zero.
    out.push_back(static_cast<int64_t>(*lowest * 100.0 / *s));
  }
  return out;
}

int64_t WaoV2NodeScore(double watts_before, double watts_after) {
  double delta = std::trunc(watts_after - watts_before);
  if (!std::isfinite(delta)) return 0;
  if (delta > static_cast<double>(std::numeric_limits<int64_t>::max())) {
    return std::numeric_limits<int64_t>::max();
  }
  return std::max<int64_t>(0, static_cast<int64_t>(delta));
}

std::vector<std::optional<int64_t>> WaoV2Weights(const std::vector<int64_t>& scores) {
  std::optional<double> lowest;
  for (int64_t s : scores) {
    double shifted = static_cast<double>(s) + 1;
    if (s >= 0) lowest = std::min(lowest.value_or(shifted), shifted);
  }
  std::vector<std::optional<int64_t>> out;
  for (int64_t s : scores) {
    if (s < 0) {
      out.emplace_back(std::nullopt);
      continue;
    }
    double w = std::round(100.0 * *lowest / (static_cast<double>(s) + 1));
    out.emplace_back(static_cast<int64_t>(std::clamp(w, 0.0, 100.0)));
  }
  return out;
}

}  // namespace powerctl::lb
