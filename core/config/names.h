#pragma once
// The names of the objects an install creates, derived from powerctl.yaml: generate renders
// them, apply and delete find them, doctor, predict and explain address them.

#include "core/config/config.h"

#include <string>

namespace powerctl::config {

// Fixed object names, derived from powerctl.yaml, shared by generate, apply and doctor.
struct ObjectNames {
  std::string scheduler_service_account, scheduler_config_map, scheduler_tls_secret;
  std::string extender, extender_config_map, extender_tls_secret, extender_lease;
  std::string model, model_config_map;
  std::string lb_agent, lb_config_map;  // DaemonSet (and its ServiceAccount), ConfigMap
  std::string consolidate;              // ServiceAccount `consolidate` runs as in the cluster
  // Objects outside the install's namespace (cluster-scoped, or in kube-system) carry the
  // namespace in their names, so installs in two namespaces never share (and take over or
  // delete) one.
  std::string extender_cluster_role;       // ClusterRole and its ClusterRoleBinding
  std::string lb_cluster_role;             // the lb-agent's ClusterRole and ClusterRoleBinding
  std::string consolidate_cluster_role;    // consolidate's ClusterRole and ClusterRoleBinding
  std::string scheduler_kube_scheduler;    // ClusterRoleBinding to system:kube-scheduler
  std::string scheduler_volume_scheduler;  // ClusterRoleBinding to system:volume-scheduler
  std::string scheduler_auth_reader;       // RoleBinding in kube-system
};
ObjectNames NamesFor(const PowerctlConfig& config);

}  // namespace powerctl::config
