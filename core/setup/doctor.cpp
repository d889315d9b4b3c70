#include "core/setup/doctor.h"

#include "core/common/decimal.h"
#include "core/common/duration.h"
#include "core/config/names.h"
#include "core/kube/resources.h"
#include "core/manifests/components.h"
#include "core/setup/access.h"
#include "core/setup/doctor_consolidate.h"
#include "core/setup/doctor_gpu.h"
#include "core/setup/doctor_lb.h"
#include "core/setup/doctor_model.h"
#include "core/setup/doctor_power_source.h"
#include "core/setup/doctor_tls.h"
#include "core/setup/doctor_version.h"
#include "core/setup/label_nodes.h"
#include "core/setup/rollout.h"
#include "core/telemetry/metrics_api.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <ctime>
#include <optional>

namespace powerctl::setup {
namespace {

using json = nlohmann::json;

CheckResult Make(const std::string& id, const std::string& title) {
  return CheckResult{id, title, CheckStatus::kSkip, "", ""};
}

// How to point doctor at a component that runs as a process, for the fix of a missing
// Deployment.
std::string ProcessHint(const std::string& component) {
  if (component == "extender")
    return "; or, when the extender runs as a process, powerctl doctor --extender-url "
           "http://HOST:OPS_PORT";
  if (component == "scheduler")
    return "; or, when kube-scheduler runs as a process, powerctl doctor --scheduler-config FILE";
  return "";
}

CheckResult DeploymentCheck(const DeploymentProbe& p, const std::string& id,
                            const std::string& title, const std::string& component) {
  CheckResult r = Make(id, title);
  if (!p.found) {
    r.status = CheckStatus::kFail;
    r.message = p.error.empty()
                    ? fmt::format("deployment {}/{} does not exist", p.namespace_, p.name)
                    : p.error;
    r.fix = fmt::format("powerctl apply {} --wait{}", component,
                        p.error.empty() ? ProcessHint(component) : "");
    return r;
  }
  const RolloutProgress& progress = p.progress;
  r.status = progress.done ? CheckStatus::kPass : CheckStatus::kFail;
  r.message =
      fmt::format("deployment {}/{}: {}/{} available{}", p.namespace_, p.name, progress.available,
                  progress.replicas, progress.done ? "" : ": " + progress.waiting_for);
  if (!progress.done)
    r.fix = fmt::format("kubectl -n {} describe deployment {}", p.namespace_, p.name);
  return r;
}

// Where the Lease of powerctl's scheduler is: its configuration's when known, else
// powerctl.yaml's namespace and scheduler name.
std::pair<std::string, std::string> LeaseOf(const DoctorInput& in) {
  return {in.process.lease_namespace.empty() ? in.config.namespace_ : in.process.lease_namespace,
          in.process.lease_name.empty() ? in.config.scheduler.name : in.process.lease_name};
}

// What to do about a scheduler that is not running, in the cluster or out of it.
std::string SchedulerFix(const DoctorInput& in, bool out_of_cluster) {
  if (!out_of_cluster)
    return fmt::format("kubectl -n {} logs deployment/{}", in.config.namespace_,
                       in.config.scheduler.name);
  return fmt::format(
      "look at kube-scheduler's output; start it with kube-scheduler --config {} (docs/setup.md, "
      "\"Out of the cluster\")",
      in.process.scheduler_config.empty() ? "scheduler-config.yaml" : in.process.scheduler_config);
}

CheckResult LeaseCheck(const LeaseProbe& lease, const DoctorInput& in, bool out_of_cluster) {
  CheckResult r = Make("scheduler-lease", "Scheduler holds its lease");
  if (!in.config.scheduler.leader_elect) {
    r.message = "leader election is off (scheduler.leaderElect: false)";
    return r;
  }
  if (!lease.found) {
    r.status = CheckStatus::kFail;
    r.message = lease.error.empty()
                    ? fmt::format("lease {}/{} does not exist: no scheduler named {} has started",
                                  lease.namespace_, lease.name, lease.name)
                    : lease.error;
    r.fix = SchedulerFix(in, out_of_cluster);
    return r;
  }
  if (lease.holder.empty() || !lease.fresh) {
    r.status = CheckStatus::kFail;
    r.message = lease.holder.empty() ? "nobody holds the lease"
                                     : fmt::format("{} stopped renewing the lease", lease.holder);
    r.fix = SchedulerFix(in, out_of_cluster);
    return r;
  }
  r.status = CheckStatus::kPass;
  r.message = fmt::format("held by {}", lease.holder);
  return r;
}

// kube-scheduler as a process: its health endpoint when the configuration binds one, else its
// Lease is the only sign of life.
CheckResult SchedulerProcessCheck(const DoctorInput& in, const LeaseProbe& lease) {
  CheckResult r = Make("scheduler-ready", "Power-aware scheduler is running");
  if (!in.process.scheduler_healthz_url.empty() && in.http != nullptr) {
    HealthProbe health = ProbeHealth(*in.http, in.process.scheduler_healthz_url);
    if (health.healthy) {
      r.status = CheckStatus::kPass;
      r.message = fmt::format("kube-scheduler answers {}: {}", health.url, health.detail);
    } else {
      r.status = CheckStatus::kFail;
      r.message =
          health.reachable
              ? fmt::format("kube-scheduler at {} is not healthy: {}", health.url, health.detail)
              : fmt::format("no kube-scheduler answers at {}: {}", health.url, health.detail);
      r.fix = SchedulerFix(in, true);
    }
    return r;
  }
  if (!in.config.scheduler.leader_elect) {
    r.message =
        "no health endpoint known (Kubernetes 1.23 and later serve it on the secure port only) "
        "and leader election is off";
    return r;
  }
  if (lease.found && !lease.holder.empty() && lease.fresh) {
    r.status = CheckStatus::kPass;
    r.message = fmt::format("kube-scheduler {} renews lease {}/{} (no health endpoint known)",
                            lease.holder, lease.namespace_, lease.name);
  } else {
    r.status = CheckStatus::kFail;
    r.message = fmt::format("no kube-scheduler renews lease {}/{}", lease.namespace_, lease.name);
    r.fix = SchedulerFix(in, true);
  }
  return r;
}

// "127.0.0.1:8080" of "http://127.0.0.1:8080", for --ops-listen.
std::string HostPort(const std::string& url) {
  std::size_t scheme = url.find("://");
  return scheme == std::string::npos ? url : url.substr(scheme + 3);
}

std::string DegradedList(const ExtenderProbe& probe, const std::string& only = "") {
  std::vector<std::string> items;
  for (const auto& d : probe.degraded) {
    if (!only.empty() && d.name != only) continue;
    items.push_back(d.name + ": " + d.reason);
  }
  return fmt::format("{}", fmt::join(items, "; "));
}

CheckResult ExtenderProcessCheck(const ExtenderProbe& probe) {
  CheckResult r = Make("extender-ready", "Extender is running");
  if (!probe.reachable) {
    r.status = CheckStatus::kFail;
    r.message = fmt::format("no extender answers at {}: {}", probe.url, probe.error);
    r.fix = fmt::format(
        "start it: powerctl schedule-server -c powerctl.yaml --ops-listen {} with the --listen "
        "and TLS flags of docs/setup.md, \"Out of the cluster\"",
        HostPort(probe.url));
    return r;
  }
  if (!probe.ready) {
    r.status = CheckStatus::kFail;
    if (!probe.error.empty()) {
      r.message = fmt::format("the extender at {} is not ready: {}", probe.url, probe.error);
    } else {
      r.message = fmt::format("the extender at {} is not ready{}", probe.url,
                              probe.degraded.empty() ? "" : ": " + DegradedList(probe));
    }
    r.fix = "look at schedule-server's log (-v for more)";
    return r;
  }
  if (!probe.degraded.empty()) {
    r.status = CheckStatus::kWarn;
    r.message = fmt::format("ready at {}, degraded (neutral power scores): {}", probe.url,
                            DegradedList(probe));
    r.fix = "see docs/troubleshooting.md, \"The extender is degraded\"";
    return r;
  }
  r.status = CheckStatus::kPass;
  r.message = fmt::format("ready at {}", probe.url);
  return r;
}

// Out of the cluster the model server is whatever the extender reaches: its /readyz names the
// endpoints that fail.
CheckResult ModelProcessCheck(const ExtenderProbe& probe) {
  CheckResult r = Make("model-ready", "Model server is running");
  if (!probe.ready) {
    r.message = "skipped: the extender is not ready to ask";
    return r;
  }
  std::string failing = DegradedList(probe, "model");
  if (failing.empty()) {
    r.status = CheckStatus::kPass;
    r.message = fmt::format("the extender at {} reaches its model servers", probe.url);
  } else {
    r.status = CheckStatus::kFail;
    r.message = failing;
    r.fix = "check predictor.* in powerctl.yaml and that the model server runs";
  }
  return r;
}

CheckResult CheckNodeLabels(kube::Client& client) {
  CheckResult r = Make("node-labels", "Node temperature-range labels are valid");
  auto nodes = client.List(kube::CollectionPath(*kube::FindResourceType("Node"), ""));
  if (!nodes.ok()) {
    r.status = CheckStatus::kFail;
    r.message = nodes.error().message;
    return r;
  }
  std::vector<std::string> invalid;
  int unlabelled = 0;
  const std::pair<const char*, const char*> ranges[] = {
      {kAmbientMin, kAmbientMax}, {kCpu1Min, kCpu1Max}, {kCpu2Min, kCpu2Max}};
  for (const json& node : *nodes) {
    std::string name = node["metadata"].value("name", "");
    json labels = node["metadata"].value("labels", json::object());
    bool any = false;
    for (const auto& [min_key, max_key] : ranges) {
      bool has_min = labels.contains(min_key), has_max = labels.contains(max_key);
      any = any || has_min || has_max;
      if (has_min != has_max) {
        invalid.push_back(fmt::format("{}: {} without {}", name, has_min ? min_key : max_key,
                                      has_min ? max_key : min_key));
        continue;
      }
      if (!has_min) continue;
      std::string lo = labels[min_key], hi = labels[max_key];
      // Plain decimal only: MinimizePower's Go ParseFloat rejects hexadecimal like "0x12".
      std::optional<double> a = ParseDecimal(lo), b = ParseDecimal(hi);
      if (!a || !b || !(*b > *a)) {
        invalid.push_back(fmt::format("{}: {}={} {}={}", name, min_key, lo, max_key, hi));
      }
    }
    if (!any) ++unlabelled;
  }
  if (!invalid.empty()) {
    r.status = CheckStatus::kFail;
    r.message = fmt::format("invalid ranges (max must be a number above min): {}",
                            fmt::join(invalid, "; "));
    r.fix = "powerctl label nodes NODE --ambient MIN:MAX --cpu1 MIN:MAX --cpu2 MIN:MAX --overwrite";
  } else if (unlabelled > 0) {
    r.status = CheckStatus::kWarn;
    r.message = fmt::format(
        "{} of {} nodes have no temperature-range labels (temperatures are not normalised there)",
        unlabelled, nodes->size());
    r.fix = "powerctl label nodes --all --ambient 18:35 --cpu1 30:90 --cpu2 30:90";
  } else {
    r.status = CheckStatus::kPass;
    r.message = fmt::format("{} nodes labelled", nodes->size());
  }
  return r;
}

CheckResult CheckTelemetry(kube::Client& client, const config::PowerctlConfig& config) {
  CheckResult r = Make("telemetry", "Node CPU usage is available");
  if (config.telemetry.cpu_source != "metrics-api") {
    r.message = "cpu from Prometheus: checked by the extender's /readyz";
    return r;
  }
  telemetry::MetricsApiClient metrics_api(client);
  std::map<std::string, Error> invalid;
  auto metrics = metrics_api.ListNodeMetrics("", &invalid);
  if (!metrics.ok()) {
    r.status = CheckStatus::kFail;
    bool not_served = metrics.error().code == ErrorCode::kNotFound;
    r.message =
        not_served ? "metrics.k8s.io is not served" : "metrics.k8s.io: " + metrics.error().message;
    r.fix = not_served ? "install metrics-server, or set telemetry.cpuSource: prometheus"
                       : "kubectl get apiservice v1beta1.metrics.k8s.io; kubectl -n kube-system "
                         "logs deployment/metrics-server";
    return r;
  }
  // Usable means what the extender would use: decodable, with CPU, and not older than maxAge.
  auto max_age = ParseDuration(config.telemetry.max_age);
  auto now = std::chrono::system_clock::now();
  std::vector<std::string> unusable;
  for (const auto& [name, error] : invalid) {
    unusable.push_back(fmt::format("{} ({})", name.empty() ? "?" : name, error.message));
  }
  std::size_t usable = 0;
  for (const telemetry::NodeMetrics& m : *metrics) {
    if (max_age.ok() && now - m.timestamp > *max_age) {
      unusable.push_back(fmt::format("{} (stale: older than telemetry.maxAge {})", m.name,
                                     config.telemetry.max_age));
    } else {
      ++usable;
    }
  }
  std::size_t total = usable + unusable.size();
  if (total == 0) {
    r.status = CheckStatus::kWarn;
    r.message = "metrics.k8s.io reports 0 nodes";
    r.fix = "kubectl -n kube-system logs deployment/metrics-server";
  } else if (unusable.empty()) {
    r.status = CheckStatus::kPass;
    r.message = fmt::format("metrics.k8s.io reports {} node{}", usable, usable == 1 ? "" : "s");
  } else {
    r.status = usable == 0 ? CheckStatus::kFail : CheckStatus::kWarn;
    std::string list;
    for (std::size_t i = 0; i < unusable.size() && i < 5; ++i)
      list += (i ? "; " : "") + unusable[i];
    if (unusable.size() > 5) list += fmt::format("; and {} more", unusable.size() - 5);
    r.message = fmt::format("metrics.k8s.io has usable CPU usage for {} of {} nodes; unusable: {}",
                            usable, total, list);
    r.fix = "kubectl -n kube-system logs deployment/metrics-server";
  }
  return r;
}

CheckResult CheckPermissions(kube::Client& client, const config::PowerctlConfig& config) {
  CheckResult r = Make("permissions", "Your credentials can manage powerctl");
  const std::string& ns = config.namespace_;
  std::vector<AccessCheck> checks = {{"get", "", "nodes", "", ""},
                                     {"list", "", "pods", "", ""},
                                     {"patch", "", "nodes", "", ""},
                                     {"patch", "apps", "deployments", ns, ""},
                                     {"patch", "", "secrets", ns, ""},
                                     {"patch", "rbac.authorization.k8s.io", "clusterroles", "", ""},
                                     {"get", "coordination.k8s.io", "leases", ns, ""},
                                     {"list", "", "events", "", ""}};
  auto missing = MissingPermissions(client, checks);
  if (!missing.ok()) {
    r.status = CheckStatus::kFail;
    r.message = missing.error().message;
    return r;
  }
  if (missing->empty()) {
    r.status = CheckStatus::kPass;
    r.message = "apply, label and explain are allowed";
  } else {
    r.status = CheckStatus::kWarn;
    r.message = fmt::format("missing: {}", fmt::join(*missing, "; "));
    r.fix = "ask a cluster admin for these permissions, or use an admin kubeconfig for setup";
  }
  return r;
}

}  // namespace

std::string_view CheckStatusName(CheckStatus status) {
  switch (status) {
    case CheckStatus::kPass:
      return "PASS";
    case CheckStatus::kWarn:
      return "WARN";
    case CheckStatus::kFail:
      return "FAIL";
    case CheckStatus::kSkip:
      return "SKIP";
  }
  return "SKIP";
}

bool DoctorReport::failed() const {
  for (const CheckResult& c : checks) {
    if (c.status == CheckStatus::kFail) return true;
  }
  return false;
}

const std::vector<std::string>& DoctorCheckIds() {
  static const std::vector<std::string> ids = {
      "api-reachable",      "permissions",       "scheduler-ready",   "scheduler-lease",
      kKubeVersionCheckId,  "extender-ready",    "model-ready",       "node-labels",
      "telemetry",          kLbAgentCheckId,     kExtenderTlsCheckId, kModelAccuracyCheckId,
      kDrainedNodesCheckId, kPowerSourceCheckId, kGpuPowerCheckId};
  return ids;
}

CheckResult CheckApi(const DoctorInput& in) {
  CheckResult api = Make("api-reachable", "Kubernetes API is reachable");
  if (in.client != nullptr) {
    auto version = in.client->Version();
    if (version.ok()) {
      api.status = CheckStatus::kPass;
      api.message = fmt::format("Kubernetes {} at {}", version->git_version, in.server);
    } else {
      api.status = CheckStatus::kFail;
      api.message = version.error().message;
      api.fix = "check --kubeconfig/--context, the server address and your credentials";
    }
  } else {
    api.status = CheckStatus::kFail;
    api.message = in.connection_error;
    api.fix = "set --kubeconfig or KUBECONFIG, or pass --context";
  }
  return api;
}

ComponentChecks CheckComponents(kube::Client& client, const DoctorInput& in) {
  const config::PowerctlConfig& config = in.config;
  config::ObjectNames names = config::NamesFor(config);
  ComponentChecks out;
  // Told where the processes are: they are checked there, whatever Deployments exist.
  out.out_of_cluster = in.process.any();
  const auto [lease_ns, lease_name] = LeaseOf(in);
  LeaseProbe lease = ProbeLease(client, lease_ns, lease_name, in.now);
  if (out.out_of_cluster) {
    out.scheduler_ready = SchedulerProcessCheck(in, lease);
  } else {
    out.scheduler_deployment = ProbeDeployment(client, config.namespace_, config.scheduler.name);
    out.scheduler_ready = DeploymentCheck(*out.scheduler_deployment, "scheduler-ready",
                                          "Power-aware scheduler is running", "scheduler");
  }
  out.scheduler_lease = LeaseCheck(lease, in, out.out_of_cluster);
  if (out.out_of_cluster && !in.process.extender_ops_url.empty() && in.http != nullptr) {
    out.extender = ProbeExtender(*in.http, in.process.extender_ops_url);
    out.extender_ready = ExtenderProcessCheck(*out.extender);
  } else if (out.out_of_cluster) {
    out.extender_ready = Make("extender-ready", "Extender is running");
    out.extender_ready.message = "skipped: no extender URL (--extender-url)";
  } else {
    out.extender_deployment = ProbeDeployment(client, config.namespace_, names.extender);
    out.extender_ready = DeploymentCheck(*out.extender_deployment, "extender-ready",
                                         "Extender is running", "extender");
  }
  if (!config::PredictorNeedsModelServer(config)) {
    out.model_ready = Make("model-ready", "Model server is running");
    out.model_ready.message =
        fmt::format("predictor.backend is {}: no model server to check", config.predictor.backend);
  } else if (out.extender) {
    out.model_ready = ModelProcessCheck(*out.extender);
  } else {
    out.model_ready = DeploymentCheck(ProbeDeployment(client, config.namespace_, names.model),
                                      "model-ready", "Model server is running", "model");
  }
  return out;
}

DoctorReport RunDoctor(const DoctorInput& in) {
  DoctorReport report;
  CheckResult api = CheckApi(in);
  report.checks.push_back(api);
  if (api.status != CheckStatus::kPass) {
    for (std::size_t i = 1; i < DoctorCheckIds().size(); ++i) {
      CheckResult skipped = Make(DoctorCheckIds()[i], "");
      skipped.message = "skipped: the API is not reachable";
      report.checks.push_back(skipped);
    }
    return report;
  }
  kube::Client& client = *in.client;
  const config::PowerctlConfig& config = in.config;
  report.checks.push_back(CheckPermissions(client, config));
  ComponentChecks components = CheckComponents(client, in);
  report.checks.push_back(components.scheduler_ready);
  report.checks.push_back(components.scheduler_lease);
  report.checks.push_back(CheckKubeVersion(CollectKubeVersionFacts(client, components, in.now)));
  report.checks.push_back(components.extender_ready);
  report.checks.push_back(components.model_ready);
  report.checks.push_back(CheckNodeLabels(client));
  report.checks.push_back(CheckTelemetry(client, config));
  report.checks.push_back(CheckLbAgent(client, config));
  report.checks.push_back(CheckExtenderTls(client, config));
  report.checks.push_back(CheckModelAccuracy(client, in.http, config));
  report.checks.push_back(CheckDrainedNodes(client, in.now, config, in.http));
  report.checks.push_back(CheckPowerSource(in.http, config));
  report.checks.push_back(CheckGpuPower(client, in.http, config));
  return report;
}

}  // namespace powerctl::setup
