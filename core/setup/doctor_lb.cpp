#include "core/setup/doctor_lb.h"

#include "core/config/names.h"
#include "core/kube/resources.h"
#include "core/lb/agent_status.h"
#include "core/setup/component_probes.h"

#include <fmt/format.h>

#include <chrono>
#include <map>
#include <set>
#include <vector>

namespace powerctl::setup {
namespace {

using json = nlohmann::json;

// Each /status read is one proxied request; a large cluster is judged by a sample rather
// than making doctor take minutes.
constexpr std::size_t kMaxStatusReads = 50;
constexpr std::size_t kMaxListed = 5;
// An agent answers /status from memory; a node port the API server cannot reach would
// otherwise hold doctor for the API server's 30s dial timeout per pod.
constexpr std::chrono::seconds kStatusTimeout{10};

std::string Listed(const std::vector<std::string>& items) {
  std::string out;
  for (std::size_t i = 0; i < items.size() && i < kMaxListed; ++i)
    out += (i ? "; " : "") + items[i];
  if (items.size() > kMaxListed) out += fmt::format("; and {} more", items.size() - kMaxListed);
  return out;
}

std::string Plural(std::size_t n, const char* word) {
  return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s");
}

std::string Selector(const json& daemon_set) {
  std::string out;
  const json& labels = daemon_set.value("spec", json::object())
                           .value("selector", json::object())
                           .value("matchLabels", json::object());
  for (const auto& [k, v] : labels.items()) {
    if (!v.is_string()) continue;
    out += (out.empty() ? "" : ",") + k + "=" + v.get<std::string>();
  }
  return out;
}

bool PodReady(const json& pod) {
  for (const json& c : pod.value("status", json::object()).value("conditions", json::array())) {
    if (c.value("type", "") == "Ready") return c.value("status", "") == "True";
  }
  return false;
}

struct Findings {
  std::vector<std::string> failures;
  std::vector<std::string> warnings;
  // The first failure's next step, else the first warning's.
  std::string failure_fix, warning_fix;
  std::set<std::string> balanced;                                      // namespace/name
  std::map<std::pair<std::string, std::string>, std::string> skipped;  // (ns, name) -> reason
  std::map<std::string, std::vector<std::string>> failed;  // "ns/name failed: reason" -> nodes
  std::size_t balancing_nodes = 0;

  void Fail(std::string what, const std::string& fix) {
    failures.push_back(std::move(what));
    if (failure_fix.empty()) failure_fix = fix;
  }
  void Warn(std::string what, const std::string& fix) {
    warnings.push_back(std::move(what));
    if (warning_fix.empty()) warning_fix = fix;
  }
};

void ReadAgentStatus(kube::Client& client, const std::string& ns, const json& pod, int port,
                     Findings& f) {
  const std::string pod_name = pod["metadata"].value("name", "");
  const std::string node = pod.value("spec", json::object()).value("nodeName", pod_name);
  auto document = client.GetProxied(LbAgentStatusPath(ns, pod_name, port), kStatusTimeout);
  if (!document.ok()) {
    f.Warn(fmt::format("node {}: /status not readable through the API server: {}", node,
                       document.error().message),
           fmt::format("kubectl -n {} logs {} (doctor needs get pods/proxy, and the API server "
                       "must reach the node's port {})",
                       ns, pod_name, port));
    return;
  }
  auto status = lb::AgentStatusFromJson(*document);
  if (!status.ok()) {
    f.Warn(fmt::format("node {}: {}", node, status.error().message),
           fmt::format("kubectl -n {} logs {}", ns, pod_name));
    return;
  }
  if (!status->last_error.empty()) {
    f.Fail(fmt::format("node {}: programming failed: kube-proxy carries the traffic: {}", node,
                       status->last_error),
           fmt::format("kubectl -n {} logs {}", ns, pod_name));
    return;
  }
  if (!status->synced) {
    f.Warn(fmt::format("node {}: no sync finished yet", node),
           fmt::format("kubectl -n {} logs {}", ns, pod_name));
    return;
  }
  ++f.balancing_nodes;
  for (const lb::AgentServiceStatus& s : status->services) {
    std::string key = s.namespace_ + "/" + s.name;
    if (s.state == "balanced") {
      f.balanced.insert(key);
    } else if (s.state == "failed") {
      f.failed[s.reason.empty() ? key + " failed" : key + " failed: " + s.reason].push_back(node);
    } else {
      // skipped, or a state a newer agent knows and this doctor does not: not balanced
      // here, kube-proxy's as before.
      std::string reason = s.state == "skipped" ? s.reason
                           : s.reason.empty()   ? "state " + s.state
                                                : "state " + s.state + ": " + s.reason;
      f.skipped.emplace(std::make_pair(s.namespace_, s.name), reason);
    }
  }
}

}  // namespace

std::string LbAgentStatusPath(const std::string& ns, const std::string& pod, int port) {
  // Pod names are DNS subdomains: nothing to escape. "POD:PORT" is plain HTTP.
  return fmt::format("{}/{}:{}/proxy/status",
                     kube::CollectionPath(*kube::FindResourceType("Pod"), ns), pod, port);
}

CheckResult CheckLbAgent(kube::Client& client, const config::PowerctlConfig& config) {
  CheckResult r{kLbAgentCheckId, "lb-agent balances Services on every node", CheckStatus::kSkip, "",
                ""};
  const std::string& ns = config.namespace_;
  const std::string name = config::NamesFor(config).lb_agent;
  auto daemon_set =
      client.Get(kube::CollectionPath(*kube::FindResourceType("DaemonSet"), ns) + "/" + name);
  if (!daemon_set.ok()) {
    if (daemon_set.error().code == ErrorCode::kNotFound) {
      r.message =
          fmt::format("no DaemonSet {}/{}: the lb-agent is optional (powerctl apply lb)", ns, name);
      return r;
    }
    r.status = CheckStatus::kFail;
    r.message = daemon_set.error().message;
    return r;
  }
  const json& ds_status = daemon_set->value("status", json::object());
  const int desired = ds_status.value("desiredNumberScheduled", 0);
  const int ready = ds_status.value("numberReady", 0);

  kube::ListOptions options;
  options.label_selector = Selector(*daemon_set);
  auto pods = client.List(kube::CollectionPath(*kube::FindResourceType("Pod"), ns), options);
  if (!pods.ok()) {
    r.status = CheckStatus::kFail;
    r.message = "listing the lb-agent's pods: " + pods.error().message;
    return r;
  }

  Findings f;
  std::vector<std::string> not_ready;
  std::vector<const json*> running;
  for (const json& pod : *pods) {
    const std::string pod_name = pod["metadata"].value("name", "");
    const std::string node = pod.value("spec", json::object()).value("nodeName", "");
    const std::string phase = pod.value("status", json::object()).value("phase", "Unknown");
    if (phase == "Running") running.push_back(&pod);
    if (!PodReady(pod)) {
      not_ready.push_back(node.empty() ? fmt::format("pod {} ({}, no node yet)", pod_name, phase)
                                       : fmt::format("{} (pod {}, {})", node, pod_name, phase));
    }
  }
  if (ready < desired || !not_ready.empty()) {
    f.Fail(fmt::format("{}/{} agents ready{}", ready, desired,
                       not_ready.empty() ? "" : "; not ready on " + Listed(not_ready)),
           fmt::format("kubectl -n {} describe daemonset {}", ns, name));
  }

  std::size_t asked = 0;
  for (const json* pod : running) {
    if (asked == kMaxStatusReads) {
      f.warnings.push_back(fmt::format("status read from {} of {} running agents", kMaxStatusReads,
                                       running.size()));  // no fix needed
      break;
    }
    ++asked;
    ReadAgentStatus(client, ns, *pod, OpsPort(*pod, config.lb.ops_port), f);
  }

  for (const auto& [what, nodes] : f.failed) {
    f.Fail(fmt::format("Service {} on {}", what, Listed(nodes)),
           fmt::format("kubectl -n {} logs daemonset/{}", ns, name));
  }
  if (!f.skipped.empty()) {
    std::vector<std::string> list;
    for (const auto& [key, reason] : f.skipped) {
      std::string service = key.first + "/" + key.second;
      list.push_back(reason.empty() ? service : service + " (" + reason + ")");
    }
    const auto& first = f.skipped.begin()->first;
    f.Warn("Services skipped, kube-proxy balances them: " + Listed(list),
           fmt::format("powerctl lb weights {} -n {} (what the agent sees of it)", first.second,
                       first.first));
  }

  std::string summary = fmt::format("{} balancing {}", Plural(f.balancing_nodes, "node"),
                                    Plural(f.balanced.size(), "Service"));
  std::vector<std::string> parts = {summary};
  parts.insert(parts.end(), f.failures.begin(), f.failures.end());
  parts.insert(parts.end(), f.warnings.begin(), f.warnings.end());
  r.message = fmt::format("{}", fmt::join(parts, "; "));
  r.status = !f.failures.empty()   ? CheckStatus::kFail
             : !f.warnings.empty() ? CheckStatus::kWarn
                                   : CheckStatus::kPass;
  if (r.status != CheckStatus::kPass) r.fix = f.failures.empty() ? f.warning_fix : f.failure_fix;
  return r;
}

}  // namespace powerctl::setup
