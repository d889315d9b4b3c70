#pragma once
// Telemetry policies compatible with Intel Telemetry Aware Scheduling (TASPolicy,
// telemetry.intel.com/v1alpha1): evaluating their strategies against per-node metric values
// (decoding the objects is config/tas_policy.h). Pure functions, no I/O: the values come from
// a MetricSource (policy_metrics.h) and label changes are applied by the caller.
//
// Semantics follow TAS (docs/reference/tas.md, "Strategies") except for its known bugs
// ("Differences that fix TAS defects"), each fixed where it would bite and marked "TAS bug:" in
// policies*.cpp:
//   * filter reasons name the policy, the rule and the value (TAS said "Node violates");
//   * scheduleonmetric scores are proportional 0..10, never negative (TAS gave ordinal ranks
//     10, 9, 8, ... that went negative past ten nodes and discarded the magnitude);
//   * Equals in scheduleonmetric scores by equality with the target (TAS: random order);
//   * a node whose metric is missing is not silently dropped: it passes the filter (TAS'
//     fail-open) or gets `missing_score`, with the reason recorded; deschedule and labeling
//     leave such a node's labels alone instead of removing them as "recovered";
//   * a pod without a policy, or with an unknown one, passes every node (TAS answered 404);
//   * same-named deschedule policies in different namespaces share one node label
//     (`<name>=violating`); TAS let them undo each other, here a node is violating when any
//     of them says so;
//   * labeling rules that set one label key with different operators are rejected at parse
//     time (TAS only logged "Unsupported config" at every evaluation).

#include "core/common/result.h"
#include "core/config/config.h"
#include "core/config/tas_policy.h"

#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace powerctl::scoring {

// ---- metric values ------------------------------------------------------------------------

struct MetricValue {
  std::optional<double> value;
  std::string reason;  // why `value` is missing ("no series for node n1", "prometheus: ...")
};
using NodeMetricValues = std::map<std::string, MetricValue>;   // node -> value
using MetricValues = std::map<std::string, NodeMetricValues>;  // metric -> node -> value

// TAS' EvaluateRule: LessThan value < target, GreaterThan value > target, Equals ==.
bool RuleHolds(const config::PolicyRule& rule, double value);

// ---- which policy a pod uses --------------------------------------------------------------

struct PodPolicy {
  const config::Policy* policy = nullptr;  // nullptr: every node passes, scores neutral
  std::string note;  // set when the pod names a policy that is not there (or invalid)
};
// `policies` are keyed "namespace/name"; `invalid` (same keys) holds parse errors of objects
// that exist but are broken, so the note can say so.
PodPolicy FindPodPolicy(const std::string& pod_namespace,
                        const std::map<std::string, std::string>& pod_labels,
                        const std::map<std::string, config::Policy>& policies,
                        const std::map<std::string, std::string>& invalid = {});

// ---- strategies ---------------------------------------------------------------------------

// A strategy's verdict on one node: violating, not, or unknown (a metric it needs is missing
// and the known rules do not decide).
enum class Verdict { kViolating, kCompliant, kUnknown };
struct NodeVerdict {
  Verdict verdict = Verdict::kCompliant;
  std::string reason;  // which rules held, with values; or which metrics were missing
};
// allOf: violating when every rule holds; anyOf (default): when any rule holds.
NodeVerdict EvaluateStrategy(const std::string& policy_name, const std::string& strategy_name,
                             const config::PolicyStrategy& strategy, const std::string& node,
                             const MetricValues& values);

struct PolicyFilterResult {
  std::map<std::string, std::string> failed;  // node -> reason
  std::map<std::string, std::string> notes;   // passing nodes the policy could not judge
};
// dontschedule: nodes that violate fail. No dontschedule strategy: all pass.
PolicyFilterResult FilterNodes(const config::Policy& policy, const std::vector<std::string>& nodes,
                               const MetricValues& values);

struct PolicyScore {
  double score = 0;  // 0..10
  std::string reason;
};
struct PolicyScores {
  bool applies = false;  // the policy has a scheduleonmetric strategy with a rule
  std::map<std::string, PolicyScore> nodes;
};
// scheduleonmetric, first rule only (as TAS): GreaterThan: higher metric scores higher,
// LessThan: lower scores higher, 10 * (distance from the worst) / (best - worst) among the
// nodes with a value; all equal: 10. Equals: 10 when the value equals the target, else 0.
// A node without a value gets `missing_score`.
PolicyScores ScoreNodes(const config::Policy& policy, const std::vector<std::string>& nodes,
                        const MetricValues& values, double missing_score = 0);

// ---- node labels (deschedule, labeling) ---------------------------------------------------

struct LabelChange {
  std::string node;
  std::string key;
  std::optional<std::string> value;  // nullopt: remove the label
  std::string reason;
};
using Labels = std::map<std::string, std::string>;
// node -> its labels, borrowed from the caller, who keeps them alive for the call: a label
// pass reads every node of the cluster snapshot, and copying 5,000 nodes' labels held 3 MiB.
using NodeLabels = std::map<std::string, const Labels*>;
// Borrows each node's labels from `owned` (which must outlive the result).
NodeLabels BorrowLabels(const std::map<std::string, Labels>& owned);

// deschedule: `<policy name>=violating` on violating nodes, removed once they comply.
// Nodes whose verdict is unknown keep what they have. Changes are sorted by node, then key.
std::vector<LabelChange> DescheduleLabelChanges(const std::vector<config::Policy>& policies,
                                                const NodeLabels& nodes,
                                                const MetricValues& values);
// The `<name>=violating` labels to remove when no deschedule policy of that name is left.
std::vector<LabelChange> DescheduleCleanup(const std::string& policy_name, const NodeLabels& nodes);

// labeling: per node, the labels the holding rules produce,
// `telemetry.aware.scheduling.<policy>/<key>` -> value. When several rules set one key, the
// one whose metric is highest (GreaterThan) or lowest (LessThan) wins, as in TAS.
std::map<std::string, std::map<std::string, std::string>> LabelsForNodes(
    const config::Policy& policy, const std::vector<std::string>& nodes,
    const MetricValues& values);
// What to add, replace and remove so each node carries exactly those labels under the
// policy's prefix; nodes whose metrics are missing are left alone.
std::vector<LabelChange> LabelingChanges(const config::Policy& policy, const NodeLabels& nodes,
                                         const MetricValues& values);

}  // namespace powerctl::scoring
