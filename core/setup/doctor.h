#pragma once
// `powerctl doctor`: preflight and health checks with stable IDs. Later issues add
// checks to the same list; the lb-agent's is in doctor_lb.h.

#include "core/common/http_client.h"
#include "core/common/result.h"
#include "core/config/config.h"
#include "core/kube/client.h"
#include "core/setup/component_probes.h"

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace powerctl::setup {

enum class CheckStatus { kPass, kWarn, kFail, kSkip };
std::string_view CheckStatusName(CheckStatus status);  // PASS WARN FAIL SKIP

struct CheckResult {
  std::string id;  // stable: "api-reachable", used in scripts and docs
  std::string title;
  CheckStatus status = CheckStatus::kSkip;
  std::string message;
  std::string fix;  // a concrete next step for WARN/FAIL
};

struct DoctorReport {
  std::vector<CheckResult> checks;
  bool failed() const;
};

struct DoctorInput {
  config::PowerctlConfig config;
  kube::Client* client = nullptr;  // null when no connection could be configured
  std::string connection_error;    // why, when client is null
  std::string server;              // for messages
  std::chrono::system_clock::time_point now = std::chrono::system_clock::now();
  // Set when kube-scheduler and the extender run as processes (out of the cluster): they are
  // probed there instead of as Deployments. `http` reaches them.
  ProcessTargets process;
  HttpClient* http = nullptr;
};

DoctorReport RunDoctor(const DoctorInput& input);

// "api-reachable": the server's /version answers.
CheckResult CheckApi(const DoctorInput& input);

// The scheduler, its Lease, the extender and the model server judged where they run, with
// what was observed: `doctor` lists the checks, `status` shows the same verdicts and details.
struct ComponentChecks {
  bool out_of_cluster = false;
  CheckResult scheduler_ready, scheduler_lease, extender_ready, model_ready;
  std::optional<DeploymentProbe> scheduler_deployment;  // in the cluster
  std::optional<DeploymentProbe> extender_deployment;   // in the cluster
  std::optional<ExtenderProbe> extender;                // out of the cluster
};
ComponentChecks CheckComponents(kube::Client& client, const DoctorInput& input);

// The IDs of every check, in order (documented in docs/troubleshooting.md).
const std::vector<std::string>& DoctorCheckIds();

}  // namespace powerctl::setup
