#include "core/simulate/batching.h"

#include <algorithm>
#include <numeric>

namespace powerctl::simulate {

OpportunisticBatch::Signature OpportunisticBatch::SignatureOf(const WorkloadPod& pod) {
  return {pod.cpu_request_millis, pod.memory_request_bytes, pod.cpu_nonzero_millis,
          pod.memory_nonzero_bytes};
}

std::optional<std::size_t> OpportunisticBatch::Hint(const WorkloadPod& pod,
                                                    const std::vector<NodeRuntime>& nodes) {
  // Only the pod right after a scored (or hinted) one of the same signature, and only once
  // the previous node is full for it: one pod per node.
  if (!signature_ || !(*signature_ == SignatureOf(pod)) || nodes[last_node_].Fits(pod)) {
    signature_.reset();
    ranking_.clear();
    return std::nullopt;
  }
  while (!ranking_.empty()) {
    std::size_t next = ranking_.front();
    ranking_.pop_front();
    // The hint goes through the filters; one that fails them ends the batch.
    if (!nodes[next].Fits(pod)) break;
    last_node_ = next;
    ++hinted_;
    return next;
  }
  signature_.reset();
  ranking_.clear();
  return std::nullopt;
}

void OpportunisticBatch::Store(const WorkloadPod& pod, const std::vector<std::size_t>& feasible,
                               const std::vector<std::int64_t>& scores, std::size_t chosen) {
  std::vector<std::size_t> order(feasible.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return scores[a] > scores[b]; });
  ranking_.clear();
  for (std::size_t k : order) {
    if (feasible[k] != chosen) ranking_.push_back(feasible[k]);
  }
  signature_ = SignatureOf(pod);
  last_node_ = chosen;
}

}  // namespace powerctl::simulate
