#pragma once
// Connecting to the cluster the way kubectl would, from the global flags.

#include "cli/context.h"
#include "core/kube/client.h"

#include <memory>

namespace powerctl::cli {

Result<std::unique_ptr<kube::Client>> ConnectToCluster(const Context& ctx);

}  // namespace powerctl::cli
