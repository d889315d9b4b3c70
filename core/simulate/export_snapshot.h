#pragma once
// `simulate --export-snapshot`: the live cluster's nodes (allocatable CPU, memory and pods,
// labels, annotations) and the pods bound to them, as a Snapshot. Temperatures and measured
// CPU use are not in the API objects: the snapshot leaves them out (the built-in model then
// treats temperatures as nominal, and CPU use defaults to the pods' requests).

#include "core/kube/client.h"
#include "core/simulate/snapshot.h"

#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace powerctl::simulate {

Result<Snapshot> ExportSnapshot(kube::Client& client);

// The same from already listed Node and Pod objects (for tests and other callers).
Result<Snapshot> SnapshotFromObjects(const std::vector<nlohmann::json>& nodes,
                                     const std::vector<nlohmann::json>& pods);

// Sets each named node's power_curve, its true power in the simulation, to its measured curve
// (watts at 0 %, 10 %, ..., 100 % load): the cluster simulated with its own servers' curves,
// while the model it believes stays the node's annotations. Curves of nodes the snapshot does
// not hold, or without kCurvePoints finite watts, are left out. Returns how many were set.
std::size_t AddMeasuredCurves(Snapshot& snapshot,
                              const std::map<std::string, std::vector<double>>& curves);

}  // namespace powerctl::simulate
