#include "cli/kube_context.h"

#include "core/kube/transport.h"

namespace powerctl::cli {

Result<std::unique_ptr<kube::Client>> ConnectToCluster(const Context& ctx,
                                                       const ConnectOptions& connect) {
  POWERCTL_TRY(connection, ResolveClusterConnection(ctx));
  return ConnectToCluster(ctx, connection, connect);
}

Result<kube::ClusterConnection> ResolveClusterConnection(const Context& ctx) {
  kube::ConnectionRequest request;
  request.kubeconfig_flag = ctx.globals.kubeconfig;
  request.context_flag = ctx.globals.context;
  request.environment = ctx.environment;
  return kube::ResolveConnection(request);
}

Result<std::unique_ptr<kube::Client>> ConnectToCluster(const Context& ctx,
                                                       const kube::ClusterConnection& connection,
                                                       const ConnectOptions& connect) {
  ctx.log->debug("cluster: {} ({})", connection.server, connection.description);
  kube::TransportOptions transport_options;
  transport_options.log = ctx.log;
  transport_options.environment = ctx.environment;
  transport_options.connect_timeout = connect.connect_timeout;
  POWERCTL_TRY(transport, kube::MakeCurlTransport(connection, transport_options));
  kube::ClientOptions options;
  options.log = ctx.log;
  options.max_attempts = connect.max_attempts;
  options.connection_description = connection.description;
  return std::make_unique<kube::Client>(std::move(transport), options);
}

std::string ObjectNamespace(const Context& ctx) {
  if (!ctx.globals.namespace_.empty()) return ctx.globals.namespace_;
  kube::ConnectionRequest request;
  request.kubeconfig_flag = ctx.globals.kubeconfig;
  request.context_flag = ctx.globals.context;
  request.environment = ctx.environment;
  auto connection = kube::ResolveConnection(request);
  return connection.ok() && !connection->namespace_.empty() ? connection->namespace_ : "default";
}

Result<config::PowerctlConfig> LoadConfigForObjectCommand(const Context& ctx) {
  Context config_ctx = ctx;
  config_ctx.globals.namespace_.clear();
  return config_ctx.LoadConfig();
}

}  // namespace powerctl::cli
