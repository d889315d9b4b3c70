#pragma once
// What a simulated node really draws, and what the schedulers believe it draws.
//
// Truth: the node's measured curve (powerCurve: watts at 0%, 10%, ..., 100% load, linear in
// between), or, without one, the built-in formula with the node's powerctl.io/* parameters.
// Temperature scales the load-dependent part as the built-in model does (hotter silicon
// leaks more and fans spin faster as work is added), so a hot node costs more per core.
//
// Belief: the built-in model's parameters the predictor is given: the node's annotations, or,
// when it has none, a fit of its curve (what `powerctl calibrate` would learn), then each of
// idle and max watts off by a seeded random factor within +-error, so the schedulers never
// know the truth exactly and the comparison is honest.

#include "core/predict/predictor.h"
#include "core/simulate/snapshot.h"

#include <cstdint>
#include <random>

namespace powerctl::simulate {

using predict::BuiltinParams;

// Mean of the three temperatures, each min-max normalised with the node's labels and clamped
// to 0..1, as the built-in model reads them; a missing reading or range counts as 0.
double NormalisedTemperature(const SimNode& node);

// How a node's curve reaches the predictors: as the curve itself (what `powerctl calibrate`
// fits from measured history, or `label nodes --power-curve` sets), or as the built-in
// model's older idle/max/exponent form fitted to it (for comparison).
enum class BeliefForm { kCurve, kExponent };

// Without a curve: the annotations' parameters (defaults where absent). With one: the curve
// (kCurve), or idle and max from its ends and the exponent fitted to its shape (least
// squares over 0.05..4; kExponent). Annotations, when present, win: they are what the
// cluster's predictor uses.
BuiltinParams BelievedParams(const SimNode& node, BeliefForm form = BeliefForm::kCurve);

// The node's true watts at `cpu_fraction` (clamped to 0..1) of its CPU in use.
double TrueWatts(const SimNode& node, double cpu_fraction);

// `params` with idle and max each multiplied by a factor drawn uniformly from
// [1 - error, 1 + error]; max stays above idle; a curve's points between its ends follow
// linearly. error 0 returns `params`.
BuiltinParams WithError(BuiltinParams params, double error, std::mt19937_64& rng);

// A uniform draw in [0, 1) from the engine's raw output, so results do not depend on the
// standard library's distributions (which differ between implementations).
double Uniform01(std::mt19937_64& rng);

// PEAKS' node model, Power = k0 + k1 * exp(k2 * x), x in CPU percent.
struct PeaksModel {
  double k0 = 0, k1 = 0, k2 = 0;
};
// Least-squares fit to `params`' curve at the node's temperature (k2 on a grid, k0 and k1
// solved exactly for each): what PEAKS' offline training would produce from that model.
PeaksModel FitPeaksModel(const BuiltinParams& params, double normalised_temperature);

}  // namespace powerctl::simulate
