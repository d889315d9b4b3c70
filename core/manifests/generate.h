#pragma once
// `powerctl generate`: renders the manifests of the selected components.

#include "core/common/kube_version.h"
#include "core/common/result.h"
#include "core/config/config.h"
#include "core/manifests/components.h"
#include "core/manifests/template_files.h"
#include "core/manifests/tls.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace powerctl::manifests {

struct GenerateRequest {
  config::PowerctlConfig config;
  KubeVersion version;
  std::vector<std::string> components;  // empty = all
  // Render the scheduler configuration for a kube-scheduler running outside the cluster.
  bool out_of_cluster = false;
  std::string kubeconfig_path;
  std::string extender_url;
  // TLS material kept from run to run: reused, completed from a CA (ca.crt and ca.key) or
  // created here (ObtainCertDir). Without it every run makes new material.
  std::optional<std::filesystem::path> cert_dir;
  // TLS material to render as it is, ahead of cert_dir: `apply` passes the live Secrets' so the
  // Deployments' config-hash follows what they really mount. ca_key may be empty.
  std::optional<KeyMaterial> keys;
  std::optional<std::filesystem::path> templates_dir;  // overrides embedded templates by file name
};

struct GeneratedComponent {
  Component component;
  std::vector<nlohmann::ordered_json> objects;
  bool holds_keys = false;  // written 0600
};

struct GenerateResult {
  std::vector<GeneratedComponent> components;
  std::vector<std::string> notes;     // for stderr: where key material came from, files written
  std::vector<std::string> warnings;  // for stderr: what the target version deprecates
};

Result<GenerateResult> Generate(const GenerateRequest& request);

// What the config still lacks to generate these components, one sentence each naming the key
// ("extender.image is required to generate the extender component"); empty when nothing.
// Generate fails with the first; `init` lists them all for `generate all`.
std::vector<std::string> MissingSettings(const config::PowerctlConfig& config,
                                         const std::vector<Component>& components);

// Labels every object powerctl makes carries. `instance` is powerctl's namespace: it
// tells installs apart, also on cluster-scoped objects, so `delete` removes only its own.
void AddStandardLabels(nlohmann::ordered_json& object, Component component,
                       const std::string& instance);

}  // namespace powerctl::manifests
