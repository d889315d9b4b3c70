#pragma once
// Turns powerctl.yaml plus the target Kubernetes version into the values the
// templates use. Every version-dependent decision lives here, with its reason.

#include "core/common/kube_version.h"
#include "core/config/config.h"
#include "core/config/names.h"
#include "core/manifests/tls.h"

#include <nlohmann/json.hpp>

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

namespace powerctl::manifests {

struct RenderOptions {
  KubeVersion version;
  bool out_of_cluster = false;
  std::string kubeconfig_path;        // out of cluster: the scheduler's kubeconfig
  std::string extender_url;           // out of cluster: the extender's URL prefix
  std::string cert_dir;               // out of cluster: where ca.crt, client.crt, client.key are
  const KeyMaterial* keys = nullptr;  // set when secrets are rendered
};

// DNS names the extender's serving certificate must cover.
CertificateRequest ExtenderCertificateRequest(const config::PowerctlConfig& config);

// KubeSchedulerConfiguration apiVersion for a Kubernetes version.
std::string SchedulerConfigApiVersion(const KubeVersion& version);
// kube-scheduler's --feature-gates for this line, "" for none.
std::string SchedulerFeatureGates(const KubeVersion& version);

// The powerctl.io/config-hash pod annotation: 16 hex digits of SHA-256 over what the pods read
// at start, their config text and the certificates they mount (kube-scheduler reads its CA only
// then). When either changes, applying the Deployment rolls its pods. Certificates, not keys:
// a new key always comes with a new certificate. Without certificates it is the config text's.
std::string ConfigHash(std::string_view config_text,
                       std::initializer_list<std::string_view> mounted_certificates = {});

nlohmann::ordered_json BuildRenderContext(const config::PowerctlConfig& config,
                                          const RenderOptions& options);

}  // namespace powerctl::manifests
