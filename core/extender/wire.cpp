#include "core/extender/wire.h"

#include "core/common/json_bounds.h"
#include "core/common/json_scan.h"
#include "core/common/json_text.h"
#include "core/extender/wire_internal.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <new>
#include <set>
#include <utility>

namespace powerctl::extender {
namespace {

using nlohmann::json;

Error Invalid(std::string message) {
  return MakeError(ErrorCode::kInvalidInput, std::move(message));
}

using internal::EqualsIgnoringAsciiCase;

// Go's field lookup (see FindGoField), for const and mutable documents.
template <typename Json>
Json* FindIn(Json& object, std::string_view key) {
  if (!object.is_object()) return nullptr;
  auto exact = object.find(key);
  if (exact != object.end()) return &*exact;
  for (auto it = object.begin(); it != object.end(); ++it) {
    if (EqualsIgnoringAsciiCase(it.key(), key)) return &*it;
  }
  return nullptr;
}

json* FindMutable(json& object, std::string_view key) {
  return FindIn(object, key);
}

// The HTTP server already capped the size; the depth check keeps recursion over the value
// (copies, lookups, dumps) shallow.
bool WithinDepth(std::string_view text, int limit) {
  return !JsonBoundsViolation(text, JsonLimits{limit, text.size()});
}

Result<json> ParseObject(std::string_view body, std::string_view what) {
  if (!WithinDepth(body, kMaxJsonDepth)) {
    return Invalid(std::string(what) + ": JSON nested deeper than " +
                   std::to_string(kMaxJsonDepth) + " levels");
  }
  json root;
  try {
    root = json::parse(body, nullptr, /*allow_exceptions=*/false);
  } catch (const json::exception& e) {
    return Invalid(std::string(what) + ": " + e.what());
  } catch (const std::bad_alloc&) {
    return Invalid(std::string(what) + ": body too large to parse");
  }
  if (root.is_discarded()) return Invalid(std::string(what) + ": body is not valid JSON");
  if (!root.is_object()) return Invalid(std::string(what) + ": body is not a JSON object");
  return root;
}

// Moves the Pod object out of `root`.
Result<json> TakePod(json& root, std::string_view what) {
  json* pod = FindMutable(root, "Pod");
  if (pod == nullptr || pod->is_null()) return Invalid(std::string(what) + ": Pod is missing");
  if (!pod->is_object()) return Invalid(std::string(what) + ": Pod is not an object");
  return std::move(*pod);
}

const json* NodeName(const json& node) {
  const json* metadata = FindGoField(node, "metadata");
  const json* name = metadata != nullptr ? FindGoField(*metadata, "name") : nullptr;
  return name != nullptr && name->is_string() && !name->get_ref<const std::string&>().empty()
             ? name
             : nullptr;
}

Status ReadNodeNames(const json& names, ExtenderArgs& args) {
  if (!names.is_array()) return Invalid("ExtenderArgs: NodeNames is not an array");
  args.node_names.reserve(names.size());
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (!names[i].is_string()) {
      return Invalid("ExtenderArgs: NodeNames[" + std::to_string(i) + "] is not a string");
    }
    args.node_names.push_back(names[i].get<std::string>());
  }
  return OkStatus();
}

Status ReadNodes(json& nodes, ExtenderArgs& args) {
  if (!nodes.is_object()) return Invalid("ExtenderArgs: Nodes is not a NodeList object");
  json* items = FindMutable(nodes, "items");
  if (items == nullptr || items->is_null()) return OkStatus();
  if (!items->is_array()) return Invalid("ExtenderArgs: Nodes.items is not an array");
  args.node_names.reserve(items->size());
  for (std::size_t i = 0; i < items->size(); ++i) {
    const json* name = NodeName((*items)[i]);
    if (name == nullptr) {
      return Invalid("ExtenderArgs: Nodes.items[" + std::to_string(i) + "] has no metadata.name");
    }
    args.node_names.push_back(name->get<std::string>());
  }
  args.node_items = std::move(*items);
  return OkStatus();
}

Result<Victims> ReadVictims(const json& value, bool meta, const std::string& node) {
  Victims victims;
  if (value.is_null()) return victims;
  const std::string where = (meta ? "NodeNameToMetaVictims[" : "NodeNameToVictims[") + node + "]";
  if (!value.is_object()) return Invalid("ExtenderPreemptionArgs: " + where + " is not an object");
  if (const json* count = FindGoField(value, "NumPDBViolations");
      count != nullptr && !count->is_null()) {
    if (!count->is_number_integer()) {
      return Invalid("ExtenderPreemptionArgs: " + where + ".NumPDBViolations is not an integer");
    }
    victims.num_pdb_violations = count->get<std::int64_t>();
  }
  const json* pods = FindGoField(value, "Pods");
  if (pods == nullptr || pods->is_null()) return victims;
  if (!pods->is_array())
    return Invalid("ExtenderPreemptionArgs: " + where + ".Pods is not an array");
  for (std::size_t i = 0; i < pods->size(); ++i) {
    const json& pod = (*pods)[i];
    if (pod.is_null()) continue;  // a nil *Pod / *MetaPod
    const json* uid = nullptr;
    if (meta) {
      uid = FindGoField(pod, "UID");
    } else if (const json* metadata = FindGoField(pod, "metadata"); metadata != nullptr) {
      uid = FindGoField(*metadata, "uid");
    }
    if (!pod.is_object() || uid == nullptr || !uid->is_string()) {
      return Invalid("ExtenderPreemptionArgs: " + where + ".Pods[" + std::to_string(i) +
                     "] has no " + (meta ? "UID" : "metadata.uid"));
    }
    victims.pod_uids.push_back(uid->get<std::string>());
  }
  return victims;
}

void AppendFailedMap(std::string& out,
                     const std::vector<const std::pair<const std::string, Rejection>*>& entries,
                     bool null_when_empty) {
  if (entries.empty() && null_when_empty) {
    out += "null";
    return;
  }
  out += '{';
  bool first = true;
  for (const auto* entry : entries) {
    if (!first) out += ',';
    first = false;
    AppendJsonString(out, entry->first);
    out += ':';
    AppendJsonString(out, entry->second.reason);
  }
  out += '}';
}

}  // namespace

const nlohmann::json* FindGoField(const nlohmann::json& object, std::string_view key) {
  return FindIn(object, key);
}

Result<ExtenderArgs> DecodeExtenderArgs(std::string_view body) {
  if (!WithinDepth(body, kMaxJsonDepth)) return ParseObject(body, "ExtenderArgs").error();
  if (internal::ArgsDocument fast; internal::ParseArgsFast(body, fast)) {
    ExtenderArgs args;
    POWERCTL_TRY(pod, TakePod(fast.root, "ExtenderArgs"));
    args.pod = std::move(pod);
    if (fast.names_present) {
      args.mode = NodesMode::kNodeNames;
      args.node_names = std::move(fast.names);
    } else if (json* nodes = FindMutable(fast.root, "Nodes");
               nodes != nullptr && !nodes->is_null()) {
      args.mode = NodesMode::kNodes;
      POWERCTL_CHECK_OK(ReadNodes(*nodes, args));
    }
    return args;
  }
  // Malformed or unusual bodies: the general decoder words the error.
  POWERCTL_TRY(root, ParseObject(body, "ExtenderArgs"));
  ExtenderArgs args;
  POWERCTL_TRY(pod, TakePod(root, "ExtenderArgs"));
  args.pod = std::move(pod);
  json* names = FindMutable(root, "NodeNames");
  json* nodes = FindMutable(root, "Nodes");
  if (names != nullptr && !names->is_null()) {
    args.mode = NodesMode::kNodeNames;
    POWERCTL_CHECK_OK(ReadNodeNames(*names, args));
  } else if (nodes != nullptr && !nodes->is_null()) {
    args.mode = NodesMode::kNodes;
    POWERCTL_CHECK_OK(ReadNodes(*nodes, args));
  }
  return args;
}

Result<PreemptionArgs> DecodePreemptionArgs(std::string_view body) {
  POWERCTL_TRY(root, ParseObject(body, "ExtenderPreemptionArgs"));
  PreemptionArgs args;
  POWERCTL_TRY(pod, TakePod(root, "ExtenderPreemptionArgs"));
  args.pod = std::move(pod);
  const json* map = FindGoField(root, "NodeNameToMetaVictims");
  args.meta = true;
  if (map == nullptr || map->is_null()) {
    const json* full = FindGoField(root, "NodeNameToVictims");
    if (full != nullptr && !full->is_null()) {
      map = full;
      args.meta = false;
    }
  }
  if (map == nullptr || map->is_null()) return args;
  if (!map->is_object()) {
    return Invalid(std::string("ExtenderPreemptionArgs: ") +
                   (args.meta ? "NodeNameToMetaVictims" : "NodeNameToVictims") +
                   " is not an object");
  }
  for (auto it = map->begin(); it != map->end(); ++it) {
    POWERCTL_TRY(victims, ReadVictims(it.value(), args.meta, it.key()));
    args.node_victims.emplace(it.key(), std::move(victims));
  }
  return args;
}

std::string EncodeFilterResult(const ExtenderArgs& args, const FilterAnswer& answer) {
  std::string out;
  out.reserve(64 + args.node_names.size() * 24);
  std::vector<const std::pair<const std::string, Rejection>*> failed;
  std::vector<const std::pair<const std::string, Rejection>*> unresolvable;
  std::set<std::string_view> seen;  // a candidate listed twice is answered once
  std::vector<std::size_t> passing;
  for (std::size_t i = 0; i < args.node_names.size(); ++i) {
    const std::string& name = args.node_names[i];
    auto rejected = answer.rejected.find(name);
    if (rejected == answer.rejected.end()) {
      passing.push_back(i);
    } else if (seen.insert(name).second) {
      failed.push_back(&*rejected);
      if (rejected->second.unresolvable) unresolvable.push_back(&*rejected);
    }
  }
  std::sort(failed.begin(), failed.end(), [](auto* a, auto* b) { return a->first < b->first; });
  std::sort(unresolvable.begin(), unresolvable.end(),
            [](auto* a, auto* b) { return a->first < b->first; });

  const bool node_list = args.mode == NodesMode::kNodes;
  out += node_list ? R"({"Nodes":{"metadata":{},"items":[)" : R"({"Nodes":null,"NodeNames":[)";
  for (std::size_t k = 0; k < passing.size(); ++k) {
    if (k > 0) out += ',';
    if (node_list) {
      out += args.node_items[passing[k]].dump(-1, ' ', false, json::error_handler_t::replace);
    } else {
      AppendJsonString(out, args.node_names[passing[k]]);
    }
  }
  out += node_list ? R"(]},"NodeNames":null,"FailedNodes":)" : R"(],"FailedNodes":)";
  AppendFailedMap(out, failed, /*null_when_empty=*/false);
  out += R"(,"FailedAndUnresolvableNodes":)";
  AppendFailedMap(out, unresolvable, /*null_when_empty=*/true);
  out += R"(,"Error":)";
  AppendJsonString(out, answer.error);
  out += '}';
  return out;
}

std::string EncodeFilterError(std::string_view message) {
  std::string out = R"({"Nodes":null,"NodeNames":null,"FailedNodes":null,)"
                    R"("FailedAndUnresolvableNodes":null,"Error":)";
  AppendJsonString(out, message);
  out += '}';
  return out;
}

std::string EncodeHostPriorityList(const std::vector<HostPriority>& list) {
  // One entry per node of every prioritize: a plain name and its score are written into a
  // buffer and appended at once (appending piece by piece was most of the cost).
  static constexpr std::string_view kHost = R"({"Host":")";
  static constexpr std::string_view kScore = R"(","Score":)";
  std::string out = "[";
  std::size_t names = 0;
  for (const HostPriority& h : list) names += h.host.size();
  out.reserve(2 + names + list.size() * (kHost.size() + kScore.size() + 8));
  char entry[128];
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string_view host = list[i].host;
    const std::int64_t score =
        std::clamp(list[i].score, kMinExtenderPriority, kMaxExtenderPriority);
    const bool plain = FindJsonStringSpecial(host, 0, /*ascii_only=*/true) == host.size();
    if (plain && host.size() <= sizeof entry - kHost.size() - kScore.size() - 24) {
      char* p = entry;
      if (i > 0) *p++ = ',';
      p = std::copy(kHost.begin(), kHost.end(), p);
      p = std::copy(host.begin(), host.end(), p);
      p = std::copy(kScore.begin(), kScore.end(), p);
      p = std::to_chars(p, entry + sizeof entry - 1, score).ptr;
      *p++ = '}';
      out.append(entry, p);
      continue;
    }
    if (i > 0) out += ',';
    out += R"({"Host":)";
    AppendJsonString(out, host);
    out += R"(,"Score":)";
    char digits[24];
    auto [end, ec] = std::to_chars(digits, digits + sizeof digits, score);
    out.append(digits, ec == std::errc() ? end : digits);
    out += '}';
  }
  out += ']';
  return out;
}

std::string EncodePreemptionResult(const PreemptionArgs& args,
                                   const std::map<std::string, Rejection>& rejected) {
  std::string out = R"({"NodeNameToMetaVictims":{)";
  bool first = true;
  for (const auto& [node, victims] : args.node_victims) {
    if (victims.pod_uids.empty() || rejected.count(node) > 0) continue;
    if (!first) out += ',';
    first = false;
    AppendJsonString(out, node);
    out += R"(:{"Pods":[)";
    for (std::size_t i = 0; i < victims.pod_uids.size(); ++i) {
      if (i > 0) out += ',';
      out += R"({"UID":)";
      AppendJsonString(out, victims.pod_uids[i]);
      out += '}';
    }
    out += R"(],"NumPDBViolations":)";
    out += std::to_string(victims.num_pdb_violations);
    out += '}';
  }
  out += "}}";
  return out;
}

}  // namespace powerctl::extender
