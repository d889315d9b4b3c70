#include "core/setup/apply.h"

#include "core/common/json_bounds.h"
#include "core/config/names.h"
#include "core/kube/resources.h"
#include "core/manifests/generate.h"
#include "core/setup/access.h"

#include <fmt/format.h>
#include <openssl/evp.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <optional>
#include <set>

namespace powerctl::setup {
namespace {

using json = nlohmann::json;

Result<KubeVersion> TargetVersion(kube::Client& client, const ApplyRequest& request,
                                  bool& from_server) {
  if (request.kube_version) return *request.kube_version;
  POWERCTL_TRY(server, client.Version());
  from_server = true;
  auto version = KubeVersion::Parse(server.git_version);
  if (!version.ok()) {
    return MakeError(
        ErrorCode::kInvalidInput,
        fmt::format("the server runs Kubernetes {}: {} (pass --kube-version to override)",
                    server.git_version, version.error().message));
  }
  return version;
}

// Existing TLS Secrets are kept unless --rotate-certs: new key material on every apply
// would make apply never idempotent and break running mTLS for no reason.
Result<bool> KeepExistingSecrets(kube::Client& client, const std::vector<json>& secrets,
                                 bool rotate) {
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

// A Secret's data value, decoded; nullopt when missing or not base64.
std::optional<std::string> SecretValue(const json& secret, const char* key) {
  const json& data = secret.value("data", json::object());
  if (!data.contains(key) || !data[key].is_string()) return std::nullopt;
  const std::string& text = data[key].get_ref<const std::string&>();
  if (text.size() % 4 != 0) return std::nullopt;
  std::string out(text.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(text.data()),
                                static_cast<int>(text.size()));
  if (n < 0) return std::nullopt;
  std::size_t padding = 0;
  for (auto it = text.rbegin(); it != text.rend() && *it == '=' && padding < 2; ++it) ++padding;
  out.resize(static_cast<std::size_t>(n) - padding);
  return out;
}

// The kept Secrets' certificates and keys (no CA key: it never enters the cluster), so the
// Deployments are rendered with a config-hash that follows what they really mount rather than
// the new material Generate made. nullopt when a Secret cannot be read or lacks a field: the
// hash then follows the new material, which at worst restarts the pods once.
std::optional<manifests::KeyMaterial> LiveKeyMaterial(kube::Client& client,
                                                      const std::vector<json>& secrets,
                                                      const config::ObjectNames& names) {
  manifests::KeyMaterial m;
  for (const json& s : secrets) {
    auto path = kube::ObjectPath(s);
    if (!path.ok()) return std::nullopt;
    auto live = client.Get(*path);
    if (!live.ok()) return std::nullopt;
    const std::string name = s["metadata"].value("name", "");
    auto ca = SecretValue(*live, "ca.crt");
    auto cert = SecretValue(*live, "tls.crt");
    auto key = SecretValue(*live, "tls.key");
    if (!ca || !cert || !key) return std::nullopt;
    if (name == names.extender_tls_secret) {
      m.ca_cert = *ca;
      m.server_cert = *cert;
      m.server_key = *key;
    } else if (name == names.scheduler_tls_secret) {
      m.client_cert = *cert;
      m.client_key = *key;
    }
  }
  if (m.ca_cert.empty() || m.client_cert.empty()) return std::nullopt;
  return m;
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
      if (c.value("type", "") == "Established" && c.value("status", "") == "True")
        return OkStatus();
    }
    if (clock.now() >= deadline) {
      return MakeError(ErrorCode::kApi,
                       fmt::format("{} was not established within 60s", kube::DisplayName(crd)));
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

// ---- client dry run: what the server would do, judged from the live object ----------------
//
// A server-side apply changes an object when (a) a field powerctl sends has another value
// than the live one, or (b) a field powerctl set last time is no longer sent (the server
// removes it). (a) is a subset comparison: every field of the desired object must be in the
// live one with the same value; fields only the live object has were defaulted by the server
// or set by other managers, and the apply leaves them alone. (b) is read from the live
// object's managedFields (powerctl's Apply entry), when the server keeps them.
//
// What the comparison cannot see, it reports as "configured" (conservative): list items that
// other managers added to a list powerctl sets (the lengths differ), values the server
// normalizes other than quantities (e.g. a schema that prunes a field of a custom resource),
// and fields of a non-omitempty zero value (false, 0, "") that the server dropped.

// Resource quantities ("100m", "0.1", "1Gi", "1024Mi", 2) as a number, or nullopt. The server
// stores quantities in canonical form, so "0.5" comes back as "500m".
std::optional<long double> QuantityValue(const json& value) {
  if (value.is_number()) return value.get<long double>();
  if (!value.is_string()) return std::nullopt;
  const std::string text = value.get<std::string>();
  std::size_t end = 0;
  long double number = 0;
  try {
    number = std::stold(text, &end);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (end == 0 || !(std::isdigit(static_cast<unsigned char>(text[0])) || text[0] == '-' ||
                    text[0] == '+' || text[0] == '.')) {
    return std::nullopt;
  }
  static const std::map<std::string, long double> kSuffixes = {{"", 1.0L},
                                                               {"n", 1e-9L},
                                                               {"u", 1e-6L},
                                                               {"m", 1e-3L},
                                                               {"k", 1e3L},
                                                               {"M", 1e6L},
                                                               {"G", 1e9L},
                                                               {"T", 1e12L},
                                                               {"P", 1e15L},
                                                               {"E", 1e18L},
                                                               {"Ki", 1024.0L},
                                                               {"Mi", 1048576.0L},
                                                               {"Gi", 1073741824.0L},
                                                               {"Ti", 1099511627776.0L},
                                                               {"Pi", 1125899906842624.0L},
                                                               {"Ei", 1152921504606846976.0L}};
  auto suffix = kSuffixes.find(text.substr(end));
  if (suffix == kSuffixes.end()) return std::nullopt;
  return number * suffix->second;
}

bool SameQuantity(const json& desired, const json& live) {
  auto a = QuantityValue(desired);
  auto b = QuantityValue(live);
  if (!a || !b) return false;
  long double scale = std::max({std::fabs(*a), std::fabs(*b), 1e-9L});
  return std::fabs(*a - *b) <= scale * 1e-12L;
}

// Values the server omits when they are empty (Go's omitempty on maps, slices and pointers).
bool EmptyValue(const json& value) {
  return value.is_null() || ((value.is_object() || value.is_array()) && value.empty());
}

// Whether `desired` is contained in `live`: objects key by key (live may have more), lists
// item by item (same length), scalars equal. `key` is the field `desired` is the value of.
bool Contains(const json& desired, const json& live, const std::string& key,
              const std::string& parent_key) {
  if (desired.is_object()) {
    if (!live.is_object()) return false;
    for (const auto& [k, value] : desired.items()) {
      auto it = live.find(k);
      if (it == live.end()) {
        if (EmptyValue(value)) continue;
        return false;
      }
      if (!Contains(value, *it, k, key)) return false;
    }
    return true;
  }
  if (desired.is_array()) {
    if (!live.is_array() || live.size() != desired.size()) return false;
    for (std::size_t i = 0; i < desired.size(); ++i) {
      if (!Contains(desired[i], live[i], key, parent_key)) return false;
    }
    return true;
  }
  if (desired.is_null()) return true;  // not set by powerctl
  if (desired == live) return true;
  // resources.requests.cpu, resources.limits.memory, ...
  if (parent_key == "requests" || parent_key == "limits") return SameQuantity(desired, live);
  return false;
}

// Whether the field set `owned` (managedFields fieldsV1) names a field `desired` no longer
// has. Unknown path elements count as removed (conservative).
bool OwnsFieldNotIn(const json& owned, const json& desired) {
  if (!owned.is_object()) return false;
  for (const auto& [element, children] : owned.items()) {
    if (element == ".") continue;
    if (element.rfind("f:", 0) == 0) {
      std::string field = element.substr(2);
      if (!desired.is_object()) return true;
      auto it = desired.find(field);
      if (it == desired.end() || it->is_null()) return true;
      if (OwnsFieldNotIn(children, *it)) return true;
    } else if (element.rfind("k:", 0) == 0) {
      json keys = ParseJsonBounded(element.substr(2), kKubeJsonLimits);
      if (keys.is_discarded() || !keys.is_object() || !desired.is_array()) return true;
      const json* match = nullptr;
      for (const json& item : desired) {
        bool all = item.is_object();
        for (const auto& [k, v] : keys.items()) {
          if (!all) break;
          // Ports are keyed by port and protocol, which the server defaults to TCP.
          const json value = item.contains(k) ? item[k] : k == "protocol" ? json("TCP") : json();
          all = value == v;
        }
        if (all) {
          match = &item;
          break;
        }
      }
      if (match == nullptr || OwnsFieldNotIn(children, *match)) return true;
    } else if (element.rfind("v:", 0) == 0) {
      json value = ParseJsonBounded(element.substr(2), kKubeJsonLimits);
      if (value.is_discarded() || !desired.is_array()) return true;
      if (std::find(desired.begin(), desired.end(), value) == desired.end()) return true;
    } else if (element.rfind("i:", 0) == 0) {
      std::size_t index = 0;
      try {
        index = std::stoul(element.substr(2));
      } catch (const std::exception&) {
        return true;
      }
      if (!desired.is_array() || index >= desired.size()) return true;
      if (OwnsFieldNotIn(children, desired[index])) return true;
    } else {
      return true;
    }
  }
  return false;
}

// The action a server-side apply of `desired` by `manager` would take on `live`.
ApplyAction CompareWithLive(const json& desired, const json& live, const std::string& manager) {
  if (!Contains(desired, StripServerFields(live), "", "")) return ApplyAction::kConfigured;
  const json& meta = live.value("metadata", json::object());
  for (const json& entry : meta.value("managedFields", json::array())) {
    if (entry.value("manager", "") != manager || entry.value("operation", "") != "Apply" ||
        !entry.value("subresource", "").empty()) {
      continue;
    }
    if (entry.contains("fieldsV1") && OwnsFieldNotIn(entry["fieldsV1"], desired)) {
      return ApplyAction::kConfigured;
    }
  }
  return ApplyAction::kUnchanged;
}

Result<ApplyAction> ApplyOne(kube::Client& client, const json& object,
                             const ApplyRequest& request) {
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
    return StripServerFields(*before) == StripServerFields(after) ? ApplyAction::kUnchanged
                                                                  : ApplyAction::kConfigured;
  }
  std::string rv_before = (*before)["metadata"].value("resourceVersion", "");
  std::string rv_after = after["metadata"].value("resourceVersion", "");
  return rv_before == rv_after ? ApplyAction::kUnchanged : ApplyAction::kConfigured;
}

}  // namespace

std::string_view ApplyActionName(ApplyAction action) {
  switch (action) {
    case ApplyAction::kCreated:
      return "created";
    case ApplyAction::kConfigured:
      return "configured";
    case ApplyAction::kUnchanged:
      return "unchanged";
    case ApplyAction::kKept:
      return "unchanged (kept; --rotate-certs replaces it)";
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
    for (const char* f : {"managedFields", "resourceVersion", "generation", "uid",
                          "creationTimestamp", "selfLink"}) {
      m.erase(f);
    }
    if (m.contains("annotations")) m["annotations"].erase("deployment.kubernetes.io/revision");
    if (m.contains("annotations") && m["annotations"].empty()) m.erase("annotations");
  }
  object.erase("status");
  return object;
}

Result<ApplyReport> Apply(kube::Client& client, const ApplyRequest& request,
                          const ApplyObserver& observer, const Clock& clock) {
  auto note = [&](const std::string& m) {
    if (observer.note) observer.note(m);
  };
  ApplyReport report;
  POWERCTL_TRY(version, TargetVersion(client, request, report.version_from_server));
  report.version = version;
  if (observer.warn) {
    for (const std::string& warning : version.Warnings(request.today)) observer.warn(warning);
  }

  manifests::GenerateRequest generate;
  generate.config = request.config;
  generate.version = version;
  generate.components = request.components;
  generate.templates_dir = request.templates_dir;
  generate.cert_dir = request.cert_dir;
  POWERCTL_TRY(generated, manifests::Generate(generate));
  if (observer.warn) {
    for (const std::string& w : generated.warnings) observer.warn(w);
  }

  std::vector<json> objects;
  std::vector<json> secrets;
  auto collect = [&] {
    objects.clear();
    secrets.clear();
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
  };
  collect();

  // All or nothing: check every permission the apply needs before reading or changing anything.
  POWERCTL_TRY(missing, MissingPermissions(client, ChecksFor(objects)));
  if (!missing.empty()) return PermissionError("apply", missing);

  POWERCTL_TRY(keep_secrets, KeepExistingSecrets(client, secrets, request.rotate_certs));
  if (!keep_secrets) {
    for (const std::string& n : generated.notes) note(n);
  } else if (auto live = LiveKeyMaterial(client, secrets, config::NamesFor(request.config))) {
    generate.keys = std::move(live);
    POWERCTL_TRY(regenerated, manifests::Generate(generate));
    generated = std::move(regenerated);
    collect();
  }

  if (request.dry_run == DryRunMode::kClient) {
    const std::string manager = kube::ApplyOptions{}.field_manager;
    for (const json& o : objects) {
      // Anything that cannot be read is reported as a change (conservative).
      AppliedObject applied{kube::DisplayName(o), ApplyAction::kConfigured, Redacted(o)};
      auto path = kube::ObjectPath(o);
      if (o.value("kind", "") == "Secret" && keep_secrets) {
        applied.action = ApplyAction::kKept;
      } else if (path.ok()) {
        auto live = client.Get(*path);
        if (live.ok()) {
          applied.action = CompareWithLive(o, *live, manager);
        } else if (live.error().code == ErrorCode::kNotFound) {
          applied.action = ApplyAction::kCreated;
        }
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
    } else if (server_dry_run &&
               (namespaces_to_create.count(ns) > 0 || (kind == "TASPolicy" && crd_to_create))) {
      // The server cannot dry-run an object whose namespace or type this apply would create first.
      applied.action = ApplyAction::kCreated;
    } else {
      if (kind == "TASPolicy" && request.dry_run == DryRunMode::kNone) {
        // Custom resources can be created only once their definition is established.
        for (const json& crd : objects) {
          if (crd.value("kind", "") == "CustomResourceDefinition")
            POWERCTL_CHECK_OK(WaitForEstablished(client, crd, clock));
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
    if (kind == "Deployment" || kind == "DaemonSet") {
      deployments.push_back(
          {o["metadata"].value("namespace", ""), o["metadata"].value("name", ""),
           kind == "DaemonSet" ? WorkloadKind::kDaemonSet : WorkloadKind::kDeployment});
    }
    if (observer.applied) observer.applied(applied);
    report.objects.push_back(std::move(applied));
  }

  if (request.wait && request.dry_run == DryRunMode::kNone && !deployments.empty()) {
    POWERCTL_CHECK_OK(
        WaitForRollouts(client, deployments, request.timeout, clock, observer.rollout));
  }
  return report;
}

}  // namespace powerctl::setup
