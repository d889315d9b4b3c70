#pragma once
// The marks `consolidate apply` leaves on a node, read by `undo`, `status`, `doctor`, the wake-up
// watcher and whatever powers nodes off. One place for their names so every reader agrees.
//
//   label      powerctl.io/power-state: draining | drained
//              draining: cordoned by powerctl, pods still being evicted (a run was interrupted
//              if no apply is running); drained: empty of movable pods, safe to switch off.
//   annotation powerctl.io/consolidation: JSON {"state", "since" (RFC 3339 UTC),
//              "expectedWattsSaved", "wasUnschedulable"} — what the plan expected, and whether
//              the node was already cordoned before powerctl touched it (undo leaves it so).
//
// cluster-autoscaler: how a drained node is handed to it is documented in docs/consolidate.md.

#include "core/common/result.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace powerctl::consolidate {

inline constexpr const char* kPowerStateLabel = "powerctl.io/power-state";
inline constexpr const char* kPowerStateDraining = "draining";
inline constexpr const char* kPowerStateDrained = "drained";
inline constexpr const char* kConsolidationAnnotation = "powerctl.io/consolidation";
// cluster-autoscaler never scales down a node annotated "true"; apply keeps such nodes on.
inline constexpr const char* kScaleDownDisabledAnnotation =
    "cluster-autoscaler.kubernetes.io/scale-down-disabled";

struct NodeMark {
  std::string state;  // kPowerStateDraining or kPowerStateDrained
  std::string since;  // RFC 3339 UTC: when the node entered this state
  double expected_watts_saved = 0;
  bool was_unschedulable = false;
  bool annotation_readable = true;  // false: the label is there, the annotation is not JSON
};

// The node's mark, or nullopt when it carries neither the label nor the annotation.
std::optional<NodeMark> ReadNodeMark(const nlohmann::json& node);

// The merge patch that sets the mark; with `cordon`, also spec.unschedulable=true, so that a
// node is never cordoned by powerctl without its mark.
nlohmann::json MarkPatch(const NodeMark& mark, bool cordon);

// The merge patch `undo` sends: the mark removed and, unless the node was cordoned before
// powerctl drained it, spec.unschedulable=false.
nlohmann::json UnmarkPatch(const NodeMark& mark);

// Now, as RFC 3339 UTC ("2026-01-02T03:04:05Z").
std::string NowRfc3339();

}  // namespace powerctl::consolidate
