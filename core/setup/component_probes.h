#pragma once
// One look at each part of an install, wherever it runs: a Deployment in the cluster, or a
// process (kube-scheduler and `powerctl schedule-server` started by hand, out of the cluster)
// reached at its health endpoints. `doctor` judges these observations as checks and `status`
// shows them; neither probes anything itself.

#include "core/common/http_client.h"
#include "core/common/result.h"
#include "core/config/config.h"
#include "core/kube/client.h"
#include "core/setup/rollout.h"

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace powerctl::setup {

// A pod's container port named "ops" (what the pod really runs: the extender's and the
// lb-agent's plain /healthz, /readyz and /metrics), else `fallback` (the configured port).
int OpsPort(const nlohmann::json& pod, int fallback);

// Where the scheduler and the extender run when they are processes rather than Deployments.
// Empty fields are unknown.
struct ProcessTargets {
  std::string extender_ops_url;       // "http://127.0.0.1:8080": the extender's ops port
  std::string scheduler_healthz_url;  // "http://127.0.0.1:10251/healthz" (1.20 to 1.22 only)
  std::string scheduler_config;       // the file they came from, for fix lines
  std::string lease_namespace;        // the scheduler's Lease, from its configuration
  std::string lease_name;
  bool any() const { return !extender_ops_url.empty() || !scheduler_config.empty(); }
};

// Reads the configuration `generate scheduler --out-of-cluster` wrote (`source` names it in
// errors): the extender's host from its urlPrefix with `config.extender.opsPort` (the ops
// port is plain HTTP beside the scheduler's TLS port), the Lease from leaderElection, and
// the legacy healthz listener when the configuration binds one. kInvalidInput when it is
// not a KubeSchedulerConfiguration with an extender.
Result<ProcessTargets> ProcessTargetsFromSchedulerConfig(std::string_view yaml_text,
                                                         std::string_view source,
                                                         const config::PowerctlConfig& config);

// "http://HOST:PORT" with no path: what --extender-url accepts. kInvalidInput otherwise.
Result<std::string> NormalizeOpsUrl(const std::string& url);

// A Deployment: its rollout and the image of its first container.
struct DeploymentProbe {
  std::string namespace_, name;
  bool found = false;
  std::string error;  // reading it failed (other than "not found")
  RolloutProgress progress;
  std::string image;  // "registry.example.com/powerctl:0.1.0"
};
DeploymentProbe ProbeDeployment(kube::Client& client, const std::string& ns,
                                const std::string& name);

// A Lease: who holds it and whether they renew it (within twice its duration plus 5s).
struct LeaseProbe {
  std::string namespace_, name;
  bool found = false;
  std::string error;  // reading it failed (other than "not found")
  std::string holder;
  bool fresh = false;
  std::optional<std::chrono::seconds> renewed_ago;
};
LeaseProbe ProbeLease(kube::Client& client, const std::string& ns, const std::string& name,
                      std::chrono::system_clock::time_point now);

// One telemetry source as the extender's /metrics reports it.
struct TelemetrySourceProbe {
  std::string source;                 // "cpu", "temperature"
  std::optional<double> age_seconds;  // of its newest snapshot; none before the first
  bool failing = false;               // its last refresh failed
};

// An extender's ops port: GET /healthz, /readyz and /metrics.
struct ExtenderProbe {
  std::string url;         // the ops URL probed
  bool reachable = false;  // /healthz answered at all
  std::string error;       // why not, or why /readyz could not be read
  bool live = false;       // /healthz 200
  bool ready = false;      // /readyz 200 with "ready": true
  struct Degraded {
    std::string name, reason;
  };
  std::vector<Degraded> degraded;  // named while ready: scores fall back to neutral there
  std::string version;             // from /metrics' powerctl_build_info; "" when not said
  std::vector<TelemetrySourceProbe> telemetry;
};
ExtenderProbe ProbeExtender(HttpClient& http, const std::string& ops_url);

// An extender in the cluster: its Service's ops port through the API server's service proxy,
// /readyz only (ready and degraded; no telemetry ages: /metrics is not JSON).
ExtenderProbe ProbeExtenderService(kube::Client& client, const std::string& ns,
                                   const std::string& service);

// A plain HTTP health endpoint (kube-scheduler's legacy /healthz).
struct HealthProbe {
  std::string url;
  bool reachable = false;
  bool healthy = false;  // 200
  std::string detail;    // the error, or the status and first line of the body
};
HealthProbe ProbeHealth(HttpClient& http, const std::string& url);

}  // namespace powerctl::setup
