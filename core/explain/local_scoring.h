#pragma once
// The extender's filter and prioritize computed in this process, for `score` and `explain`:
// the same SchedulingCore the server runs, over a snapshot built from one list of the
// cluster's nodes, pods and TASPolicies (what the server's watch-fed cache holds), with the
// telemetry sources, policy metrics and model configured in powerctl.yaml.

#include "core/cluster/node_cache.h"
#include "core/common/clock.h"
#include "core/common/http_client.h"
#include "core/common/result.h"
#include "core/config/config.h"
#include "core/kube/client.h"
#include "core/scoring/decision.h"
#include "core/scoring/node_fit.h"

#include <nlohmann/json.hpp>
#include <spdlog/logger.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace powerctl::explain {

struct ClusterObjects {
  std::vector<nlohmann::json> nodes;
  std::vector<nlohmann::json> pods;      // every namespace, not Succeeded or Failed
  std::vector<nlohmann::json> policies;  // TASPolicy objects; none without the CRD
};

// One list each of nodes, pods and TASPolicies. A missing TASPolicy CRD (404) or no right to
// list them (403) gives no policies rather than an error.
Result<ClusterObjects> ListClusterObjects(kube::Client& kube);

// The cluster cache's view of `objects` (pods counted with the effective-request rules, as
// the server's cache does). The pod `exclude_key` ("namespace/name") is left off its node, so
// a bound pod being explained is not counted twice.
std::shared_ptr<const cluster::ClusterSnapshot> SnapshotOf(const ClusterObjects& objects,
                                                           const std::string& exclude_key = "");

// "namespace/name" of a Pod object.
std::string PodKey(const nlohmann::json& pod);

struct LocalScoringDeps {
  kube::Client* kube = nullptr;  // required (metrics.k8s.io telemetry)
  HttpClient* http = nullptr;    // required (Prometheus, model servers)
  Clock clock;
  std::shared_ptr<spdlog::logger> log;
};

struct ComputedDecision {
  scoring::Decision filter;      // over the candidates
  scoring::Decision prioritize;  // over the candidates the filter passed
  std::string answered_by;       // "computed locally: CPU from ..., model builtin"
  bool from_extender = false;    // the running extender answered (extender_scoring.h)
  std::vector<std::string> warnings;
};

// Filter over `candidates` (node names), then prioritize over the ones it passed, as
// kube-scheduler would call the extender. kInvalidInput for a bad predictor configuration.
Result<ComputedDecision> DecideLocally(const nlohmann::json& pod,
                                       const std::vector<std::string>& candidates,
                                       const ClusterObjects& objects,
                                       const config::PowerctlConfig& config,
                                       const LocalScoringDeps& deps);

}  // namespace powerctl::explain
