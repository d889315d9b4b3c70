#pragma once
// A lower bound on the cluster's true watts for a given amount of added CPU, whatever the
// scheduler: the figure `simulate` measures every scorer against.
//
// Method (a relaxation, so a bound): a placement puts x_i cores of the new pods on node i,
// sum x_i = D, and draws sum W_i(base_i + x_i). x_i can be no more than the node's free CPU,
// nor than the CPU of the largest pods that fit its free pod slots (a node with 250 slots
// cannot take more than the 250 largest pods, however many cores it has). Replace each W_i by
// its lower convex envelope over that range (never above W_i) and let x_i be any real number
// within it (dropping pod sizes and memory): the minimum of that separable convex problem is
// below every real placement's watts, and it is found exactly by filling the envelopes'
// segments in order of slope, cheapest first ("water filling").
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

// The bound for placing pods of `pod_cores` (the CPU each requests) on `nodes` (each at its
// base_cpu_used and pod_count). Pods no node could take are left out.
double LowerBoundWatts(const std::vector<NodeRuntime>& nodes, std::vector<double> pod_cores,
                       bool idle_off);

}  // namespace powerctl::simulate
