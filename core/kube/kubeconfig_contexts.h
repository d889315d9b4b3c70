#pragma once
// The context names of the kubeconfig files kubectl would read, for completing --context.

#include "core/kube/connection.h"

#include <string>
#include <vector>

namespace powerctl::kube {

// The contexts defined by the files of `request` (--kubeconfig, else $KUBECONFIG, else
// ~/.kube/config), sorted; files that are missing or do not parse contribute none.
std::vector<std::string> KubeconfigContexts(const ConnectionRequest& request);

}  // namespace powerctl::kube
