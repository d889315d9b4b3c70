#pragma once
// Connecting to the cluster the way kubectl would, from the global flags.

#include "cli/context.h"
#include "core/kube/client.h"

#include <memory>
#include <string>

namespace powerctl::cli {

Result<std::unique_ptr<kube::Client>> ConnectToCluster(const Context& ctx);

// The namespace of a named object: -n, else the kubeconfig context's namespace (as kubectl),
// else "default".
std::string ObjectNamespace(const Context& ctx);

// powerctl.yaml for commands whose -n names the object's namespace (a pod, a Service), not
// powerctl's own: the config's namespace (where the extender and model server live) is kept.
Result<config::PowerctlConfig> LoadConfigForObjectCommand(const Context& ctx);

}  // namespace powerctl::cli
