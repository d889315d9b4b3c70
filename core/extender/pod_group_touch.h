#pragma once
// Applies scoring::PodsToTouch: a JSON merge patch of one annotation per waiting pod, so
// kube-scheduler (which requeues an unschedulable pod when it is updated) tries them again
// once their pod group is complete.

#include "core/kube/client.h"
#include "core/scoring/pod_groups.h"

#include <string>
#include <vector>

namespace powerctl::extender {

struct TouchResult {
  std::vector<std::string> touched;  // "namespace/name"
  std::vector<std::string> gone;     // already deleted (404): nothing to requeue
  std::vector<std::string> errors;   // one line per pod that could not be patched
};

// Patches each pod; one failure does not stop the others.
TouchResult TouchPods(kube::Client& client, const std::vector<scoring::PodTouch>& touches);

}  // namespace powerctl::extender
