#pragma once
// Combining per-node score components into the 0..10 integer the extender's prioritize answers.
//
// A component is one scorer's opinion of one node: a value in 0..10 (10 = best) and a stable
// reason, e.g. {"power", 7.5, "+3.0 W (lowest +1.0 W, highest +9.0 W)"}. Components are named
// (kPower, kPolicy, kRealUsage); each is optional per node (a scorer that is off, or has
// nothing to say about a node, simply contributes none).
//
// final = round_half_up( Σ w_c·v_c / Σ w_c ) over the present components whose weight w_c
// (ScoringSettings power_weight, policy_weight, real_usage_weight) is > 0 and whose value is
// finite; values are clamped to 0..10 first, the result to 0..10. Half up means 6.5 -> 7
// (with a 1e-9 allowance so 6.4999999999 from summing binary fractions also gives 7). When no
// component counts, the node gets ScoringSettings.unknown_score. Every component, counted or
// not, is kept so `explain` can show them.

#include "core/manifests/config.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace powerctl::scoring {

inline constexpr std::string_view kPower = "power";
inline constexpr std::string_view kPolicy = "policy";
inline constexpr std::string_view kRealUsage = "realUsage";
inline constexpr double kMaxComponentValue = 10.0;

struct Component {
  std::string name;
  double value = 0;  // 0..10, 10 = best
  std::string reason;

  bool operator==(const Component&) const = default;
};

struct CombinedScore {
  std::int64_t score = 0;             // 0..10
  std::vector<Component> components;  // as given, in order
};

// The weight of a named component; 0 for a name it does not know.
double ComponentWeight(std::string_view name, const manifests::ScoringSettings& settings);

CombinedScore Combine(std::vector<Component> components,
                      const manifests::ScoringSettings& settings);

// Linear, not rank-based: `lowest` -> 10, `highest` -> 0, in between proportionally; when
// highest - lowest <= tolerance every value gets 10. Shared by the power and real-usage scorers.
double InverseMinMax(double value, double lowest, double highest, double tolerance);

}  // namespace powerctl::scoring
