#pragma once
// Evicting one pod through the Eviction API, the way `kubectl drain` does: the API server
// checks the pod's PodDisruptionBudgets and answers 429 while one forbids the eviction, and the
// pod is deleted with its own terminationGracePeriodSeconds when it is allowed.

#include "core/common/clock.h"
#include "core/common/result.h"
#include "core/consolidate/pod_rules.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace powerctl::kube {
class Client;
struct ServerVersion;
}  // namespace powerctl::kube

namespace powerctl::consolidate {

// policy/v1 Eviction from Kubernetes 1.22 (where it became GA); policy/v1beta1 before.
std::string EvictionApiVersion(const kube::ServerVersion& server);

// The Eviction object for `pod`; with `dry_run`, deleteOptions.dryRun=["All"].
nlohmann::json EvictionObject(const nlohmann::json& pod, const std::string& api_version,
                              bool dry_run);

struct EvictRequest {
  std::string api_version = "policy/v1";
  bool dry_run = false;  // server-side: checked and validated, nothing deleted
  // While a 429 is answered, retried after 1 s, 2 s, 4 s ... (at most max_backoff) until
  // `deadline`; then an error naming the budget that forbids it.
  std::chrono::steady_clock::time_point deadline;
  std::chrono::milliseconds first_backoff{1000};
  std::chrono::milliseconds max_backoff{10000};
  const std::vector<DisruptionBudget>* budgets = nullptr;  // to name the one that blocks
  std::function<void(const std::string&)> waiting;         // told each time a 429 is waited out
};

// Ok when the eviction was accepted or the pod is already gone (404). kConflict when a
// PodDisruptionBudget (or the API server's rate limit) still refused at the deadline; the
// API server's error otherwise.
Status EvictPod(kube::Client& client, const nlohmann::json& pod, const EvictRequest& request,
                const Clock& clock);

// "PodDisruptionBudget shop/web (allows 0 disruptions)" for each budget covering `pod`, joined
// with ", "; "" when none does.
std::string CoveringBudgets(const nlohmann::json& pod,
                            const std::vector<DisruptionBudget>& budgets);

}  // namespace powerctl::consolidate
