#pragma once
// `powerctl delete`: removes what powerctl applied, found by its labels, in reverse
// dependency order, all-or-nothing on permissions.

#include "core/common/clock.h"
#include "core/common/result.h"
#include "core/config/config.h"
#include "core/kube/client.h"
#include "core/setup/access.h"
#include "core/setup/apply.h"

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace powerctl::setup {

struct DeleteRequest {
  config::PowerctlConfig config;
  std::vector<std::string> components;  // empty = all
  DryRunMode dry_run = DryRunMode::kNone;
  bool include_crds =
      false;  // deleting the TASPolicy CRD deletes every TASPolicy, also other tools'
  bool wait = false;
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
};

struct DeletedObject {
  std::string name;  // "deployment/powerctl-extender"
  std::string path;
  bool kept = false;         // listed but not deleted (CRDs without --include-crds)
  AccessCheck delete_check;  // the permission deleting it needs
};

struct DeleteReport {
  std::vector<DeletedObject> objects;
};

Result<DeleteReport> Delete(kube::Client& client, const DeleteRequest& request,
                            const std::function<void(const DeletedObject&)>& on_object,
                            const Clock& clock = {});

}  // namespace powerctl::setup
