#pragma once
// The flags `doctor` and `status` share to find an install, and the DoctorInput they build:
// the cluster connection, powerctl.yaml and, out of the cluster, where the extender and
// kube-scheduler run as processes.

#include "cli/context.h"
#include "core/common/http_client.h"
#include "core/kube/client.h"
#include "core/setup/doctor.h"

#include <CLI/CLI.hpp>

#include <memory>
#include <string>

namespace powerctl::cli {

struct ComponentTargetFlags {
  std::string extender_url;      // the extender's ops port, http://HOST:PORT
  std::string scheduler_config;  // what `generate scheduler --out-of-cluster` wrote
};

void AddComponentTargetFlags(CLI::App& cmd, ComponentTargetFlags& flags);

// What the input points into, kept alive as long as it is used.
struct ComponentTargets {
  setup::DoctorInput input;
  std::unique_ptr<kube::Client> client;
  std::unique_ptr<HttpClient> http;
};

// kInvalidInput for a bad URL or scheduler configuration, or a bad powerctl.yaml. A cluster
// that cannot be reached is not an error: the input says why.
Result<std::unique_ptr<ComponentTargets>> MakeComponentTargets(const Context& ctx,
                                                               const ComponentTargetFlags& flags);

}  // namespace powerctl::cli
