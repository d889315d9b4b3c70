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

namespace powerctl::consolidate {

inline constexpr const char* kPowerStateLabel = "powerctl.io/power-state";
inline constexpr const char* kPowerStateDraining = "draining";
inline constexpr const char* kPowerStateDrained = "drained";
inline constexpr const char* kConsolidationAnnotation = "powerctl.io/consolidation";

}  // namespace powerctl::consolidate
