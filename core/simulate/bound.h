#pragma once
// A lower bound on the cluster's true watts for a given amount of added CPU, whatever the
// scheduler: the figure `simulate` measures every scorer against.
//
// Method (a relaxation, so a bound): a placement puts y_ki pods of each size k on node i, no
// more than its free pod slots S_i in all, and draws sum W_i(base_i + x_i), x_i = sum_k c_k y_ki
// (c_k: the size's CPU), up to the node's free CPU. Replace each W_i by its lower convex
// envelope over that range (never above W_i) and let the y_ki be any real numbers (dropping
// memory and whole pods): the minimum of that convex problem is below every real placement's
// watts. It is computed in two steps, each a bound, and the higher is reported:
//  1. Water filling: with pod sizes dropped too (a node takes at most the CPU of its S_i
//     largest pods), the minimum is found exactly by filling the envelopes' segments in order
//     of slope, cheapest first.
//  2. Pricing pod sizes (Lagrangian dual): for any prices mu_k per pod of size k,
//     sum_k mu_k n_k + sum_i min over x_i of [envelope_i(x_i) - S_i phi(x_i / S_i)] is below
//     the minimum (weak duality), where phi(x) is the most price a slot holds at x cores per
//     slot. Supergradient ascent from water filling's prices raises it where slots bind: many
//     slots cannot all take the largest pods at once.
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
