#include "core/config/names.h"

namespace powerctl::config {

ObjectNames NamesFor(const PowerctlConfig& config) {
  const std::string& s = config.scheduler.name;
  ObjectNames names;
  names.scheduler_service_account = s;
  names.scheduler_config_map = s + "-config";
  names.scheduler_tls_secret = s + "-tls";
  names.extender = "powerctl-extender";
  names.extender_config_map = "powerctl-extender-config";
  names.extender_tls_secret = "powerctl-extender-tls";
  names.extender_lease = "powerctl-extender";
  names.model = "powerctl-model";
  names.model_config_map = "powerctl-model-config";
  names.lb_agent = "powerctl-lb-agent";
  names.lb_config_map = "powerctl-lb-agent-config";
  names.consolidate = "powerctl-consolidate";
  // RBAC object names may contain ':', namespace names may not, so "powerctl:<part>:<ns>"
  // and "powerctl:<part>:<ns>:<role>" are distinct for every namespace. The namespace is
  // the install (the instance label `delete` selects by); the scheduler's name is not part
  // of the name, so renaming the scheduler updates these bindings instead of adding more.
  const std::string& ns = config.namespace_;
  names.extender_cluster_role = "powerctl:extender:" + ns;
  names.lb_cluster_role = "powerctl:lb-agent:" + ns;
  names.consolidate_cluster_role = "powerctl:consolidate:" + ns;
  names.scheduler_kube_scheduler = "powerctl:scheduler:" + ns + ":kube-scheduler";
  names.scheduler_volume_scheduler = "powerctl:scheduler:" + ns + ":volume-scheduler";
  names.scheduler_auth_reader = "powerctl:scheduler:" + ns + ":auth-reader";
  return names;
}

}  // namespace powerctl::config
