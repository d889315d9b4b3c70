#pragma once
// What the extender decided for one pod and one verb, node by node, kept so the server can
// hold recent decisions and `powerctl explain` can show exactly what was decided.
//
// Compact JSON (keys absent when empty, false or unset; unknown keys ignored when reading):
//   {"verb":"prioritize","pod":{"namespace":"ns","name":"p","uid":"u"},"at":1700000000123,
//    "error":"...","notes":["..."],
//    "omitted":4980,"nodes":[{"node":"n1","pass":false,"reason":"too hot","unresolvable":true},
//             {"node":"n2","pass":true,"score":8,
//              "wattsNow":120.5,"wattsAfter":123.5,
//              "components":[{"name":"power","value":7.5,"reason":"+3.0 W (...)"}]}]}
// "pass"/"reason"/"unresolvable" belong to filter (and preempt: whether the node stays a
// candidate); "score"/"components"/"wattsNow"/"wattsAfter" to prioritize. Values round-trip
// exactly.

#include "core/common/result.h"
#include "core/scoring/combine.h"

#include <nlohmann/json_fwd.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace powerctl::scoring {

inline constexpr const char* kVerbFilter = "filter";
inline constexpr const char* kVerbPrioritize = "prioritize";
inline constexpr const char* kVerbPreempt = "preempt";

struct NodeDecision {
  std::string node;
  std::optional<bool> passed;         // the filter verdict; nullopt when the verb did not filter
  std::string reason;                 // why it was rejected (or a caveat of a pass)
  bool unresolvable = false;          // rejected for a reason preemption cannot fix
  ComponentList components;           // at most one per kind
  std::optional<std::int64_t> score;  // the final 0..10, when the verb scored
  // The predicted watts before and after adding the pod (prioritize, when the model answered),
  // so `score` and `explain` show the numbers behind the power component.
  std::optional<double> watts_now;
  std::optional<double> watts_after;

  bool operator==(const NodeDecision&) const = default;
};

struct Decision {
  std::string verb;  // kVerbFilter, kVerbPrioritize or kVerbPreempt
  std::string pod_namespace;
  std::string pod_name;
  std::string pod_uid;
  std::int64_t at_unix_ms = 0;  // when it was decided
  std::string error;            // the verb failed as a whole (answered with an error)
  std::vector<std::string> notes;
  std::vector<NodeDecision> nodes;  // in the order the scheduler sent them
  // Nodes left out of `nodes` to keep a record small (TopNodes); 0 in a full decision.
  std::size_t omitted_nodes = 0;

  bool operator==(const Decision&) const = default;
};

// The decision with only the nodes that explain it: the `max_scored` best-scored nodes
// (highest score first; ties keep the scheduler's order) and the first `max_rejected` nodes
// the filter rejected; nodes that merely passed a filter are left out. `omitted_nodes`
// counts what was dropped. Nodes stay in the scheduler's order.
Decision TopNodes(const Decision& decision, std::size_t max_scored, std::size_t max_rejected);

// Leaves in a filter's (or preempt's) decision only the nodes it rejected, `omitted_nodes`
// counting those that passed: a pass explains nothing, and thousands of them were most of a
// recorded decision's memory. What TopNodes(decision, 0, all) keeps, without copying.
void KeepRejectedNodes(Decision& decision);

// Fills pod_namespace, pod_name and pod_uid from a Pod object's metadata (missing -> "").
void SetPodIdentity(Decision& decision, const nlohmann::json& pod);

nlohmann::json DecisionToJson(const Decision& decision);
// The same document as compact JSON text, written without building the tree (the decision
// writer encodes one per scheduled pod); invalid UTF-8 becomes U+FFFD, non-finite numbers null.
std::string DecisionJsonText(const Decision& decision);
// kInvalidInput naming the field when the document is not a decision.
Result<Decision> DecisionFromJson(const nlohmann::json& document);

}  // namespace powerctl::scoring
