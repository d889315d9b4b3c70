#include "cli/component_targets.h"

#include "cli/kube_context.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

namespace powerctl::cli {
namespace {

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return MakeError(ErrorCode::kInvalidInput,
                     fmt::format("--scheduler-config {}: cannot read it", path));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

void AddComponentTargetFlags(CLI::App& cmd, ComponentTargetFlags& flags) {
  cmd.add_option("--extender-url", flags.extender_url,
                 "The extender runs as a process: its ops port, http://HOST:PORT")
      ->type_name("URL");
  cmd.add_option("--scheduler-config", flags.scheduler_config,
                 "kube-scheduler runs as a process with this configuration (from generate "
                 "--out-of-cluster); also gives the extender's host")
      ->type_name("FILE");
}

Result<std::unique_ptr<ComponentTargets>> MakeComponentTargets(const Context& ctx,
                                                               const ComponentTargetFlags& flags) {
  auto targets = std::make_unique<ComponentTargets>();
  POWERCTL_TRY(config, ctx.LoadConfig());
  setup::DoctorInput& input = targets->input;
  input.config = config;
  if (!flags.scheduler_config.empty()) {
    POWERCTL_TRY(text, ReadFile(flags.scheduler_config));
    POWERCTL_TRY(process, setup::ProcessTargetsFromSchedulerConfig(text, flags.scheduler_config,
                                                                   input.config));
    input.process = process;
  }
  if (!flags.extender_url.empty()) {
    auto url = setup::NormalizeOpsUrl(flags.extender_url);
    if (!url.ok()) return WithContext(url.error(), "--extender-url");
    input.process.extender_ops_url = *url;
  }
  if (input.process.any()) {
    targets->http = MakeCurlHttpClient(1 << 20);
    input.http = targets->http.get();
  }
  // The kubeconfig is resolved once: the client and the server doctor names come from it.
  auto connection = ResolveClusterConnection(ctx);
  if (!connection.ok()) {
    input.connection_error = connection.error().message;
    return targets;
  }
  auto client = ConnectToCluster(ctx, *connection);
  if (!client.ok()) {
    input.connection_error = client.error().message;
    return targets;
  }
  targets->client = std::move(*client);
  input.client = targets->client.get();
  input.server = connection->server;
  return targets;
}

}  // namespace powerctl::cli
