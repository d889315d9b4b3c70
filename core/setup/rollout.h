#pragma once
// Waiting for Deployments and DaemonSets to roll out, with the reason when they do not.

#include "core/common/clock.h"
#include "core/common/result.h"
#include "core/kube/client.h"

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace powerctl::setup {

enum class WorkloadKind { kDeployment, kDaemonSet };

struct DeploymentRef {
  std::string namespace_;
  std::string name;
  WorkloadKind kind = WorkloadKind::kDeployment;
};

struct RolloutProgress {
  std::string name;  // deployment/NAME or daemonset/NAME
  // A DaemonSet's are desiredNumberScheduled, updatedNumberScheduled and numberAvailable.
  int replicas = 0;
  int updated = 0;
  int available = 0;
  bool done = false;
  std::string waiting_for;  // why it is not done yet, from the Deployment and its pods
};

// Polls until every workload has observedGeneration >= generation and all replicas (a
// DaemonSet: all nodes it should run on) updated and available, as `kubectl rollout status`
// judges them. On timeout the error names each one still waiting and why (e.g. the
// scheduler's message for a Pending pod), not just "timed out".
Status WaitForRollouts(kube::Client& client, const std::vector<DeploymentRef>& deployments,
                       std::chrono::milliseconds timeout, const Clock& clock,
                       const std::function<void(const std::vector<RolloutProgress>&)>& on_progress);

// One look at a Deployment or DaemonSet (exposed for doctor).
Result<RolloutProgress> InspectRollout(kube::Client& client, const DeploymentRef& deployment);

}  // namespace powerctl::setup
