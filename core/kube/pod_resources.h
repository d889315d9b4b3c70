#pragma once
// A pod's effective CPU and memory by Kubernetes' rules (k8s.io/component-helpers
// resource/helpers.go PodRequests; docs/reference/extender-protocol.md, "The pod's effective
// request"), read from the Pod JSON the scheduler sends (or a manifest given to
// `powerctl score --pod`):
//
//   sum  = Σ containers[R] + Σ restartable init containers (sidecars, restartPolicy Always)[R]
//   init = max over init containers in order of (its R + the sidecars started before it);
//          a sidecar's own entry is the sidecars so far, itself included
//   R    = max(sum, init); pod-level spec.resources sets R instead when present; + spec.overhead
//
// Ephemeral containers are not counted. Keys are read with the exact lower-camel spelling the
// API server and the scheduler emit.
//
// Defaulting: the API server copies a limit into a missing request when it creates a pod, so
// pods the scheduler sends already have it; a manifest that was never created (score --pod)
// has not. The same defaulting is applied here, so both give the same numbers.
//
// Quantities are summed exactly: CPU in nanocores, memory in bytes (each quantity rounded up
// to a byte, as Value() does; fractional bytes do not occur in practice), then CPU is rounded
// up to millicores as the scheduler's MilliValue() does.

#include "core/common/result.h"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace powerctl::kube {

// kube-scheduler's scoring substitutes these for a container without a request
// (pkg/scheduler/util DefaultMilliCPURequest / DefaultMemoryRequest); filtering does not.
inline constexpr std::int64_t kDefaultMilliCpuRequest = 100;
inline constexpr std::int64_t kDefaultMemoryRequest = 200 * 1024 * 1024;

struct PodResources {
  std::int64_t cpu_request_millis = 0;
  std::int64_t memory_request_bytes = 0;
  // As above, with the scheduler's scoring defaults (kDefault*) for every counted container
  // without a request (PodRequests with NonMissingContainerRequests).
  std::int64_t cpu_request_nonzero_millis = 0;
  std::int64_t memory_request_nonzero_bytes = 0;
  // The pod's CPU limit by the same formula applied to limits (PodLimits); nullopt when a
  // counted container (regular, sidecar or init) has no CPU limit and no pod-level limit is
  // set: the pod is then unbounded.
  std::optional<std::int64_t> cpu_limit_millis;
  // True when no container sets a CPU request or limit (the power delta of such a pod is 0).
  bool cpu_unspecified = true;

  double cpu_request_cores() const { return static_cast<double>(cpu_request_millis) / 1000.0; }
};

// kInvalidInput naming the container and field when the pod is not an object, a container
// list is malformed or a quantity does not parse.
Result<PodResources> EffectivePodResources(const nlohmann::json& pod);

}  // namespace powerctl::kube
