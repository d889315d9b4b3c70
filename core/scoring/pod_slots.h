#pragma once
// Pod slots in the fill objective. kubelet runs at most `maxPods` pods on a node (110 by
// default), so a many-core node can run out of pod slots long before its cores: 110 pods of
// one core each leave a 384-thread node at 29 % load, below the cheap part of its curve. The
// fill cost of one pod on a node (its cheapest watts per core of filling it further) takes
// slots into account twice:
//  - how far the node can still be filled: this pod, plus the candidates' average pod in each
//    of its other free slots (ReachableCpu, which caps the fill cost's chord);
//  - what a small pod costs where slots are short (SlotShareFactor): a pod takes a whole slot
//    whatever its size. On a node whose slots run out before its cores, one slot is worth its
//    share of the free CPU (free cores / free slots), and a pod smaller than that uses the slot's
//    share of the node while bringing less load. Its fill cost is raised in proportion, as a
//    dominant-resource share would count it: pods large enough for the slot are charged as
//    before, so the node's cheap capacity is kept for the pods that can reach it. The raise is
//    phased in by the cube of the share of the node's slots already used: while most slots are
//    free they are not scarce (at low cluster load they never run out), and a slot-short node
//    still takes small pods early.
// The lower bound `simulate` reports shows why this matters: where slots bind, the cheapest
// placement puts large pods on the many-core nodes and small ones elsewhere.

#include "core/cluster/node_cache.h"
#include "core/predict/node_power.h"

#include <vector>

namespace powerctl::scoring {

// The average pod's CPU as ReachableCpu counts it: rounded to about 1 % (a millicore at
// least). Every bind moves the exact average a little, and each node's remembered power
// estimate is keyed by what it reaches (PreparedNodeCache): rounded, a bind changes the key of
// the node it lands on only, instead of every node's. A 1 % change of the free slots' load
// is far below what the power model can tell apart.
double TypicalPodCpu(double average);

// How much CPU each node can still take: this pod, and pods as large as the nodes' pods are
// on average in its other free slots; infinite where the pod limit is unknown. nullptr nodes
// (not in the cluster cache) count as unknown.
std::vector<double> ReachableCpu(const std::vector<const cluster::NodeState*>& nodes,
                                 double pod_cpu);

// The factor (>= 1) by which a pod of `pod_cpu` cores raises its fill cost on `node` for the
// pod slot it takes; 1 where the node is not short of slots (`reachable_cpu` covers its free
// CPU), where the pod is at least a slot's share of the free CPU, or where facts are missing.
double SlotShareFactor(const cluster::NodeState& node, double reachable_cpu, double pod_cpu);

// Applies SlotShareFactor to each estimate's fill cost (and records it in fill_slot_factor).
// Overcommitted nodes and nodes without a fill cost are left alone.
void ApplySlotShare(std::vector<predict::PowerEstimate>& power,
                    const std::vector<const cluster::NodeState*>& nodes,
                    const std::vector<double>& reachable_cpu, double pod_cpu);

}  // namespace powerctl::scoring
