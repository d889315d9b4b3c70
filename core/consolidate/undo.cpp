#include "core/consolidate/undo.h"

#include "core/common/json_fields.h"
#include "core/consolidate/node_marks.h"
#include "core/kube/client.h"

namespace powerctl::consolidate {
namespace {

using json = nlohmann::json;

Result<UndoOutcome> Unmark(kube::Client& client, const json& node, kube::DryRun dry_run) {
  const std::string name = StringField(node, {"metadata", "name"});
  std::optional<NodeMark> mark = ReadNodeMark(node);
  if (!mark) {
    return MakeError(ErrorCode::kInvalidInput,
                     "node " + name + " has no " + kPowerStateLabel + " label or " +
                         kConsolidationAnnotation +
                         " annotation: consolidate apply did not drain it (kubectl uncordon " +
                         name + " uncordons a node cordoned by hand)");
  }
  UndoOutcome out;
  out.node = name;
  out.state = mark->state;
  if (!mark->annotation_readable)
    out.warning = std::string("the ") + kConsolidationAnnotation +
                  " annotation is missing or not JSON: uncordoning the node";
  if (dry_run != kube::DryRun::kClient) {
    POWERCTL_CHECK_OK(client.MergePatch("/api/v1/nodes/" + name, UnmarkPatch(*mark),
                                        dry_run == kube::DryRun::kServer));
  }
  out.uncordoned = !mark->was_unschedulable;
  return out;
}

}  // namespace

Result<UndoOutcome> UndoNode(kube::Client& client, const std::string& node, kube::DryRun dry_run) {
  POWERCTL_TRY(object, client.Get("/api/v1/nodes/" + node));
  return Unmark(client, object, dry_run);
}

Result<std::vector<UndoOutcome>> UndoAll(kube::Client& client, kube::DryRun dry_run) {
  kube::ListOptions options;
  options.label_selector = kPowerStateLabel;
  POWERCTL_TRY(nodes, client.List("/api/v1/nodes", options));
  std::vector<UndoOutcome> out;
  for (const json& node : nodes) {
    if (StringField(node, {"metadata", "labels", kPowerStateLabel}).empty()) continue;
    POWERCTL_TRY(done, Unmark(client, node, dry_run));
    out.push_back(std::move(done));
  }
  return out;
}

}  // namespace powerctl::consolidate
