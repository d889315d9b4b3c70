#include "core/setup/apply.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "core/kube/resources.h"
#include "core/manifests/generate.h"
#include "core/setup/access.h"

namespace powerctl::setup {
namespace {

using json = nlohmann::json;

Result<KubeVersion> TargetVersion(kube::Client& client, const ApplyRequest& request, bool& from_server) {
  if (request.kube_version) return *request.kube_version;
  POWERCTL_TRY(server, client.Version());
  from_server = true;
  auto version = KubeVersion::Parse(server.git_version);
  if (!version.ok()) {
    return MakeError(ErrorCode::kInvalidInput,
                     fmt::format("the server runs Kubernetes {}: {} (pass --kube-version to override)",
                                 server.git_version, version.error().message));
  }
  return version;
}

// Existing TLS Secrets are kept unless --rotate-certs: new key material on every apply
// would make apply never idempotent and break running mTLS for no reason.
Result<bool> KeepExistingSecrets(kube::Client& client, const std::vector<json>& secrets, bool rotate) {
  if (rotate || secrets.empty()) return false;
  for (const json& s : secrets) {
    POWERCTL_TRY(path, kube::ObjectPath(s));
    auto live = client.Get(path);
    if (!live.ok()) {
      if (live.error().code == ErrorCode::kNotFound) return false;
      return live.error();
    }
  }
  return true;
}

std::vector<AccessCheck> ChecksFor(const std::vector<json>& objects) {
  std::vector<AccessCheck> checks;
  for (const json& o : objects) {
    const kube::ResourceType* type = kube::FindResourceType(o.value("kind", ""));
    if (type == nullptr) continue;
    std::string ns = type->namespaced ? o["metadata"].value("namespace", "") : "";
    // Server-side apply is a PATCH that may create: both verbs are needed.
    for (const char* verb : {"get", "patch", "create"}) {
      checks.push_back({verb, std::string(type->group), std::string(type->plural), ns, ""});
    }
  }
  return checks;
}

Status WaitForEstablished(kube::Client& client, const json& crd, const Clock& clock) {
  POWERCTL_TRY(path, kube::ObjectPath(crd));
  auto deadline = clock.now() + std::chrono::seconds(60);
  while (true) {
    POWERCTL_TRY(live, client.Get(path));
    for (const json& c : live.value("status", json::object()).value("conditions", json::array())) {
      if (c.value("type", "") == "Established" && c.value("status", "") == "True") return OkStatus();
    }
    if (clock.now() >= deadline) {
      return MakeError(ErrorCode::kApi, fmt::format("{} was not established within 60s", kube::DisplayName(crd)));
    }
    clock.sleep(std::chrono::milliseconds(250));
  }
}

json Redacted(json object) {
  if (object.value("kind", "") == "Secret") {
    for (const char* field : {"data", "stringData"}) {
      if (!object.contains(field)) continue;
      for (auto& [key, value] : object[field].items()) value = "(redacted)";
    }
  }
  return object;
}

Result<ApplyAction> ApplyOne(kube::Client& client, const json& object, const ApplyRequest& request) {
  POWERCTL_TRY(path, kube::ObjectPath(object));
  auto before = client.Get(path);
  if (!before.ok() && before.error().code != ErrorCode::kNotFound) return before.error();
  kube::ApplyOptions options;
  options.force = request.force_conflicts;
  options.dry_run = request.dry_run == DryRunMode::kServer;
  POWERCTL_TRY(after, client.Apply(path, object, options));
  if (!before.ok()) return ApplyAction::kCreated;
  if (options.dry_run) {
    // A dry run persists nothing, so compare what the server would store with what is there.
    return StripServerFields(*before) == StripServerFields(after) ? ApplyAction::kUnchanged : ApplyAction::kConfigured;
  }
  std::string rv_before = (*before)["metadata"].value("resourceVersion", "");
  std::string rv_after = after["metadata"].value("resourceVersion", "");
  return rv_before == rv_after ? ApplyAction::kUnchanged : ApplyAction::kConfigured;
}

}  // namespace

std::string_view ApplyActionName(ApplyAction action) {
  switch (action) {
    case ApplyAction::kCreated: return "created";
    case ApplyAction::kConfigured: return "configured";
    case ApplyAction::kUnchanged: return "unchanged";
    case ApplyAction::kKept: return "unchanged (kept; --rotate-certs replaces it)";
  }
  return "";
}

bool ApplyReport::changed() const {
  for (const AppliedObject& o : objects) {
    if (o.action == ApplyAction::kCreated || o.action == ApplyAction::kConfigured) return true;
  }
  return false;
}

json StripServerFields(json object) {
  if (object.contains("metadata")) {
    json& m = object["metadata"];
    for (const char* f : {"managedFields", "resourceVersion", "generation", "uid", "creationTimestamp", "selfLink"}) {
      m.erase(f);
    }
    if (m.contains("annotations")) m["annotations"].erase("deployment.kubernetes.io/revision");
    if (m.contains("annotations") && m["annotations"].empty()) m.erase("annotations");
  }
  object.erase("status");
  return object;
}

Result<ApplyReport> Apply(kube::Client& client, const ApplyRequest& request, const ApplyObserver& observer,
                          const Clock& clock) {
  auto note = [&](const std::string& m) {
    if (observer.note) observer.note(m);
  };
  ApplyReport report;
  POWERCTL_TRY(version, TargetVersion(client, request, report.version_from_server));
  report.version = version;

  manifests::GenerateRequest generate;
  generate.config = request.config;
  generate.version = version;
  generate.components = request.components;
  generate.templates_dir = request.templates_dir;
  generate.cert_dir = request.cert_dir;
  POWERCTL_TRY(generated, manifests::Generate(generate));

  std::vector<json> objects;
  std::vector<json> secrets;
  for (const auto& component : generated.components) {
    for (const auto& o : component.objects) {
      json object(o);
      if (object.value("kind", "") == "Secret") secrets.push_back(object);
      objects.push_back(std::move(object));
    }
  }
  // Namespaces and CRDs first: everything else may live in one or be one of its kind.
  std::stable_partition(objects.begin(), objects.end(), [](const json& o) {
    std::string kind = o.value("kind", "");
    return kind == "Namespace" || kind == "CustomResourceDefinition";
  });

  // All or nothing: check every permission the apply needs before reading or changing anything.
  POWERCTL_TRY(missing, MissingPermissions(client, ChecksFor(objects)));
  if (!missing.empty()) return PermissionError("apply", missing);

  POWERCTL_TRY(keep_secrets, KeepExistingSecrets(client, secrets, request.rotate_certs));
  if (!keep_secrets) {
    for (const std::string& n : generated.notes) note(n);
  }

  if (request.dry_run == DryRunMode::kClient) {
    for (const json& o : objects) {
      AppliedObject applied{kube::DisplayName(o), ApplyAction::kConfigured, Redacted(o)};
      auto path = kube::ObjectPath(o);
      if (path.ok()) {
        auto live = client.Get(*path);
        if (!live.ok() && live.error().code == ErrorCode::kNotFound) applied.action = ApplyAction::kCreated;
        if (o.value("kind", "") == "Secret" && keep_secrets) applied.action = ApplyAction::kKept;
      }
      if (observer.applied) observer.applied(applied);
      report.objects.push_back(std::move(applied));
    }
    return report;
  }

  std::vector<DeploymentRef> deployments;
  bool server_dry_run = request.dry_run == DryRunMode::kServer;
  std::set<std::string> namespaces_to_create;  // server dry run: they do not exist yet
  bool crd_to_create = false;
  for (const json& o : objects) {
    std::string kind = o.value("kind", "");
    AppliedObject applied{kube::DisplayName(o), ApplyAction::kUnchanged, Redacted(o)};
    std::string ns = o["metadata"].value("namespace", "");
    if (kind == "Secret" && keep_secrets) {
      applied.action = ApplyAction::kKept;
    } else if (server_dry_run && (namespaces_to_create.count(ns) > 0 || (kind == "TASPolicy" && crd_to_create))) {
      // The server cannot dry-run an object whose namespace or type this apply would create first.
      applied.action = ApplyAction::kCreated;
    } else {
      if (kind == "TASPolicy" && request.dry_run == DryRunMode::kNone) {
        // Custom resources can be created only once their definition is established.
        for (const json& crd : objects) {
          if (crd.value("kind", "") == "CustomResourceDefinition") POWERCTL_CHECK_OK(WaitForEstablished(client, crd, clock));
        }
      }
      auto action = ApplyOne(client, o, request);
      if (!action.ok()) return WithContext(action.error(), "applying " + applied.name);
      applied.action = *action;
      if (server_dry_run && applied.action == ApplyAction::kCreated) {
        if (kind == "Namespace") namespaces_to_create.insert(o["metadata"].value("name", ""));
        if (kind == "CustomResourceDefinition") crd_to_create = true;
      }
    }
    if (kind == "Deployment") deployments.push_back({o["metadata"].value("namespace", ""), o["metadata"].value("name", "")});
    if (observer.applied) observer.applied(applied);
    report.objects.push_back(std::move(applied));
  }

  if (request.wait && request.dry_run == DryRunMode::kNone && !deployments.empty()) {
    POWERCTL_CHECK_OK(WaitForRollouts(client, deployments, request.timeout, clock, observer.rollout));
  }
  return report;
}

}  // namespace powerctl::setup
