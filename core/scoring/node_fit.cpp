#include "core/scoring/node_fit.h"

#include "core/common/json_fields.h"
#include "core/kube/quantity.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>

namespace powerctl::scoring {
namespace {

using json = nlohmann::json;

const json& ListAt(const json& value, std::initializer_list<std::string_view> path) {
  static const json kEmpty = json::array();
  const json* found = FindField(value, path);
  return found != nullptr && found->is_array() ? *found : kEmpty;
}

std::map<std::string, std::string> Labels(const json& node) {
  std::map<std::string, std::string> out;
  const json* labels = FindField(node, {"metadata", "labels"});
  if (labels == nullptr || !labels->is_object()) return out;
  for (const auto& [key, value] : labels->items()) {
    if (value.is_string()) out[key] = value.get<std::string>();
  }
  return out;
}

std::string TaintText(const json& taint) {
  std::string key = StringField(taint, {"key"});
  std::string value = StringField(taint, {"value"});
  return key + (value.empty() ? "" : "=" + value) + ":" + StringField(taint, {"effect"});
}

bool ToleratesAny(const json& tolerations, const json& taint) {
  for (const json& t : tolerations) {
    if (Tolerates(t, taint)) return true;
  }
  return false;
}

std::optional<std::int64_t> ParseInt(const std::string& text) {
  std::int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// matchFields: only metadata.name is supported by Kubernetes.
bool MatchesField(const json& requirement, const std::string& node_name) {
  if (StringField(requirement, {"key"}) != "metadata.name") return false;
  std::map<std::string, std::string> as_labels = {{"metadata.name", node_name}};
  return MatchesRequirement(requirement, as_labels);
}

bool MatchesTerm(const json& term, const std::map<std::string, std::string>& labels,
                 const std::string& node_name) {
  const json& expressions = ListAt(term, {"matchExpressions"});
  const json& fields = ListAt(term, {"matchFields"});
  // An empty term selects no node (v1 NodeSelectorTerm).
  if (expressions.empty() && fields.empty()) return false;
  for (const json& e : expressions) {
    if (!MatchesRequirement(e, labels)) return false;
  }
  for (const json& f : fields) {
    if (!MatchesField(f, node_name)) return false;
  }
  return true;
}

std::optional<std::int64_t> Allocatable(const json& node, const char* resource, bool cpu) {
  std::string text = StringField(node, {"status", "allocatable", resource});
  if (text.empty()) return std::nullopt;
  auto parsed = cpu ? kube::ParseCpuCores(text) : kube::ParseBytes(text);
  if (!parsed.ok()) return std::nullopt;
  return static_cast<std::int64_t>(std::llround(cpu ? *parsed * 1000.0 : *parsed));
}

std::string Mebi(std::int64_t bytes) {
  return fmt::format("{:.0f}Mi", static_cast<double>(bytes) / (1024.0 * 1024.0));
}

}  // namespace

bool Tolerates(const json& toleration, const json& taint) {
  const std::string effect = StringField(toleration, {"effect"});
  if (!effect.empty() && effect != StringField(taint, {"effect"})) return false;
  const std::string key = StringField(toleration, {"key"});
  if (!key.empty() && key != StringField(taint, {"key"})) return false;
  const std::string op = StringField(toleration, {"operator"});
  if (op == "Exists") return true;
  if (op.empty() || op == "Equal") {
    return StringField(toleration, {"value"}) == StringField(taint, {"value"});
  }
  return false;
}

bool MatchesRequirement(const json& requirement, const std::map<std::string, std::string>& labels) {
  const std::string key = StringField(requirement, {"key"});
  const std::string op = StringField(requirement, {"operator"});
  std::vector<std::string> values;
  for (const json& v : ListAt(requirement, {"values"})) {
    if (v.is_string()) values.push_back(v.get<std::string>());
  }
  auto label = labels.find(key);
  const bool has = label != labels.end();
  auto listed = [&] {
    return has && std::find(values.begin(), values.end(), label->second) != values.end();
  };
  if (op == "In") return listed();
  if (op == "NotIn") return !listed();
  if (op == "Exists") return has;
  if (op == "DoesNotExist") return !has;
  if (op == "Gt" || op == "Lt") {
    if (!has || values.size() != 1) return false;
    auto actual = ParseInt(label->second);
    auto bound = ParseInt(values[0]);
    if (!actual || !bound) return false;
    return op == "Gt" ? *actual > *bound : *actual < *bound;
  }
  return false;  // an unknown operator selects nothing
}

std::optional<FitFailure> CheckUnschedulable(const json& pod, const json& node) {
  const json* flag = FindField(node, {"spec", "unschedulable"});
  if (flag == nullptr || !flag->is_boolean() || !flag->get<bool>()) return std::nullopt;
  const json taint = {{"key", "node.kubernetes.io/unschedulable"}, {"effect", "NoSchedule"}};
  if (ToleratesAny(ListAt(pod, {"spec", "tolerations"}), taint)) return std::nullopt;
  const std::string name = StringField(node, {"metadata", "name"});
  return FitFailure{kCheckUnschedulable, kReasonUnschedulable, "the node is cordoned",
                    "kubectl uncordon " + name};
}

std::optional<FitFailure> CheckTaints(const json& pod, const json& node) {
  const json& tolerations = ListAt(pod, {"spec", "tolerations"});
  for (const json& taint : ListAt(node, {"spec", "taints"})) {
    const std::string effect = StringField(taint, {"effect"});
    if (effect != "NoSchedule" && effect != "NoExecute") continue;
    if (ToleratesAny(tolerations, taint)) continue;
    const std::string key = StringField(taint, {"key"});
    const std::string value = StringField(taint, {"value"});
    std::string toleration =
        value.empty() ? fmt::format("{{key: {}, operator: Exists, effect: {}}}", key, effect)
                      : fmt::format("{{key: {}, operator: Equal, value: {}, effect: {}}}", key,
                                    value, effect);
    return FitFailure{
        kCheckTaints, kReasonUntoleratedTaint, "taint " + TaintText(taint),
        fmt::format("add to the pod's spec.tolerations: {}, or remove the taint: "
                    "kubectl taint nodes {} {}:{}-",
                    toleration, StringField(node, {"metadata", "name"}), key, effect)};
  }
  return std::nullopt;
}

std::optional<FitFailure> CheckNodeAffinity(const json& pod, const json& node) {
  const std::map<std::string, std::string> labels = Labels(node);
  const std::string name = StringField(node, {"metadata", "name"});
  if (const json* selector = FindField(pod, {"spec", "nodeSelector"});
      selector != nullptr && selector->is_object()) {
    for (const auto& [key, value] : selector->items()) {
      auto label = labels.find(key);
      const std::string wanted = value.is_string() ? value.get<std::string>() : "";
      if (label != labels.end() && label->second == wanted) continue;
      return FitFailure{
          kCheckNodeAffinity, kReasonNodeAffinity,
          fmt::format("nodeSelector {}={}: the node has {}", key, wanted,
                      label == labels.end() ? "no such label" : key + "=" + label->second),
          fmt::format("label the node (kubectl label nodes {} {}={}) or change the pod's "
                      "nodeSelector",
                      name, key, wanted)};
    }
  }
  const json* required = FindField(
      pod, {"spec", "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution"});
  if (required == nullptr || !required->is_object()) return std::nullopt;
  const json& terms = ListAt(*required, {"nodeSelectorTerms"});
  for (const json& term : terms) {
    if (MatchesTerm(term, labels, name)) return std::nullopt;
  }
  return FitFailure{kCheckNodeAffinity, kReasonNodeAffinity,
                    fmt::format("none of the {} required nodeAffinity term(s) matches the node's "
                                "labels",
                                terms.size()),
                    fmt::format("label the node to match a term (kubectl label nodes {} "
                                "KEY=VALUE) or relax the pod's required node affinity",
                                name)};
}

std::vector<FitFailure> CheckResources(const kube::PodResources& requests, const json& node,
                                       const NodeLoad& load) {
  std::vector<FitFailure> out;
  const std::string name = StringField(node, {"metadata", "name"});
  if (auto pods = Allocatable(node, "pods", true); pods && load.pods + 1 > *pods / 1000) {
    out.push_back({kCheckResources, kReasonTooManyPods,
                   fmt::format("{} of {} pods already run there", load.pods, *pods / 1000),
                   "schedule fewer pods on " + name + " or raise its pod limit"});
  }
  // As NodeResourcesFit: a pod that requests nothing only needs a pod slot.
  if (requests.cpu_request_millis == 0 && requests.memory_request_bytes == 0) return out;
  if (auto cpu = Allocatable(node, "cpu", true);
      cpu && requests.cpu_request_millis > 0 &&
      load.cpu_millis + requests.cpu_request_millis > *cpu) {
    out.push_back({kCheckResources, kReasonInsufficientCpu,
                   fmt::format("requests {}m CPU; {}m of {}m allocatable is free",
                               requests.cpu_request_millis,
                               std::max<std::int64_t>(0, *cpu - load.cpu_millis), *cpu),
                   requests.cpu_request_millis > *cpu
                       // Freeing CPU cannot help a pod larger than the whole node.
                       ? fmt::format("lower the pod's CPU request to at most {}m (all of {}) or "
                                     "add a node with more CPU",
                                     *cpu, name)
                       : "lower the pod's CPU request or free CPU on " + name});
  }
  if (auto memory = Allocatable(node, "memory", false);
      memory && requests.memory_request_bytes > 0 &&
      load.memory_bytes + requests.memory_request_bytes > *memory) {
    out.push_back(
        {kCheckResources, kReasonInsufficientMemory,
         fmt::format("requests {} memory; {} of {} allocatable is free",
                     Mebi(requests.memory_request_bytes),
                     Mebi(std::max<std::int64_t>(0, *memory - load.memory_bytes)), Mebi(*memory)),
         requests.memory_request_bytes > *memory
             ? fmt::format("lower the pod's memory request to at most {} (all of {}) or add a "
                           "node with more memory",
                           Mebi(*memory), name)
             : "lower the pod's memory request or free memory on " + name});
  }
  return out;
}

std::vector<FitFailure> CheckNodeFit(const json& pod, const kube::PodResources& requests,
                                     const json& node, const NodeLoad& load) {
  std::vector<FitFailure> out;
  if (auto f = CheckUnschedulable(pod, node)) out.push_back(std::move(*f));
  if (auto f = CheckNodeAffinity(pod, node)) out.push_back(std::move(*f));
  if (auto f = CheckTaints(pod, node)) out.push_back(std::move(*f));
  for (FitFailure& f : CheckResources(requests, node, load)) out.push_back(std::move(f));
  return out;
}

std::map<std::string, NodeLoad> NodeLoadsOf(const std::vector<json>& pods,
                                            const std::string& exclude_key) {
  std::map<std::string, NodeLoad> out;
  for (const json& pod : pods) {
    const std::string node = StringField(pod, {"spec", "nodeName"});
    if (node.empty()) continue;
    const std::string phase = StringField(pod, {"status", "phase"});
    if (phase == "Succeeded" || phase == "Failed") continue;
    if (!exclude_key.empty() && StringField(pod, {"metadata", "namespace"}) + "/" +
                                        StringField(pod, {"metadata", "name"}) ==
                                    exclude_key) {
      continue;
    }
    NodeLoad& load = out[node];
    ++load.pods;
    if (auto resources = kube::EffectivePodResources(pod); resources.ok()) {
      load.cpu_millis += resources->cpu_request_millis;
      load.memory_bytes += resources->memory_request_bytes;
    }
  }
  return out;
}

}  // namespace powerctl::scoring
