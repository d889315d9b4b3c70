#pragma once
// The pods a simulation places, in arrival order: generated from a seed, or read from a file
// (`pods:` entries in the snapshot's pod shorthand, each optionally with `count: N`).

#include "core/common/result.h"
#include "core/simulate/snapshot.h"

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace powerctl::simulate {

struct WorkloadPod {
  SimPod pod;
  // From core/kube/pod_resources (the rules the server uses).
  std::int64_t cpu_request_millis = 0;
  std::int64_t memory_request_bytes = 0;
  std::int64_t cpu_nonzero_millis = 0;  // with the scheduler's defaults for empty requests
  std::int64_t memory_nonzero_bytes = 0;
};

// The generated mix: mostly small web/batch pods, some large ones; a fifth carry a sidecar as
// their second container (which WAO's MinimizePower does not see). CPU 100m-4, memory
// 0.5-4 GiB per core. Pods are generated until `pods` pods, or until their CPU requests
// reach `cpu_cores`, whichever is given (pods wins).
struct WorkloadSpec {
  std::uint64_t seed = 1;
  std::optional<int> pods;
  double cpu_cores = 0;
};
std::vector<WorkloadPod> GenerateWorkload(const WorkloadSpec& spec);

// At most this many pods in a workload file, `count:` included (150,000 is the most a
// Kubernetes cluster is tested with).
inline constexpr std::size_t kMaxWorkloadPods = 500'000;

// Reads a workload file; YAML limits as for a snapshot (InputFileYamlLimits).
Result<std::vector<WorkloadPod>> ParseWorkload(std::string_view text, std::string_view source);

// Requests of a pod object (kInvalidInput naming the pod when they cannot be read).
Result<WorkloadPod> MakeWorkloadPod(SimPod pod);

}  // namespace powerctl::simulate
