#include "core/consolidate/drain.h"

#include "core/common/duration.h"
#include "core/common/json_fields.h"
#include "core/consolidate/pod_rules.h"
#include "core/kube/client.h"

#include <fmt/format.h>

#include <map>
#include <set>

namespace powerctl::consolidate {
namespace {

using json = nlohmann::json;

std::string Uid(const json& pod) {
  return StringField(pod, {"metadata", "uid"});
}

// Running pods per controller, cluster-wide, leaving out those on `except_node`.
std::map<std::string, int> RunningByController(const std::vector<json>& pods,
                                               const std::string& except_node) {
  std::map<std::string, int> out;
  for (const json& pod : pods) {
    if (!except_node.empty() && StringField(pod, {"spec", "nodeName"}) == except_node) continue;
    const std::string owner = ControllerUid(pod);
    if (!owner.empty() && IsRunningPod(pod)) ++out[owner];
  }
  return out;
}

// What still keeps the drain from being done, or "" when nothing does.
std::string Outstanding(const std::vector<json>& pods, const std::set<std::string>& evicted_uids,
                        const std::map<std::string, int>& wanted, const std::string& node) {
  for (const json& pod : pods) {
    if (evicted_uids.count(Uid(pod)) != 0)
      return "pod " + PodName(pod) + " is still on " + node + " (terminating)";
  }
  const std::map<std::string, int> running = RunningByController(pods, node);
  for (const auto& [owner, count] : wanted) {
    auto it = running.find(owner);
    const int now = it == running.end() ? 0 : it->second;
    if (now < count)
      return fmt::format("controller {} runs {} of its {} pod(s) elsewhere", owner, now, count);
  }
  return "";
}

}  // namespace

bool IsRunningPod(const json& pod) {
  return StringField(pod, {"status", "phase"}) == "Running" &&
         FindField(pod, {"metadata", "deletionTimestamp"}) == nullptr;
}

std::string ControllerUid(const json& pod) {
  const json* controller = ControllerOf(pod);
  return controller != nullptr ? StringField(*controller, {"uid"}) : "";
}

Result<std::vector<std::string>> DrainNode(kube::Client& client, const DrainRequest& request,
                                           const Clock& clock) {
  const auto deadline = clock.now() + request.timeout;
  auto say = [&](const std::string& text) {
    if (request.progress) request.progress(text);
  };
  // What each controller ran before, counting the pods about to be evicted: the number to
  // see running elsewhere afterwards.
  POWERCTL_TRY(before, client.List("/api/v1/pods"));
  std::map<std::string, int> wanted;
  std::set<std::string> owners;
  for (const auto* list : {&request.pods, &request.terminating})
    for (const json& pod : *list)
      if (std::string owner = ControllerUid(pod); !owner.empty()) owners.insert(owner);
  for (const auto& [owner, count] : RunningByController(before, "")) {
    if (owners.count(owner) != 0) wanted[owner] = count;
  }

  std::vector<std::string> evicted;
  std::set<std::string> evicted_uids;  // the pods to see gone
  for (const json& pod : request.terminating) evicted_uids.insert(Uid(pod));
  EvictRequest evict;
  evict.api_version = request.eviction_api_version;
  evict.dry_run = request.dry_run;
  evict.deadline = deadline;
  evict.budgets = request.budgets;
  evict.waiting = request.progress;
  for (const json& pod : request.pods) {
    say(fmt::format("{}: evicting {} ({}/{})", request.node, PodName(pod), evicted.size() + 1,
                    request.pods.size()));
    POWERCTL_CHECK_OK(EvictPod(client, pod, evict, clock));
    evicted.push_back(PodName(pod));
    evicted_uids.insert(Uid(pod));
  }
  if (request.dry_run) return evicted;

  while (true) {
    POWERCTL_TRY(pods, client.List("/api/v1/pods"));
    const std::string outstanding = Outstanding(pods, evicted_uids, wanted, request.node);
    if (outstanding.empty()) return evicted;
    if (clock.now() + request.poll_interval > deadline) {
      return MakeError(ErrorCode::kConflict,
                       fmt::format("{}: not done within {}: {}", request.node,
                                   FormatDuration(request.timeout), outstanding));
    }
    say(fmt::format("{}: waiting: {}", request.node, outstanding));
    clock.sleep(request.poll_interval);
  }
}

}  // namespace powerctl::consolidate
