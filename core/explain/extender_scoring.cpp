#include "core/explain/extender_scoring.h"

#include "core/config/names.h"

#include <fmt/format.h>

namespace powerctl::explain {
namespace {

using json = nlohmann::json;

Result<scoring::Decision> DecisionAt(const json& answer, const char* key) {
  auto it = answer.find(key);
  if (it == answer.end() || it->is_null()) return scoring::Decision{};
  auto decision = scoring::DecisionFromJson(*it);
  if (!decision.ok()) return WithContext(decision.error(), std::string("extender answer: ") + key);
  return decision;
}

}  // namespace

std::string ExtenderScorePath(const config::PowerctlConfig& config) {
  // http:<service>:<port name>: the ops port is plain HTTP (the scheduler port is TLS).
  return fmt::format("/api/v1/namespaces/{}/services/http:{}:ops/proxy/v1/score", config.namespace_,
                     config::NamesFor(config).extender);
}

Result<ComputedDecision> DecideByExtender(kube::Client& kube, const config::PowerctlConfig& config,
                                          const json& pod,
                                          const std::vector<std::string>& candidates) {
  const std::string who =
      fmt::format("extender {}/{}", config.namespace_, config::NamesFor(config).extender);
  auto answer = kube.Create(ExtenderScorePath(config), json{{"pod", pod}, {"nodes", candidates}});
  if (!answer.ok()) return WithContext(answer.error(), who);
  if (!answer->is_object() || answer->value("kind", "") != "ScoreResult") {
    return MakeError(ErrorCode::kInvalidInput, who + ": the answer is not a ScoreResult");
  }
  ComputedDecision out;
  POWERCTL_TRY(filter, DecisionAt(*answer, "filter"));
  POWERCTL_TRY(prioritize, DecisionAt(*answer, "prioritize"));
  out.filter = std::move(filter);
  out.prioritize = std::move(prioritize);
  out.answered_by = who + " (through the API server's service proxy to its ops port)";
  out.from_extender = true;
  return out;
}

Result<ComputedDecision> Decide(report::PredictSource source, const json& pod,
                                const std::vector<std::string>& candidates,
                                const ClusterObjects& objects, const config::PowerctlConfig& config,
                                const LocalScoringDeps& deps) {
  if (deps.kube == nullptr) return MakeError(ErrorCode::kInternal, "Decide: no kube client");
  std::string extender_failure;
  if (source != report::PredictSource::kLocal) {
    auto answer = DecideByExtender(*deps.kube, config, pod, candidates);
    if (answer.ok() || source == report::PredictSource::kExtender) return answer;
    extender_failure = answer.error().message;
  }
  POWERCTL_TRY(local, DecideLocally(pod, candidates, objects, config, deps));
  if (!extender_failure.empty()) {
    local.warnings.insert(local.warnings.begin(), "the extender did not answer (" +
                                                      extender_failure + "); computed locally");
  }
  return local;
}

}  // namespace powerctl::explain
