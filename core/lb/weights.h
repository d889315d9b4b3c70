#pragma once
// Load-balancer weights from per-endpoint power predictions: pure functions, shared by
// `powerctl lb weights` and the lb-agent.
//
// powerctl's formula, per endpoint i with a prediction:
//
//   d_i     = max(0, watts_after_i - watts_now_i)   watts one more request's CPU adds on
//                                                   the endpoint's node (no truncation)
//   weight  = clamp(round(100 * (min_j d_j + F) / (d_i + F)), 1, 100),   F = 0.1 W
//
// so the cheapest node's endpoints get 100 and a node where a request costs k times as much
// gets about 100/k: traffic in inverse proportion to the marginal watts. Endpoints whose node
// is saturated (its CPU in use plus one request exceeds capacity) get 1: a model sees no
// further rise there (the built-in model clamps at full load), which would otherwise make
// the busiest node look like the cheapest. Endpoints without a prediction get the configured
// default weight (lb.unknownWeight) and the reason.
//
// Why this differs from WAO's load balancer, v1 and v2 (docs/reference/minimizepower.md
// ("WAO's load-balancer weights")):
//  * v1 weighs by absolute watts now (`int(lowest*100/score)`): a big idle server draws more
//    than a small one but may add less per request; the cost of a request is the delta.
//  * v2 truncates each delta to whole watts before `round(100*min(w+1)/(w_i+1))`. One request
//    (100m) on a 32-core node adds well under 1 W, so every delta truncates to 0 and every
//    weight to 100: the formula loses the signal it exists for. powerctl keeps fractions and
//    uses a 0.1 W floor F (below model precision) only to keep a zero delta finite.
//  * Both give 0 (no traffic) to endpoints without a prediction, and v2 to endpoints whose
//    weight rounds to 0. A Ready endpoint that gets no traffic drops capacity on a model or
//    telemetry failure, and never shows whether it still works. powerctl never goes below 1,
//    and an unknown node gets a neutral default instead of none.
//  * v2 drops negative deltas (non-monotone models); powerctl clamps them to 0 so the
//    endpoint still serves, as the cheapest.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace powerctl::lb {

inline constexpr int kMinWeight = 1;
inline constexpr int kMaxWeight = 100;
inline constexpr double kDeltaFloorWatts = 0.1;
inline constexpr int kDefaultUnknownWeight = 50;

// What is known about one endpoint's node.
struct EndpointPrediction {
  std::optional<double> watts_now;
  std::optional<double> watts_after;  // with one more request's CPU
  bool saturated = false;             // CPU in use + one request > capacity
  std::string error;                  // why there is no prediction (watts unset)
};

enum class WeightBasis {
  kPredicted,  // from the delta
  kSaturated,  // the minimum weight: no headroom for another request
  kUnknown,    // the default weight: no prediction
};
const char* WeightBasisName(WeightBasis basis);  // "predicted", "saturated", "unknown"

struct EndpointWeight {
  int weight = kMinWeight;
  WeightBasis basis = WeightBasis::kUnknown;
  std::optional<double> delta_watts;  // as used (clamped at 0)
  std::string reason;                 // one line for the table
};

// One weight per input, in order. `unknown_weight` is clamped to 1..100.
std::vector<EndpointWeight> ComputeWeights(const std::vector<EndpointPrediction>& endpoints,
                                           int unknown_weight = kDefaultUnknownWeight);

// ---- WAO's own weights, for comparison and its test vectors ----
// As docs/reference/minimizepower.md ("WAO's load-balancer weights") describes them.

// WAO v1 (IPVS, `CalcWeight`): `scores` are the nodes' predicted absolute watts per endpoint,
// -1 (any negative) or nullopt for a node without a score. 0 endpoints -> {}; 1 endpoint ->
// {1}; no valid score -> all 1; else int(lowest * 100 / score), and 0 for endpoints without
// a valid score. A valid score of 0 makes Go divide by zero (+Inf, or NaN when lowest is 0
// too, whose int conversion is undefined): this port answers 0 there, the bug noted.
std::vector<int64_t> WaoV1Weights(const std::vector<std::optional<double>>& scores);

// WAO v2 `ScoreNode`: int(after - before) truncated toward zero, negative -> 0.
int64_t WaoV2NodeScore(double watts_before, double watts_after);

// WAO v2 (nftables, `normalizeScores`): negative scores are dropped (nullopt), w' = w + 1,
// round(100 * min(w') / w'_i) (Go math.Round: half away from zero), clamped to 0..100. The
// proxier then skips endpoints whose weight is missing or 0, and falls back to a uniform
// split when none is positive.
std::vector<std::optional<int64_t>> WaoV2Weights(const std::vector<int64_t>& scores);

}  // namespace powerctl::lb
