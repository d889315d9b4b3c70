#include "core/setup/status.h"

#include "core/common/build_info.h"
#include "core/config/names.h"
#include "core/consolidate/marked_nodes.h"
#include "core/consolidate/node_marks.h"
#include "core/setup/doctor_version.h"

#include <fmt/format.h>

namespace powerctl::setup {
namespace {

// "registry.example.com:5000/powerctl:0.1.0" -> "0.1.0"; a digest is kept whole; "" untagged.
std::string ImageVersion(const std::string& image) {
  std::size_t at = image.find('@');
  if (at != std::string::npos) return image.substr(at + 1);
  std::size_t slash = image.rfind('/');
  std::size_t colon = image.rfind(':');
  if (colon == std::string::npos || (slash != std::string::npos && colon < slash)) return "";
  return image.substr(colon + 1);
}

bool Ready(const CheckResult& check) {
  return check.status == CheckStatus::kPass || check.status == CheckStatus::kWarn;
}

ComponentStatus FromCheck(const std::string& name, const std::string& where,
                          const CheckResult& check) {
  ComponentStatus c;
  c.name = name;
  c.where = where;
  c.checked = check.status != CheckStatus::kSkip;
  c.ready = Ready(check) || !c.checked;
  c.detail = check.message;
  if (!c.ready) c.fix = check.fix;
  return c;
}

ConsolidationStatus CollectConsolidation(kube::Client& client,
                                         std::chrono::system_clock::time_point now) {
  ConsolidationStatus out;
  auto nodes = consolidate::InspectMarkedNodes(client, now);
  if (!nodes.ok()) {
    out.error = nodes.error().message;
    return out;
  }
  out.known = true;
  for (const consolidate::MarkedNode& n : *nodes) {
    if (n.mark.state == consolidate::kPowerStateDraining) {
      ++out.draining;
    } else {
      ++out.drained;
      out.expected_watts_saved += n.mark.expected_watts_saved;
    }
    if (!n.drift.empty())
      out.drifted.push_back(n.name + ": " + fmt::format("{}", fmt::join(n.drift, "; ")));
  }
  return out;
}

}  // namespace

bool StatusReport::AllReady() const {
  if (!api_reachable) return false;
  for (const ComponentStatus& c : components) {
    if (!c.ready) return false;
  }
  return true;
}

std::string StatusReport::NotReady() const {
  std::vector<std::string> items;
  if (!api_reachable) items.push_back(fmt::format("the API ({})", api));
  for (const ComponentStatus& c : components) {
    if (!c.ready) items.push_back(fmt::format("{} ({})", c.name, c.detail));
  }
  return fmt::format("{}", fmt::join(items, "; "));
}

StatusReport CollectStatus(const DoctorInput& in) {
  StatusReport report;
  report.client_version = GetBuildInfo().version;
  report.mode = in.process.any() ? "out-of-cluster" : "in-cluster";
  CheckResult api = CheckApi(in);
  report.api_reachable = api.status == CheckStatus::kPass;
  report.api = api.message;
  if (!report.api_reachable) {
    for (const char* name : {"scheduler", "extender", "model"}) {
      report.components.push_back(
          {name, "", false, true, "unknown: the API is not reachable", api.fix});
    }
    return report;
  }
  ComponentChecks checks = CheckComponents(*in.client, in);
  CheckResult line = CheckKubeVersion(CollectKubeVersionFacts(*in.client, checks, in.now));
  report.kubernetes_line = line.message;
  report.kubernetes_line_ok = line.status == CheckStatus::kPass;
  const config::PowerctlConfig& config = in.config;
  config::ObjectNames names = config::NamesFor(config);
  auto deployment = [&config](const std::string& name) {
    return fmt::format("deployment {}/{}", config.namespace_, name);
  };
  std::string scheduler_where = deployment(config.scheduler.name);
  if (checks.out_of_cluster) {
    scheduler_where = in.process.scheduler_healthz_url.empty()
                          ? fmt::format("process (lease {})", config.scheduler.name)
                          : "process " + in.process.scheduler_healthz_url;
  }
  // A scheduler is running only when it also holds its Lease (unless leader election is off):
  // a Deployment can be available while its kube-scheduler cannot reach the API.
  ComponentStatus scheduler = FromCheck("scheduler", scheduler_where, checks.scheduler_ready);
  if (scheduler.ready && checks.scheduler_lease.status == CheckStatus::kFail) {
    scheduler.ready = false;
    scheduler.detail = "lease: " + checks.scheduler_lease.message;
    scheduler.fix = checks.scheduler_lease.fix;
  }
  report.components.push_back(scheduler);
  std::string extender_where =
      checks.extender ? "process " + checks.extender->url : deployment(names.extender);
  report.components.push_back(FromCheck("extender", extender_where, checks.extender_ready));
  report.components.push_back(
      FromCheck("model", checks.extender ? "through the extender" : deployment(names.model),
                checks.model_ready));

  if (checks.extender_deployment && checks.extender_deployment->found) {
    report.installed_image = checks.extender_deployment->image;
    report.installed_version = ImageVersion(report.installed_image);
    // What the running extender says of its dependencies, through its Service.
    if (checks.extender_deployment->progress.available > 0) {
      ExtenderProbe service = ProbeExtenderService(*in.client, config.namespace_, names.extender);
      for (const auto& d : service.degraded) report.degraded.push_back(d.name + ": " + d.reason);
    }
  }
  // A process extender says its build on /metrics (powerctl_build_info).
  if (checks.extender && !checks.extender->version.empty()) {
    report.installed_version = checks.extender->version;
  }
  if (checks.extender && checks.extender->ready) {
    report.telemetry_known = true;
    for (const TelemetrySourceProbe& t : checks.extender->telemetry)
      report.telemetry.push_back({t.source, t.age_seconds, t.failing});
    for (const auto& d : checks.extender->degraded)
      report.degraded.push_back(d.name + ": " + d.reason);
    // The reasons are listed once, under Degraded, rather than again in the extender's line.
    for (ComponentStatus& c : report.components) {
      if (c.name != "extender" || report.degraded.empty()) continue;
      c.detail = fmt::format("ready at {}, {} degraded (neutral power scores there)",
                             checks.extender->url, report.degraded.size());
    }
  }
  report.consolidation = CollectConsolidation(*in.client, in.now);
  return report;
}

Status WaitForStatus(const DoctorInput& input, std::chrono::milliseconds timeout,
                     const Clock& clock, StatusReport& last,
                     const std::function<void(const StatusReport&)>& on_report,
                     std::chrono::milliseconds interval) {
  const auto start = clock.now();
  const auto deadline = start + timeout;
  DoctorInput in = input;
  while (true) {
    // Lease freshness is judged at each look's own time.
    in.now = input.now +
             std::chrono::duration_cast<std::chrono::system_clock::duration>(clock.now() - start);
    last = CollectStatus(in);
    if (on_report) on_report(last);
    if (last.AllReady()) return OkStatus();
    if (clock.now() >= deadline) {
      return MakeError(
          ErrorCode::kCheckFailed,
          fmt::format("timed out after {}s waiting for: {}",
                      std::chrono::duration_cast<std::chrono::seconds>(timeout).count(),
                      last.NotReady()));
    }
    clock.sleep(interval);
  }
}

}  // namespace powerctl::setup
