#pragma once
// Connecting to the cluster the way kubectl would, from the global flags.

#include "cli/context.h"
#include "core/kube/client.h"
#include "core/kube/connection.h"

#include <chrono>
#include <memory>
#include <string>

namespace powerctl::cli {

// How hard to try: commands that must reach the cluster retry; a probe for defaults
// (`init` asking the cluster) gives up at once.
struct ConnectOptions {
  int max_attempts = 5;
  std::chrono::milliseconds connect_timeout{10000};
};

Result<std::unique_ptr<kube::Client>> ConnectToCluster(const Context& ctx,
                                                       const ConnectOptions& connect = {});

// The connection ConnectToCluster uses (--kubeconfig, --context, $KUBECONFIG, ...), for a
// command that needs its server and CA too, and a client for it.
Result<kube::ClusterConnection> ResolveClusterConnection(const Context& ctx);
Result<std::unique_ptr<kube::Client>> ConnectToCluster(const Context& ctx,
                                                       const kube::ClusterConnection& connection,
                                                       const ConnectOptions& connect = {});

// The namespace of a named object: -n, else the kubeconfig context's namespace (as kubectl),
// else "default".
std::string ObjectNamespace(const Context& ctx);

// powerctl.yaml for commands whose -n names the object's namespace (a pod, a Service), not
// powerctl's own: the config's namespace (where the extender and model server live) is kept.
Result<config::PowerctlConfig> LoadConfigForObjectCommand(const Context& ctx);

}  // namespace powerctl::cli
