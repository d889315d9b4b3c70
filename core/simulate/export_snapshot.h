#pragma once
// `simulate --export-snapshot`: the live cluster's nodes (allocatable CPU, memory and pods,
// labels, annotations) and the pods bound to them, as a Snapshot. Temperatures and measured
// CPU use are not in the API objects: the snapshot leaves them out (the built-in model then
// treats temperatures as nominal, and CPU use defaults to the pods' requests).

#include "core/kube/client.h"
#include "core/simulate/snapshot.h"

namespace powerctl::simulate {

Result<Snapshot> ExportSnapshot(kube::Client& client);

// The same from already listed Node and Pod objects (for tests and other callers).
Result<Snapshot> SnapshotFromObjects(const std::vector<nlohmann::json>& nodes,
                                     const std::vector<nlohmann::json>& pods);

}  // namespace powerctl::simulate
