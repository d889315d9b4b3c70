#include "core/setup/rollout.h"

#include "core/kube/resources.h"

#include <fmt/format.h>

namespace powerctl::setup {
namespace {

using json = nlohmann::json;

std::string SelectorString(const json& match_labels) {
  std::string out;
  for (const auto& [k, v] : match_labels.items()) {
    if (!out.empty()) out += ",";
    out += k + "=" + v.get<std::string>();
  }
  return out;
}

// The most useful sentence about why pods of a Deployment or DaemonSet are not available.
std::string PodProblem(kube::Client& client, const std::string& ns, const json& workload) {
  json labels = workload["spec"]["selector"].value("matchLabels", json::object());
  kube::ListOptions options;
  options.label_selector = SelectorString(labels);
  auto pods = client.List(kube::CollectionPath(*kube::FindResourceType("Pod"), ns), options);
  if (!pods.ok() || pods->empty()) return pods.ok() ? "no pods created yet" : "";
  for (const json& pod : *pods) {
    const json& status = pod.value("status", json::object());
    for (const json& c : status.value("conditions", json::array())) {
      if (c.value("type", "") == "PodScheduled" && c.value("status", "") == "False") {
        return fmt::format("pod {} unschedulable: {}", pod["metadata"].value("name", ""),
                           c.value("message", ""));
      }
    }
    for (const json& cs : status.value("containerStatuses", json::array())) {
      const json& waiting = cs.value("state", json::object()).value("waiting", json::object());
      if (!waiting.empty()) {
        return fmt::format("pod {} container {}: {} {}", pod["metadata"].value("name", ""),
                           cs.value("name", ""), waiting.value("reason", ""),
                           waiting.value("message", ""));
      }
    }
  }
  return "";
}

// What the replica counts say is left to do, in the order a rollout does it (as kubectl
// rollout status does): new replicas to create, old ones to terminate, updated ones to become
// available.
// A DaemonSet counts pods (one per node) rather than replicas.
std::string ReplicaCounts(const RolloutProgress& p, int total, const char* unit) {
  if (p.updated < p.replicas) {
    return fmt::format("{} of {} {}s updated", p.updated, p.replicas, unit);
  }
  if (total > p.updated) {
    int old = total - p.updated;
    return fmt::format("{} old {}{} pending termination", old, unit, old == 1 ? "" : "s");
  }
  return fmt::format("{} of {} updated {}s available", p.available, p.replicas, unit);
}

}  // namespace

Result<RolloutProgress> InspectRollout(kube::Client& client, const DeploymentRef& ref) {
  bool daemon_set = ref.kind == WorkloadKind::kDaemonSet;
  const char* kind = daemon_set ? "DaemonSet" : "Deployment";
  std::string path =
      kube::CollectionPath(*kube::FindResourceType(kind), ref.namespace_) + "/" + ref.name;
  POWERCTL_TRY(workload, client.Get(path));
  RolloutProgress p;
  p.name = (daemon_set ? "daemonset/" : "deployment/") + ref.name;
  const json& spec = workload["spec"];
  const json& status = workload.value("status", json::object());
  int total = 0;
  if (daemon_set) {
    // A DaemonSet has no replica count: the controller says how many nodes should run it.
    // Old pods are replaced in place, node by node, so there is no surplus to wait for.
    p.replicas = status.value("desiredNumberScheduled", 0);
    p.updated = status.value("updatedNumberScheduled", 0);
    p.available = status.value("numberAvailable", 0);
    total = p.replicas;
  } else {
    p.replicas = spec.value("replicas", 1);
    p.updated = status.value("updatedReplicas", 0);
    p.available = status.value("availableReplicas", 0);
    total = status.value("replicas", 0);
  }
  bool observed =
      status.value("observedGeneration", 0) >= workload["metadata"].value("generation", 0);
  p.done = observed && p.updated == p.replicas && p.available == p.replicas && total == p.replicas;
  if (!p.done) {
    for (const json& c : status.value("conditions", json::array())) {
      if (c.value("type", "") == "Progressing" &&
          c.value("reason", "") == "ProgressDeadlineExceeded") {
        p.waiting_for = c.value("message", "");
      }
    }
    if (p.waiting_for.empty()) p.waiting_for = PodProblem(client, ref.namespace_, workload);
    if (p.waiting_for.empty() && !observed)
      p.waiting_for = "the controller has not seen the change yet";
    if (p.waiting_for.empty())
      p.waiting_for = ReplicaCounts(p, total, daemon_set ? "pod" : "replica");
  }
  return p;
}

Status WaitForRollouts(
    kube::Client& client, const std::vector<DeploymentRef>& deployments,
    std::chrono::milliseconds timeout, const Clock& clock,
    const std::function<void(const std::vector<RolloutProgress>&)>& on_progress) {
  auto deadline = clock.now() + timeout;
  while (true) {
    std::vector<RolloutProgress> progress;
    bool all_done = true;
    for (const DeploymentRef& d : deployments) {
      POWERCTL_TRY(p, InspectRollout(client, d));
      all_done = all_done && p.done;
      progress.push_back(std::move(p));
    }
    if (on_progress) on_progress(progress);
    if (all_done) return OkStatus();
    if (clock.now() >= deadline) {
      std::string waiting;
      for (const RolloutProgress& p : progress) {
        if (p.done) continue;
        waiting +=
            fmt::format("; {} {}/{} available: {}", p.name, p.available, p.replicas, p.waiting_for);
      }
      return MakeError(
          ErrorCode::kApi,
          fmt::format("timed out after {}s waiting for rollout{}",
                      std::chrono::duration_cast<std::chrono::seconds>(timeout).count(), waiting));
    }
    clock.sleep(std::chrono::milliseconds(1000));
  }
}

}  // namespace powerctl::setup
