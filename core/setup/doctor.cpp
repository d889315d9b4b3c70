#include "core/setup/doctor.h"

#include "core/common/decimal.h"
#include "core/common/duration.h"
#include "core/config/names.h"
#include "core/kube/resources.h"
#include "core/manifests/components.h"
#include "core/setup/access.h"
#include "core/setup/doctor_lb.h"
#include "core/setup/doctor_tls.h"
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

CheckResult CheckDeployment(kube::Client& client, const std::string& id, const std::string& title,
                            const std::string& ns, const std::string& name,
                            const std::string& component) {
  CheckResult r = Make(id, title);
  auto p = InspectRollout(client, {ns, name});
  if (!p.ok()) {
    r.status = CheckStatus::kFail;
    r.message = p.error().code == ErrorCode::kNotFound
                    ? fmt::format("deployment {}/{} does not exist", ns, name)
                    : p.error().message;
    r.fix = fmt::format("powerctl apply {} --wait", component);
    return r;
  }
  r.status = p->done ? CheckStatus::kPass : CheckStatus::kFail;
  r.message = fmt::format("deployment {}/{}: {}/{} available{}", ns, name, p->available,
                          p->replicas, p->done ? "" : ": " + p->waiting_for);
  if (!p->done) r.fix = fmt::format("kubectl -n {} describe deployment {}", ns, name);
  return r;
}

// RFC 3339 (with optional fraction) to time_point; false when it does not parse.
bool ParseTime(const std::string& text, std::chrono::system_clock::time_point& out) {
  std::tm tm{};
  if (::strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S", &tm) == nullptr) return false;
  // Years 1900-2200 only: system_clock's 64-bit nanoseconds overflow past 2262.
  if (tm.tm_year < 0 || tm.tm_year > 300) return false;
  out = std::chrono::system_clock::from_time_t(::timegm(&tm));
  return true;
}

CheckResult CheckLease(kube::Client& client, const DoctorInput& in) {
  CheckResult r = Make("scheduler-lease", "Scheduler holds its lease");
  const std::string& ns = in.config.namespace_;
  const std::string& name = in.config.scheduler.name;
  if (!in.config.scheduler.leader_elect) {
    r.message = "leader election is off (scheduler.leaderElect: false)";
    return r;
  }
  auto lease = client.Get(kube::CollectionPath(*kube::FindResourceType("Lease"), ns) + "/" + name);
  if (!lease.ok()) {
    r.status = CheckStatus::kFail;
    r.message = lease.error().code == ErrorCode::kNotFound
                    ? fmt::format("lease {}/{} does not exist: no scheduler named {} has started",
                                  ns, name, name)
                    : lease.error().message;
    r.fix = fmt::format("kubectl -n {} logs deployment/{}", ns, name);
    return r;
  }
  const json& spec = lease->value("spec", json::object());
  std::string holder = spec.value("holderIdentity", "");
  int duration = spec.value("leaseDurationSeconds", 15);
  std::chrono::system_clock::time_point renewed;
  bool fresh = ParseTime(spec.value("renewTime", ""), renewed) &&
               in.now - renewed <= std::chrono::seconds(2 * duration + 5);
  if (holder.empty() || !fresh) {
    r.status = CheckStatus::kFail;
    r.message = holder.empty() ? "nobody holds the lease"
                               : fmt::format("{} stopped renewing the lease", holder);
    r.fix = fmt::format("kubectl -n {} logs deployment/{}", ns, name);
    return r;
  }
  r.status = CheckStatus::kPass;
  r.message = fmt::format("held by {}", holder);
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
      "api-reachable", "permissions", "scheduler-ready", "scheduler-lease", "extender-ready",
      "model-ready",   "node-labels", "telemetry",       kLbAgentCheckId,   kExtenderTlsCheckId};
  return ids;
}

DoctorReport RunDoctor(const DoctorInput& in) {
  DoctorReport report;
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
  config::ObjectNames names = config::NamesFor(config);
  report.checks.push_back(CheckPermissions(client, config));
  report.checks.push_back(CheckDeployment(client, "scheduler-ready",
                                          "Power-aware scheduler is running", config.namespace_,
                                          config.scheduler.name, "scheduler"));
  report.checks.push_back(CheckLease(client, in));
  report.checks.push_back(CheckDeployment(client, "extender-ready", "Extender is running",
                                          config.namespace_, names.extender, "extender"));
  if (config::PredictorNeedsModelServer(config)) {
    report.checks.push_back(CheckDeployment(client, "model-ready", "Model server is running",
                                            config.namespace_, names.model, "model"));
  } else {
    CheckResult model = Make("model-ready", "Model server is running");
    model.message =
        fmt::format("predictor.backend is {}: no model server to check", config.predictor.backend);
    report.checks.push_back(model);
  }
  report.checks.push_back(CheckNodeLabels(client));
  report.checks.push_back(CheckTelemetry(client, config));
  report.checks.push_back(CheckLbAgent(client, config));
  report.checks.push_back(CheckExtenderTls(client, config));
  return report;
}

}  // namespace powerctl::setup
