#include "core/scoring/combine.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace powerctl::scoring {

double ComponentWeight(std::string_view name, const config::ScoringSettings& settings) {
  if (name == kPower) return settings.power_weight;
  if (name == kPolicy) return settings.policy_weight;
  if (name == kRealUsage) return settings.real_usage_weight;
  return 0.0;
}

std::int64_t CombinedScoreOf(const ComponentList& components,
                             const config::ScoringSettings& settings) {
  double weighted = 0;
  double total_weight = 0;
  for (const Component& c : components) {
    const double w = ComponentWeight(c.name, settings);
    if (!(w > 0) || !std::isfinite(w) || !std::isfinite(c.value)) continue;
    weighted += w * std::clamp(c.value, 0.0, kMaxComponentValue);
    total_weight += w;
  }
  std::int64_t score = settings.unknown_score;
  if (total_weight > 0) {
    const double mean = weighted / total_weight;
    score = static_cast<std::int64_t>(std::floor(mean + 0.5 + 1e-9));
  }
  return std::clamp<std::int64_t>(score, 0, 10);
}

CombinedScore Combine(ComponentList components, const config::ScoringSettings& settings) {
  CombinedScore out;
  out.score = CombinedScoreOf(components, settings);
  out.components = std::move(components);
  return out;
}

double InverseMinMax(double value, double lowest, double highest, double tolerance) {
  if (!(highest - lowest > tolerance)) return kMaxComponentValue;
  const double v = kMaxComponentValue * (highest - value) / (highest - lowest);
  return std::clamp(v, 0.0, kMaxComponentValue);
}

}  // namespace powerctl::scoring
