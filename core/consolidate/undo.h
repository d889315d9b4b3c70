#pragma once
// `consolidate undo`: gives a node back to the scheduler. One PATCH removes powerctl's label
// and annotation (node_marks.h) and uncordons the node, unless the annotation says it was
// already cordoned before powerctl drained it, so undo never uncordons what an operator cordoned.

#include "core/common/result.h"
#include "core/kube/client.h"

#include <string>
#include <vector>

namespace powerctl::consolidate {

struct UndoOutcome {
  std::string node;
  std::string state;        // the mark it had: draining or drained
  bool uncordoned = false;  // false: it stays cordoned, as it was before powerctl
  std::string warning;      // e.g. an annotation that could not be read
};

// kNotFound for a node that does not exist; kInvalidInput for a node without powerctl's marks.
Result<UndoOutcome> UndoNode(kube::Client& client, const std::string& node,
                             kube::DryRun dry_run = kube::DryRun::kNone);

// Every node carrying the powerctl.io/power-state label (none: an empty list).
Result<std::vector<UndoOutcome>> UndoAll(kube::Client& client,
                                         kube::DryRun dry_run = kube::DryRun::kNone);

}  // namespace powerctl::consolidate
