#pragma once
// `powerctl apply`: generated manifests -> server-side apply, in dependency order,
// all-or-nothing on permissions, idempotent.

#include "core/common/clock.h"
#include "core/common/kube_version.h"
#include "core/common/result.h"
#include "core/config/config.h"
#include "core/kube/client.h"
#include "core/setup/rollout.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace powerctl::setup {

enum class DryRunMode { kNone, kClient, kServer };

struct ApplyRequest {
  config::PowerctlConfig config;
  std::optional<KubeVersion> kube_version;  // none: read from the server's /version
  std::vector<std::string> components;      // empty = all
  std::optional<std::filesystem::path> templates_dir;
  std::optional<std::filesystem::path> cert_dir;
  DryRunMode dry_run = DryRunMode::kNone;
  bool force_conflicts = false;
  bool rotate_certs = false;  // replace existing TLS Secrets
  bool wait = false;
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
  // The day the version policy is judged on (an ended line, a newer minor than known).
  std::chrono::sys_days today = TodayUtc();
};

enum class ApplyAction { kCreated, kConfigured, kUnchanged, kKept };
std::string_view ApplyActionName(ApplyAction action);

struct AppliedObject {
  std::string name;  // "deployment/powerctl-extender"
  ApplyAction action = ApplyAction::kUnchanged;
  nlohmann::json object;  // what was sent (Secrets: data removed)
};

struct ApplyReport {
  KubeVersion version;
  bool version_from_server = false;
  std::vector<AppliedObject> objects;
  bool changed() const;
};

struct ApplyObserver {
  std::function<void(const std::string& message)> note;  // stderr lines
  std::function<void(const std::string& message)> warn;  // the target version's warnings
  std::function<void(const AppliedObject&)> applied;     // one per object, as it happens
  std::function<void(const std::vector<RolloutProgress>&)> rollout;  // --wait progress
};

Result<ApplyReport> Apply(kube::Client& client, const ApplyRequest& request,
                          const ApplyObserver& observer, const Clock& clock = {});

// The same object without fields the server owns (for comparisons and display).
nlohmann::json StripServerFields(nlohmann::json object);

}  // namespace powerctl::setup
