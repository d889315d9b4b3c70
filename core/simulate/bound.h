#pragma once
// A lower bound on the cluster's true watts for a given amount of added CPU, whatever the
// scheduler: the figure `simulate` measures every scorer against.
//
// Method (a relaxation, so a bound): a placement puts x_i cores of the new work on node i,
// sum x_i = D, 0 <= x_i <= the node's free CPU, and draws sum W_i(base_i + x_i). Replace each
// W_i by its lower convex envelope over the node's free range (never above W_i) and let x_i
// be any real number (dropping pod sizes, memory and pod-count limits): the minimum of that
// separable convex problem is below every real placement's watts, and it is found exactly by
// filling the envelopes' segments in order of slope, cheapest first ("water filling").
//
// With `idle_off`, a node that takes no new work draws nothing (switched off): its envelope
// starts at (0, 0 W) instead of (0, W_i(base)), so the bound also covers placements that
// empty nodes. Nodes always draw W_i(base) otherwise (they are on).
//
// True watts come from TrueWatts: a measured curve is piecewise linear, so its envelope is
// exact; the built-in formula is sampled at 1 % steps (for a convex formula the bound can be
// high by the sampling's error, well under 0.1 %).

#include "core/simulate/scorers.h"

#include <vector>

namespace powerctl::simulate {

// The bound for `added_cores` more CPU in use on `nodes` (each at its base_cpu_used). More
// than the nodes' free CPU is capped at their free CPU.
double LowerBoundWatts(const std::vector<NodeRuntime>& nodes, double added_cores, bool idle_off);

}  // namespace powerctl::simulate
