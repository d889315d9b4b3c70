// Requeues waiting pods of a completed pod group by annotating them.

#include "core/extender/pod_group_touch.h"

namespace powerctl::extender {

TouchResult TouchPods(kube::Client& client, const std::vector<scoring::PodTouch>& touches) {
  TouchResult out;
  for (const scoring::PodTouch& t : touches) {
    std::string key = t.namespace_ + "/" + t.name;
    std::string path = "/api/v1/namespaces/" + t.namespace_ + "/pods/" + t.name;
    kube::json patch = {
        {"metadata", {{"annotations", {{cluster::kGroupCompleteAnnotation, t.annotation_value}}}}}};
    Result<kube::json> result = client.MergePatch(path, patch);
    if (result.ok()) {
      out.touched.push_back(key);
    } else if (result.error().code == ErrorCode::kNotFound) {
      out.gone.push_back(key);
    } else {
      out.errors.push_back("pod " + key + ": " + result.error().message);
    }
  }
  return out;
}

}  // namespace powerctl::extender
