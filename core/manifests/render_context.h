#pragma once
// Turns powerctl.yaml plus the target Kubernetes version into the values the
// templates use. Every version-dependent decision lives here, with its reason.

#include "core/common/kube_version.h"
#include "core/manifests/config.h"
#include "core/manifests/tls.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace powerctl::manifests {

// Fixed object names, derived from powerctl.yaml, shared by generate, apply and doctor.
struct ObjectNames {
  std::string scheduler_service_account, scheduler_config_map, scheduler_tls_secret;
  std::string extender, extender_config_map, extender_tls_secret, extender_lease;
  std::string model, model_config_map;
  std::string lb_agent, lb_config_map;  // DaemonSet (and its ServiceAccount), ConfigMap
  // Objects outside the install's namespace (cluster-scoped, or in kube-system) carry the
  // namespace in their names, so installs in two namespaces never share (and take over or
  // delete) one.
  std::string extender_cluster_role;       // ClusterRole and its ClusterRoleBinding
  std::string lb_cluster_role;             // the lb-agent's ClusterRole and ClusterRoleBinding
  std::string scheduler_kube_scheduler;    // ClusterRoleBinding to system:kube-scheduler
  std::string scheduler_volume_scheduler;  // ClusterRoleBinding to system:volume-scheduler
  std::string scheduler_auth_reader;       // RoleBinding in kube-system
};
ObjectNames NamesFor(const PowerctlConfig& config);

struct RenderOptions {
  KubeVersion version;
  bool out_of_cluster = false;
  std::string kubeconfig_path;        // out of cluster: the scheduler's kubeconfig
  std::string extender_url;           // out of cluster: the extender's URL prefix
  std::string cert_dir;               // out of cluster: where ca.crt, client.crt, client.key are
  const KeyMaterial* keys = nullptr;  // set when secrets are rendered
};

// DNS names the extender's serving certificate must cover.
CertificateRequest ExtenderCertificateRequest(const PowerctlConfig& config);

// KubeSchedulerConfiguration apiVersion for a Kubernetes version.
std::string SchedulerConfigApiVersion(const KubeVersion& version);

nlohmann::ordered_json BuildRenderContext(const PowerctlConfig& config,
                                          const RenderOptions& options);

}  // namespace powerctl::manifests
