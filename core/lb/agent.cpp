#include "core/lb/agent.h"

#include "core/common/json_fields.h"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <algorithm>
#include <ctime>

namespace powerctl::lb {
namespace {

using json = nlohmann::json;

const std::vector<double> kSyncBuckets = {0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};

std::string Key(const std::string& ns, const std::string& name) {
  return ns + "/" + name;
}

std::string Rfc3339(std::chrono::system_clock::time_point t) {
  std::time_t seconds = std::chrono::system_clock::to_time_t(t);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", utc);
}

json PortJson(const BalancedService& port, const std::vector<EndpointRow>& rows) {
  json endpoints = json::array();
  for (const auto& e : port.endpoints) {
    json node = nullptr;
    std::string basis;
    for (const EndpointRow& row : rows) {
      if (row.endpoint.address != e.ip) continue;
      if (!row.node.empty()) node = row.node;
      basis = WeightBasisName(row.weight.basis);
    }
    endpoints.push_back({{"address", e.ip},
                         {"port", e.port},
                         {"node", node},
                         {"weight", e.weight},
                         {"basis", basis}});
  }
  return {{"port", port.port}, {"protocol", port.protocol}, {"endpoints", endpoints}};
}

}  // namespace

const char* SyncResultName(SyncResult result) {
  switch (result) {
    case SyncResult::kProgrammed:
      return "programmed";
    case SyncResult::kUnchanged:
      return "unchanged";
    case SyncResult::kFailed:
      return "failed";
  }
  return "unknown";
}

LbAgent::LbAgent(std::string node, config::PowerctlConfig config, AgentDependencies deps)
    : node_(std::move(node)), config_(std::move(config)), deps_(deps) {
  if (deps_.metrics == nullptr) own_metrics_ = std::make_unique<server::MetricsRegistry>();
  metrics_ = deps_.metrics != nullptr ? deps_.metrics : own_metrics_.get();
  // Registered up front so that /metrics shows every family (at zero) before the first sync.
  metrics_->Counter("powerctl_lb_syncs_total",
                    "lb-agent syncs by result (programmed, unchanged, failed)", {"result"});
  metrics_->Histogram("powerctl_lb_sync_duration_seconds",
                      "Time to read Services, predict and program the kernel", kSyncBuckets);
  metrics_->Gauge("powerctl_lb_rules_in_effect",
                  "1 while the agent's weights are in the kernel, 0 when kube-proxy alone "
                  "balances (nothing annotated, or programming failed)");
  metrics_->Gauge("powerctl_lb_services", "Annotated Services by state", {"state"});
  metrics_->Gauge("powerctl_lb_endpoint_weight", "Weight in effect per Service port and endpoint",
                  {"namespace", "service", "port", "endpoint"});
  metrics_->Gauge("powerctl_lb_last_sync_timestamp_seconds",
                  "Unix time of the last sync that reached the kernel or found it current");
}

std::vector<PlannedService> LbAgent::Plan(const std::vector<json>& services) const {
  std::vector<PlannedService> plan;
  for (const json& service : services) {
    if (!HasLoadBalancingAnnotation(service)) continue;
    if (std::string why = LeftToKubeProxy(service); !why.empty()) {
      plan.push_back(SkippedService(service, ServiceState::kSkipped, std::move(why)));
      continue;
    }
    auto weights = ComputeWeightsForService(service, config_, deps_.predict);
    if (!weights.ok()) {
      plan.push_back(SkippedService(service, ServiceState::kFailed, weights.error().message));
      continue;
    }
    plan.push_back(PlanService(service, *weights));
  }
  std::sort(plan.begin(), plan.end(), [](const PlannedService& a, const PlannedService& b) {
    return Key(a.namespace_, a.name) < Key(b.namespace_, b.name);
  });
  return plan;
}

SyncResult LbAgent::Sync(const std::vector<json>& services) {
  const auto started = std::chrono::steady_clock::now();
  std::vector<PlannedService> plan = Plan(services);
  std::vector<BalancedService> wanted;
  for (const PlannedService& s : plan) wanted.insert(wanted.end(), s.ports.begin(), s.ports.end());

  bool unchanged = false;
  {
    std::lock_guard lock(mu_);
    unchanged = in_effect_.has_value() && *in_effect_ == wanted;
  }
  SyncResult result = SyncResult::kUnchanged;
  Status programmed = OkStatus();
  if (!unchanged || deps_.balancer->MayDrift()) {
    // A drifting kernel is checked every time; the weights the agent wants did not change, so
    // a successful check still counts as unchanged.
    programmed = deps_.balancer->Program(wanted);
    if (!programmed.ok()) {
      result = SyncResult::kFailed;
    } else if (!unchanged) {
      result = SyncResult::kProgrammed;
    }
  }
  {
    std::lock_guard lock(mu_);
    if (result == SyncResult::kProgrammed) in_effect_ = wanted;
    if (result == SyncResult::kFailed) in_effect_.reset();
    if (result != SyncResult::kUnchanged || deps_.balancer->MayDrift()) {
      last_error_ = programmed.ok() ? "" : programmed.error().message;
      balancer_skipped_ = deps_.balancer->Skipped();
    }
    plan_ = plan;
    ++syncs_;
    if (result != SyncResult::kFailed) last_sync_ = std::chrono::system_clock::now();
  }
  if (auto& log = deps_.predict.log; log) {
    if (result == SyncResult::kFailed) {
      log->error("programming {} failed, kube-proxy carries the traffic: {}",
                 deps_.balancer->Mode(), programmed.error().message);
    } else if (result == SyncResult::kProgrammed) {
      log->info("programmed {}: {} Service port(s) of {} annotated Service(s)",
                deps_.balancer->Mode(), wanted.size(), plan.size());
      for (const BalancedService& port : wanted) {
        std::string weights;
        for (const auto& e : port.endpoints) {
          weights += fmt::format("{}{}:{}={}", weights.empty() ? "" : " ", e.ip, e.port, e.weight);
        }
        log->info("  {} -> {}", PortLabel(port), weights);
      }
    }
    for (const PlannedService& s : plan) {
      if (s.state != ServiceState::kBalanced && result != SyncResult::kUnchanged) {
        log->warn("service {}/{} left to kube-proxy ({}): {}", s.namespace_, s.name,
                  ServiceStateName(s.state), s.reason);
      }
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  Publish(plan, result, seconds);
  return result;
}

void LbAgent::Publish(const std::vector<PlannedService>& plan, SyncResult result, double seconds) {
  metrics_->Counter("powerctl_lb_syncs_total", "", {"result"}).Inc({SyncResultName(result)});
  metrics_->Histogram("powerctl_lb_sync_duration_seconds", "", kSyncBuckets).Observe(seconds);
  std::lock_guard lock(mu_);
  const bool in_effect = in_effect_.has_value() && !in_effect_->empty();
  metrics_->Gauge("powerctl_lb_rules_in_effect", "").Set(in_effect ? 1 : 0);
  auto& states = metrics_->Gauge("powerctl_lb_services", "", {"state"});
  for (ServiceState s : {ServiceState::kBalanced, ServiceState::kSkipped, ServiceState::kFailed}) {
    states.Set({ServiceStateName(s)}, static_cast<double>(std::count_if(
                                          plan.begin(), plan.end(),
                                          [s](const PlannedService& p) { return p.state == s; })));
  }
  auto& weights = metrics_->Gauge("powerctl_lb_endpoint_weight", "",
                                  {"namespace", "service", "port", "endpoint"});
  weights.Clear();
  if (in_effect) {
    for (const BalancedService& port : *in_effect_) {
      for (const auto& e : port.endpoints) {
        weights.Set({port.namespace_name, port.name, fmt::format("{}/{}", port.port, port.protocol),
                     fmt::format("{}:{}", e.ip, e.port)},
                    e.weight);
      }
    }
  }
  if (last_sync_) {
    metrics_->Gauge("powerctl_lb_last_sync_timestamp_seconds", "")
        .Set(std::chrono::duration<double>(last_sync_->time_since_epoch()).count());
  }
}

Status LbAgent::Shutdown() {
  Status removed = deps_.balancer->Remove();
  std::lock_guard lock(mu_);
  in_effect_.reset();
  metrics_->Gauge("powerctl_lb_rules_in_effect", "").Set(0);
  return removed;
}

bool LbAgent::synced() const {
  std::lock_guard lock(mu_);
  return syncs_ > 0;
}

std::string LbAgent::last_error() const {
  std::lock_guard lock(mu_);
  return last_error_;
}

json LbAgent::StatusJson() const {
  std::lock_guard lock(mu_);
  json services = json::array();
  for (const PlannedService& s : plan_) {
    json ports = json::array();
    for (const BalancedService& port : s.ports) ports.push_back(PortJson(port, s.rows));
    std::string state = ServiceStateName(s.state);
    std::string reason = s.reason;
    std::vector<std::string> notes = s.notes;
    int skipped_by_balancer = 0;
    for (const SkippedPort& skipped : balancer_skipped_) {
      if (skipped.service.rfind(Key(s.namespace_, s.name) + ":", 0) == 0) {
        notes.push_back(skipped.service + ": " + skipped.reason);
        ++skipped_by_balancer;
        if (reason.empty()) reason = skipped.reason;
      }
    }
    if (s.state == ServiceState::kBalanced &&
        skipped_by_balancer == static_cast<int>(s.ports.size())) {
      state = ServiceStateName(ServiceState::kSkipped);
    }
    services.push_back({{"namespace", s.namespace_},
                        {"name", s.name},
                        {"state", state},
                        {"reason", reason},
                        {"notes", notes},
                        {"ports", ports}});
  }
  return {{"apiVersion", "powerctl.io/v1alpha1"},
          {"kind", "LbAgentStatus"},
          {"node", node_},
          {"mode", deps_.balancer->Mode()},
          {"synced", syncs_ > 0},
          {"lastSync", last_sync_ ? json(Rfc3339(*last_sync_)) : json(nullptr)},
          {"lastError", last_error_},
          {"rulesInEffect", in_effect_.has_value() && !in_effect_->empty()},
          {"services", services}};
}

}  // namespace powerctl::lb
