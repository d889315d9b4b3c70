#include "core/explain/scheduler_check.h"

#include "core/common/json_fields.h"
#include "core/config/names.h"

#include <fmt/format.h>

#include <ctime>

namespace powerctl::explain {
namespace {

using json = nlohmann::json;
using setup::CheckResult;
using setup::CheckStatus;

// Where a scheduler of this name keeps its Lease: (namespace, name) candidates.
std::vector<std::pair<std::string, std::string>> LeaseCandidates(
    const std::string& scheduler, const config::PowerctlConfig& config) {
  if (scheduler == config.scheduler.name) return {{config.namespace_, scheduler}};
  if (scheduler == "default-scheduler") return {{"kube-system", "kube-scheduler"}};
  return {{config.namespace_, scheduler}, {"kube-system", scheduler}};
}

bool ParseTime(const std::string& text, std::chrono::system_clock::time_point& out) {
  std::tm tm{};
  if (::strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S", &tm) == nullptr) return false;
  out = std::chrono::system_clock::from_time_t(::timegm(&tm));
  return true;
}

CheckResult CheckLease(kube::Client& kube, const std::string& scheduler,
                       const config::PowerctlConfig& config,
                       std::chrono::system_clock::time_point now) {
  CheckResult r{"scheduler-lease", "The pod's scheduler holds its lease", CheckStatus::kFail, "",
                ""};
  if (scheduler == config.scheduler.name && !config.scheduler.leader_elect) {
    r.status = CheckStatus::kSkip;
    r.message = "leader election is off (scheduler.leaderElect: false)";
    return r;
  }
  std::vector<std::string> tried;
  for (const auto& [ns, name] : LeaseCandidates(scheduler, config)) {
    auto lease = kube.Get("/apis/coordination.k8s.io/v1/namespaces/" + ns + "/leases/" + name);
    if (!lease.ok()) {
      if (lease.error().code != ErrorCode::kNotFound) {
        r.status = CheckStatus::kWarn;
        r.message = lease.error().message;
        return r;
      }
      tried.push_back(ns + "/" + name);
      continue;
    }
    const std::string holder = StringField(*lease, {"spec", "holderIdentity"});
    const long duration = IntField(*lease, {"spec", "leaseDurationSeconds"}, 15);
    std::chrono::system_clock::time_point renewed;
    const bool fresh = ParseTime(StringField(*lease, {"spec", "renewTime"}), renewed) &&
                       now - renewed <= std::chrono::seconds(2 * duration + 5);
    if (!holder.empty() && fresh) {
      r.status = CheckStatus::kPass;
      r.message = fmt::format("lease {}/{} held by {}", ns, name, holder);
    } else {
      r.message = holder.empty()
                      ? fmt::format("lease {}/{}: nobody holds it", ns, name)
                      : fmt::format("lease {}/{}: {} stopped renewing it", ns, name, holder);
    }
    return r;
  }
  std::string list;
  for (const std::string& t : tried) list += (list.empty() ? "" : ", ") + t;
  r.message = fmt::format("no lease {}: no scheduler named {} has started", list, scheduler);
  return r;
}

CheckResult CheckEventsFrom(const std::string& scheduler, const std::vector<PodEvent>& events) {
  CheckResult r{"scheduler-events", "The scheduler reported on the pod", CheckStatus::kWarn, "",
                ""};
  std::int64_t count = 0;
  for (const PodEvent& e : events) {
    if (e.from == scheduler) count += e.count;
  }
  if (count > 0) {
    r.status = CheckStatus::kPass;
    r.message = fmt::format("{} event(s) from {}", count, scheduler);
  } else {
    r.message = fmt::format("no event from {} (events expire after an hour)", scheduler);
  }
  return r;
}

CheckResult CheckExtender(kube::Client& kube, const config::PowerctlConfig& config) {
  CheckResult r{"extender-ready", "The extender is ready", CheckStatus::kWarn, "", ""};
  const std::string service = config::NamesFor(config).extender;
  auto ready = kube.Get(fmt::format("/api/v1/namespaces/{}/services/http:{}:ops/proxy/readyz",
                                    config.namespace_, service));
  if (!ready.ok()) {
    r.message = fmt::format("service {}/{} did not answer /readyz: {}", config.namespace_, service,
                            ready.error().message);
    r.fix = "powerctl doctor";
    return r;
  }
  std::string degraded;
  if (const json* list = FindField(*ready, {"degraded"}); list != nullptr && list->is_array()) {
    for (const json& d : *list) {
      degraded += (degraded.empty() ? "" : "; ") + StringField(d, {"name"}) + ": " +
                  StringField(d, {"reason"});
    }
  }
  r.status = degraded.empty() ? CheckStatus::kPass : CheckStatus::kWarn;
  r.message = degraded.empty() ? fmt::format("service {}/{} is ready", config.namespace_, service)
                               : "degraded: " + degraded;
  return r;
}

}  // namespace

SchedulerStatus CheckScheduler(kube::Client& kube, const std::string& scheduler,
                               const config::PowerctlConfig& config,
                               const std::vector<PodEvent>& events,
                               std::chrono::system_clock::time_point now) {
  SchedulerStatus out;
  CheckResult lease = CheckLease(kube, scheduler, config, now);
  CheckResult reported = CheckEventsFrom(scheduler, events);
  out.running = lease.status == CheckStatus::kPass || reported.status == CheckStatus::kPass ||
                (lease.status == CheckStatus::kSkip);
  if (scheduler == config.scheduler.name) {
    out.fix = fmt::format(
        "start powerctl's scheduler: powerctl apply scheduler --wait; then kubectl -n {} logs "
        "deployment/{}",
        config.namespace_, scheduler);
  } else if (scheduler == "default-scheduler") {
    out.fix = "check kube-scheduler: kubectl -n kube-system get pods -l component=kube-scheduler";
  } else {
    out.fix = fmt::format(
        "set the pod's spec.schedulerName to a running scheduler (powerctl's is {}), or start "
        "a scheduler named {}",
        config.scheduler.name, scheduler);
  }
  if (lease.status == CheckStatus::kFail && reported.status == CheckStatus::kPass) {
    // It reported on the pod, so it runs; without leader election it holds no lease.
    lease.status = CheckStatus::kWarn;
    lease.message += " (it did report on the pod: leader election may be off)";
  }
  if (lease.status == CheckStatus::kFail) lease.fix = out.fix;
  out.checks.push_back(std::move(lease));
  out.checks.push_back(std::move(reported));
  if (scheduler == config.scheduler.name) out.checks.push_back(CheckExtender(kube, config));
  return out;
}

}  // namespace powerctl::explain
