#pragma once
// `powerctl explain pod NAME` (alias `why`): why a pod landed where it did, or why it is
// Pending. Reads the pod, its Events, the nodes, pods and TASPolicies, and the Lease of the
// pod's scheduler; shows the scheduler's own verdict verbatim, the extender's decision as it
// recorded it (its PowerDecisions Events labelled with the pod's uid, or the PowerScored and
// PowerFiltered Events on the pod of earlier versions; whichever replica made it) or
// recomputed now with the server's scoring code (labelled so), kube-scheduler's own checks
// per node, and ranked causes with a fix each.

#include "core/common/clock.h"
#include "core/common/http_client.h"
#include "core/common/result.h"
#include "core/config/config.h"
#include "core/explain/causes.h"
#include "core/explain/local_scoring.h"
#include "core/explain/pod_events.h"
#include "core/explain/score.h"
#include "core/kube/client.h"
#include "core/predict/model_accuracy.h"
#include "core/setup/doctor.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace powerctl::explain {

struct ExplainRequest {
  std::string namespace_ = "default";
  std::string name;
  bool recompute = true;  // compute a decision now when none was recorded
  report::PredictSource source = report::PredictSource::kAuto;  // who recomputes
};

struct PodSummary {
  std::string namespace_;
  std::string name;
  std::string uid;
  std::string phase;
  std::string scheduler_name;
  std::string node_name;  // "" while unbound
  std::int64_t cpu_request_millis = 0;
  std::int64_t memory_request_bytes = 0;
  std::string pod_scheduled_status;  // the PodScheduled condition: True, False or ""
  std::string pod_scheduled_reason;
  std::string pod_scheduled_message;
};

enum class DecisionSource {
  kRecorded,  // the extender's records of its decision
  kExtender,  // recomputed now by the running extender (its ops port)
  kLocal,     // recomputed now in this process
  kNone,      // the extender was not involved, or no decision could be made
};
std::string_view DecisionSourceName(DecisionSource source);  // recorded, local, none

struct ExplainReport {
  PodSummary pod;
  std::vector<setup::CheckResult> checks;  // the pod's scheduler and the extender
  std::vector<PodEvent> events;            // scheduling Events on the pod, oldest first
  DecisionSource source = DecisionSource::kNone;
  std::string source_text;  // who decided, when, and how it was obtained
  // A scheduled pod with no recorded decision: whether the extender took part in placing it
  // (false: it was not consulted, e.g. unreachable and ignorable; nullopt: cannot be told),
  // and why that is concluded.
  std::optional<bool> extender_consulted;
  std::string consulted_note;
  scoring::Decision filter;
  scoring::Decision prioritize;
  std::vector<NodeScore> nodes;  // best first
  // What ranked the nodes' power: fill or marginal ("" without a prioritize decision).
  std::string objective;
  // A scheduled pod: one line saying why its node won (power_cost.h's WhyChosen).
  std::string why_chosen;
  // A scheduled pod: the model that predicts its node's power and, with
  // telemetry.modelAccuracy, how far that model is from the node's measured power now.
  struct NodeModel {
    std::string node;
    std::string model;         // predict::DescribeNodeModel
    std::string power_source;  // telemetry.powerSource; "" when modelAccuracy is off
    std::optional<predict::NodeAccuracy> accuracy;
    std::string note;  // why there is no accuracy
  };
  std::optional<NodeModel> node_model;
  // Pending: why, ranked, most likely first; scheduled: why it is misplaced (none: it is not).
  std::vector<Cause> causes;
  std::vector<std::string> notes;
  std::vector<std::string> warnings;  // e.g. why the extender could not recompute
  bool scheduled() const { return !pod.node_name.empty(); }
  // Pending, or placed where it should not stay (exit 3).
  bool problem() const { return !scheduled() || !causes.empty(); }
};

struct ExplainDeps {
  kube::Client* kube = nullptr;  // required
  HttpClient* http = nullptr;    // required to recompute locally
  Clock clock;
  std::shared_ptr<spdlog::logger> log;
  std::chrono::system_clock::time_point now = std::chrono::system_clock::now();
};

// kNotFound when the pod does not exist; API errors as they come.
Result<ExplainReport> ExplainPod(const ExplainRequest& request,
                                 const config::PowerctlConfig& config, const ExplainDeps& deps);

// The -o json|yaml document (kind PodExplanation); "decision" carries "objective" and
// "whyChosen", each node "deltaWatts" and "fillWattsPerCore".
nlohmann::json ExplainReportToJson(const ExplainReport& report);

}  // namespace powerctl::explain
