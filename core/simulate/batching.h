#pragma once
// kube-scheduler's OpportunisticBatching (beta, on by default from 1.35) as the simulator plays
// it, to measure what it would cost in watts if it applied to powerctl's profile (it does not:
// a profile with extenders gets no pod signatures;
// docs/reference/kube-scheduler-config.md#opportunistic-batching). Read in
// pkg/scheduler/framework/runtime/batch.go (1.35): after a pod is scored, the nodes below the
// chosen one are kept in ranking order; the next pod with the same signature, when the previous
// pod's node no longer fits it, takes the next node of that ranking that its filters accept,
// without being scored. A different signature, or a previous node that still fits, ends the batch.
// The simulator's signature is the pod's requests (its pods carry no affinity, spread constraints
// or claims, which would make them unsignable), and its arrivals are back to back, so the 500 ms
// age limit never ends a batch: an upper bound of batching.

#include "core/simulate/scorers.h"

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

namespace powerctl::simulate {

class OpportunisticBatch {
 public:
  // The node kube-scheduler would bind `pod` to without scoring it, or none (score it). A
  // returned node fits `pod`; the batch moves on past it.
  std::optional<std::size_t> Hint(const WorkloadPod& pod, const std::vector<NodeRuntime>& nodes);
  // After `pod` was scored (`scores[k]` for nodes[feasible[k]]) and bound to nodes[chosen]:
  // the rest of the ranking, best first, for the pods like it that follow.
  void Store(const WorkloadPod& pod, const std::vector<std::size_t>& feasible,
             const std::vector<std::int64_t>& scores, std::size_t chosen);
  int hinted() const { return hinted_; }

 private:
  struct Signature {
    std::int64_t cpu = 0, memory = 0, cpu_nonzero = 0, memory_nonzero = 0;
    bool operator==(const Signature&) const = default;
  };
  static Signature SignatureOf(const WorkloadPod& pod);

  std::optional<Signature> signature_;
  std::size_t last_node_ = 0;
  std::deque<std::size_t> ranking_;
  int hinted_ = 0;
};

}  // namespace powerctl::simulate
