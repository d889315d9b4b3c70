#include "core/consolidate/pod_rules.h"

#include "core/common/json_fields.h"
#include "core/kube/client.h"
#include "core/scoring/node_fit.h"

namespace powerctl::consolidate {
namespace {

using json = nlohmann::json;

std::map<std::string, std::string> Labels(const json& pod) {
  std::map<std::string, std::string> out;
  const json* labels = FindField(pod, {"metadata", "labels"});
  if (labels == nullptr || !labels->is_object()) return out;
  for (const auto& [k, v] : labels->items())
    if (v.is_string()) out[k] = v.get<std::string>();
  return out;
}

// The first volume whose data lives on the node and dies with it, or "".
std::string LocalVolume(const json& pod) {
  const json* volumes = FindField(pod, {"spec", "volumes"});
  if (volumes == nullptr || !volumes->is_array()) return "";
  for (const json& volume : *volumes) {
    const std::string name = StringField(volume, {"name"});
    if (FindField(volume, {"hostPath"}) != nullptr) return "hostPath volume \"" + name + "\"";
    if (const json* empty = FindField(volume, {"emptyDir"}); empty != nullptr) {
      if (StringField(*empty, {"medium"}) != "Memory") return "emptyDir volume \"" + name + "\"";
    }
  }
  return "";
}

}  // namespace

const json* ControllerOf(const json& pod) {
  const json* owners = FindField(pod, {"metadata", "ownerReferences"});
  if (owners == nullptr || !owners->is_array()) return nullptr;
  for (const json& owner : *owners) {
    const json* controller = FindField(owner, {"controller"});
    if (controller != nullptr && controller->is_boolean() && controller->get<bool>()) return &owner;
  }
  return nullptr;
}

std::string PodName(const json& pod) {
  const std::string ns = StringField(pod, {"metadata", "namespace"});
  const std::string name = StringField(pod, {"metadata", "name"});
  return ns.empty() ? name : ns + "/" + name;
}

PodVerdict ClassifyPod(const json& pod) {
  const json* controller = ControllerOf(pod);
  const std::string kind = controller != nullptr ? StringField(*controller, {"kind"}) : "";
  if (kind == "DaemonSet") return {PodRole::kStays, ""};
  if (FindField(pod, {"metadata", "annotations", kMirrorPodAnnotation}) != nullptr)
    return {PodRole::kStays, ""};
  const std::string safe = StringField(pod, {"metadata", "annotations", kSafeToEvictAnnotation});
  if (safe == "false") return {PodRole::kBlocks, std::string(kSafeToEvictAnnotation) + "=false"};
  if (safe == "true") return {PodRole::kMovable, ""};
  if (kind.empty()) return {PodRole::kBlocks, "not owned by a controller"};
  if (std::string local = LocalVolume(pod); !local.empty())
    return {PodRole::kBlocks, "local storage (" + local + ")"};
  return {PodRole::kMovable, ""};
}

bool DisruptionBudget::Covers(const json& pod) const {
  if (StringField(pod, {"metadata", "namespace"}) != namespace_) return false;
  if (!selector.is_object()) return false;
  if (selector.empty()) return empty_selects_all;
  const auto labels = Labels(pod);
  if (const json* match = FindField(selector, {"matchLabels"}); match && match->is_object()) {
    for (const auto& [k, v] : match->items()) {
      auto it = labels.find(k);
      if (it == labels.end() || !v.is_string() || it->second != v.get<std::string>()) return false;
    }
  }
  if (const json* exprs = FindField(selector, {"matchExpressions"}); exprs && exprs->is_array()) {
    for (const json& e : *exprs) {
      // In, NotIn, Exists and DoesNotExist read as a NodeSelectorRequirement's do.
      if (!scoring::MatchesRequirement(e, labels)) return false;
    }
  }
  return true;
}

std::vector<DisruptionBudget> DisruptionBudgetsFromObjects(const std::vector<json>& objects) {
  std::vector<DisruptionBudget> out;
  for (const json& o : objects) {
    DisruptionBudget b;
    b.name = StringField(o, {"metadata", "name"});
    if (b.name.empty()) continue;
    b.namespace_ = StringField(o, {"metadata", "namespace"});
    b.empty_selects_all = StringField(o, {"apiVersion"}) != "policy/v1beta1";
    if (const json* s = FindField(o, {"spec", "selector"}); s != nullptr) b.selector = *s;
    b.disruptions_allowed = IntField(o, {"status", "disruptionsAllowed"}, 0);
    out.push_back(std::move(b));
  }
  return out;
}

Result<std::vector<DisruptionBudget>> ListDisruptionBudgets(kube::Client& client) {
  auto listed = client.List("/apis/policy/v1/poddisruptionbudgets");
  bool v1beta1 = false;
  if (!listed.ok() && listed.error().code == ErrorCode::kNotFound) {
    listed = client.List("/apis/policy/v1beta1/poddisruptionbudgets");
    v1beta1 = true;
  }
  if (!listed.ok()) return listed.error();
  if (listed->size() > kMaxDisruptionBudgets) {
    return MakeError(ErrorCode::kInvalidInput,
                     "the cluster has more than 10000 PodDisruptionBudgets; powerctl plans with "
                     "at most that many");
  }
  // A list's items carry no apiVersion: the endpoint that answered says which rule holds.
  std::vector<DisruptionBudget> budgets = DisruptionBudgetsFromObjects(*listed);
  for (DisruptionBudget& b : budgets) b.empty_selects_all = !v1beta1;
  return budgets;
}

}  // namespace powerctl::consolidate
