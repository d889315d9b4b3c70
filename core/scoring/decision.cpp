#include "core/scoring/decision.h"

#include "core/common/json_text.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <utility>

namespace powerctl::scoring {
namespace {

using nlohmann::json;

Error InvalidDecision(const std::string& field, const char* what) {
  return MakeError(ErrorCode::kInvalidInput, "decision: " + field + " " + what);
}

std::string MetadataString(const json& pod, const char* key) {
  auto metadata = pod.find("metadata");
  if (metadata == pod.end() || !metadata->is_object()) return "";
  auto value = metadata->find(key);
  return value != metadata->end() && value->is_string() ? value->get<std::string>() : "";
}

// Optional typed reads: absent or null leave `out` untouched.
Status ReadString(const json& object, const char* key, const std::string& where, std::string& out) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return OkStatus();
  if (!it->is_string()) return InvalidDecision(where + key, "is not a string");
  out = it->get<std::string>();
  return OkStatus();
}

// Components past ComponentList::kCapacity (kinds a newer powerctl may add) are ignored, as
// unknown keys are.
Result<ComponentList> ReadComponents(const json& list, const std::string& where) {
  if (!list.is_array()) return InvalidDecision(where, "is not a list");
  ComponentList out;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const json& item = list[i];
    const std::string at = where + "[" + std::to_string(i) + "].";
    if (!item.is_object()) return InvalidDecision(at, "is not an object");
    Component c;
    POWERCTL_CHECK_OK(ReadString(item, "name", at, c.name));
    POWERCTL_CHECK_OK(ReadString(item, "reason", at, c.reason));
    auto value = item.find("value");
    if (value == item.end() || !value->is_number())
      return InvalidDecision(at + "value", "is not a number");
    c.value = value->get<double>();
    (void)out.push_back(std::move(c));
  }
  return out;
}

Result<NodeDecision> ReadNode(const json& item, const std::string& at) {
  if (!item.is_object()) return InvalidDecision(at, "is not an object");
  NodeDecision n;
  POWERCTL_CHECK_OK(ReadString(item, "node", at, n.node));
  POWERCTL_CHECK_OK(ReadString(item, "reason", at, n.reason));
  if (auto pass = item.find("pass"); pass != item.end()) {
    if (!pass->is_boolean()) return InvalidDecision(at + "pass", "is not a boolean");
    n.passed = pass->get<bool>();
  }
  if (auto u = item.find("unresolvable"); u != item.end()) {
    if (!u->is_boolean()) return InvalidDecision(at + "unresolvable", "is not a boolean");
    n.unresolvable = u->get<bool>();
  }
  if (auto score = item.find("score"); score != item.end()) {
    if (!score->is_number_integer()) return InvalidDecision(at + "score", "is not an integer");
    n.score = score->get<std::int64_t>();
  }
  const std::pair<const char*, std::optional<double>*> watts_fields[] = {
      {"wattsNow", &n.watts_now}, {"wattsAfter", &n.watts_after}};
  for (const auto& [key, out] : watts_fields) {
    auto watts = item.find(key);
    if (watts == item.end() || watts->is_null()) continue;
    if (!watts->is_number()) return InvalidDecision(at + key, "is not a number");
    *out = watts->get<double>();
  }
  if (auto components = item.find("components"); components != item.end()) {
    POWERCTL_TRY(list, ReadComponents(*components, at + "components"));
    n.components = std::move(list);
  }
  return n;
}

}  // namespace

void SetPodIdentity(Decision& decision, const nlohmann::json& pod) {
  if (!pod.is_object()) return;
  decision.pod_namespace = MetadataString(pod, "namespace");
  decision.pod_name = MetadataString(pod, "name");
  decision.pod_uid = MetadataString(pod, "uid");
}

nlohmann::json DecisionToJson(const Decision& decision) {
  json out = json::object();
  out["verb"] = decision.verb;
  json pod = json::object();
  if (!decision.pod_namespace.empty()) pod["namespace"] = decision.pod_namespace;
  if (!decision.pod_name.empty()) pod["name"] = decision.pod_name;
  if (!decision.pod_uid.empty()) pod["uid"] = decision.pod_uid;
  out["pod"] = std::move(pod);
  out["at"] = decision.at_unix_ms;
  if (!decision.error.empty()) out["error"] = decision.error;
  if (!decision.notes.empty()) out["notes"] = decision.notes;
  json nodes = json::array();
  for (const NodeDecision& n : decision.nodes) {
    json node = {{"node", n.node}};
    if (n.passed) node["pass"] = *n.passed;
    if (!n.reason.empty()) node["reason"] = n.reason;
    if (n.unresolvable) node["unresolvable"] = true;
    if (n.score) node["score"] = *n.score;
    if (n.watts_now) node["wattsNow"] = *n.watts_now;
    if (n.watts_after) node["wattsAfter"] = *n.watts_after;
    if (!n.components.empty()) {
      json components = json::array();
      for (const Component& c : n.components) {
        components.push_back({{"name", c.name}, {"value", c.value}, {"reason", c.reason}});
      }
      node["components"] = std::move(components);
    }
    nodes.push_back(std::move(node));
  }
  out["nodes"] = std::move(nodes);
  if (decision.omitted_nodes > 0) out["omitted"] = decision.omitted_nodes;
  return out;
}

std::string DecisionJsonText(const Decision& decision) {
  std::string out;
  out.reserve(256 + 160 * decision.nodes.size());
  out += R"({"verb":)";
  AppendJsonString(out, decision.verb);
  out += R"(,"pod":{)";
  const char* separator = "";
  const std::pair<const char*, const std::string*> pod[] = {{"namespace", &decision.pod_namespace},
                                                            {"name", &decision.pod_name},
                                                            {"uid", &decision.pod_uid}};
  for (const auto& [key, value] : pod) {
    if (value->empty()) continue;
    out += separator;
    AppendJsonString(out, key);
    out += ':';
    AppendJsonString(out, *value);
    separator = ",";
  }
  out += R"(},"at":)";
  AppendJsonNumber(out, decision.at_unix_ms);
  if (!decision.error.empty()) {
    out += R"(,"error":)";
    AppendJsonString(out, decision.error);
  }
  if (!decision.notes.empty()) {
    out += R"(,"notes":[)";
    for (std::size_t i = 0; i < decision.notes.size(); ++i) {
      if (i > 0) out += ',';
      AppendJsonString(out, decision.notes[i]);
    }
    out += ']';
  }
  out += R"(,"nodes":[)";
  for (std::size_t i = 0; i < decision.nodes.size(); ++i) {
    const NodeDecision& n = decision.nodes[i];
    out += i == 0 ? R"({"node":)" : R"(,{"node":)";
    AppendJsonString(out, n.node);
    if (n.passed) out += *n.passed ? R"(,"pass":true)" : R"(,"pass":false)";
    if (!n.reason.empty()) {
      out += R"(,"reason":)";
      AppendJsonString(out, n.reason);
    }
    if (n.unresolvable) out += R"(,"unresolvable":true)";
    if (n.score) {
      out += R"(,"score":)";
      AppendJsonNumber(out, *n.score);
    }
    if (n.watts_now) {
      out += R"(,"wattsNow":)";
      AppendJsonNumber(out, *n.watts_now);
    }
    if (n.watts_after) {
      out += R"(,"wattsAfter":)";
      AppendJsonNumber(out, *n.watts_after);
    }
    if (!n.components.empty()) {
      out += R"(,"components":[)";
      for (std::size_t k = 0; k < n.components.size(); ++k) {
        const Component& c = n.components[k];
        out += k == 0 ? R"({"name":)" : R"(,{"name":)";
        AppendJsonString(out, c.name);
        out += R"(,"value":)";
        AppendJsonNumber(out, c.value);
        out += R"(,"reason":)";
        AppendJsonString(out, c.reason);
        out += '}';
      }
      out += ']';
    }
    out += '}';
  }
  out += ']';
  if (decision.omitted_nodes > 0) {
    out += R"(,"omitted":)";
    AppendJsonNumber(out, static_cast<std::int64_t>(decision.omitted_nodes));
  }
  out += '}';
  return out;
}

Result<Decision> DecisionFromJson(const nlohmann::json& document) {
  if (!document.is_object()) return InvalidDecision("document", "is not an object");
  Decision d;
  POWERCTL_CHECK_OK(ReadString(document, "verb", "", d.verb));
  POWERCTL_CHECK_OK(ReadString(document, "error", "", d.error));
  if (auto pod = document.find("pod"); pod != document.end() && !pod->is_null()) {
    if (!pod->is_object()) return InvalidDecision("pod", "is not an object");
    POWERCTL_CHECK_OK(ReadString(*pod, "namespace", "pod.", d.pod_namespace));
    POWERCTL_CHECK_OK(ReadString(*pod, "name", "pod.", d.pod_name));
    POWERCTL_CHECK_OK(ReadString(*pod, "uid", "pod.", d.pod_uid));
  }
  if (auto at = document.find("at"); at != document.end()) {
    if (!at->is_number_integer()) return InvalidDecision("at", "is not an integer");
    d.at_unix_ms = at->get<std::int64_t>();
  }
  if (auto notes = document.find("notes"); notes != document.end()) {
    if (!notes->is_array()) return InvalidDecision("notes", "is not a list");
    for (const json& note : *notes) {
      if (!note.is_string()) return InvalidDecision("notes", "holds a non-string");
      d.notes.push_back(note.get<std::string>());
    }
  }
  if (auto omitted = document.find("omitted"); omitted != document.end()) {
    if (!omitted->is_number_unsigned()) return InvalidDecision("omitted", "is not a count");
    d.omitted_nodes = omitted->get<std::size_t>();
  }
  if (auto nodes = document.find("nodes"); nodes != document.end()) {
    if (!nodes->is_array()) return InvalidDecision("nodes", "is not a list");
    for (std::size_t i = 0; i < nodes->size(); ++i) {
      POWERCTL_TRY(node, ReadNode((*nodes)[i], "nodes[" + std::to_string(i) + "]."));
      d.nodes.push_back(std::move(node));
    }
  }
  return d;
}

Decision TopNodes(const Decision& decision, std::size_t max_scored, std::size_t max_rejected) {
  std::vector<std::size_t> scored;
  std::vector<std::size_t> keep;
  for (std::size_t i = 0; i < decision.nodes.size(); ++i) {
    const NodeDecision& n = decision.nodes[i];
    if (n.passed == false) {
      if (max_rejected > 0) {
        keep.push_back(i);
        --max_rejected;
      }
    } else if (n.score) {
      scored.push_back(i);
    }
  }
  const std::size_t best = std::min(max_scored, scored.size());
  std::partial_sort(scored.begin(), scored.begin() + static_cast<std::ptrdiff_t>(best),
                    scored.end(), [&](std::size_t a, std::size_t b) {
                      const auto sa = *decision.nodes[a].score, sb = *decision.nodes[b].score;
                      return sa != sb ? sa > sb : a < b;
                    });
  keep.insert(keep.end(), scored.begin(), scored.begin() + static_cast<std::ptrdiff_t>(best));
  std::sort(keep.begin(), keep.end());

  Decision out;
  out.verb = decision.verb;
  out.pod_namespace = decision.pod_namespace;
  out.pod_name = decision.pod_name;
  out.pod_uid = decision.pod_uid;
  out.at_unix_ms = decision.at_unix_ms;
  out.error = decision.error;
  out.notes = decision.notes;
  out.nodes.reserve(keep.size());
  for (std::size_t i : keep) out.nodes.push_back(decision.nodes[i]);
  out.omitted_nodes = decision.omitted_nodes + decision.nodes.size() - keep.size();
  return out;
}

void KeepRejectedNodes(Decision& decision) {
  auto passed = std::remove_if(decision.nodes.begin(), decision.nodes.end(),
                               [](const NodeDecision& n) { return n.passed != false; });
  decision.omitted_nodes += static_cast<std::size_t>(decision.nodes.end() - passed);
  decision.nodes.erase(passed, decision.nodes.end());
  // The record keeps this decision: it must not keep the room the passes took (hundreds of
  // kilobytes for a large cluster, for each of up to a thousand recorded filters).
  decision.nodes.shrink_to_fit();
}

}  // namespace powerctl::scoring
