#include "core/simulate/snapshot.h"

#include "core/common/yaml.h"
#include "core/kube/quantity.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <vector>

namespace powerctl::simulate {
namespace {

using ojson = nlohmann::ordered_json;

Error InvalidSnapshot(std::string message) {
  return MakeError(ErrorCode::kInvalidInput, std::move(message));
}

// A Kubernetes quantity given as a YAML number or string.
Result<double> Quantity(const ojson& value, bool cpu, const std::string& what) {
  std::string text;
  if (value.is_number()) {
    text = fmt::format("{}", value.get<double>());
  } else if (value.is_string()) {
    text = value.get<std::string>();
  } else {
    return InvalidSnapshot(what + ": must be a quantity such as " +
                           (cpu ? "\"500m\" or 2" : "\"4Gi\""));
  }
  auto parsed = cpu ? kube::ParseCpuCores(text) : kube::ParseBytes(text);
  if (!parsed.ok() || !std::isfinite(*parsed) || *parsed < 0) {
    return InvalidSnapshot(what + ": \"" + text + "\" is not a valid quantity");
  }
  return *parsed;
}

Result<std::map<std::string, std::string>> StringMap(const ojson& value, const std::string& what) {
  std::map<std::string, std::string> out;
  if (value.is_null()) return out;
  if (!value.is_object()) return InvalidSnapshot(what + ": must be a mapping of strings");
  for (const auto& [key, v] : value.items()) {
    if (v.is_string()) {
      out[key] = v.get<std::string>();
    } else if (v.is_number() || v.is_boolean()) {
      out[key] = v.dump();  // `ambient/max: 36.5` means the label value "36.5"
    } else {
      return InvalidSnapshot(what + "." + key + ": must be a string");
    }
  }
  return out;
}

Result<std::optional<double>> OptionalNumber(const ojson& object, const char* key,
                                             const std::string& what) {
  if (!object.contains(key) || object[key].is_null()) return std::optional<double>();
  if (!object[key].is_number() || !std::isfinite(object[key].get<double>())) {
    return InvalidSnapshot(what + "." + key + ": must be a number");
  }
  return std::optional<double>(object[key].get<double>());
}

Result<SimNode> ParseNode(const ojson& entry, const std::string& where) {
  if (!entry.is_object()) return InvalidSnapshot(where + ": must be a mapping");
  static const std::set<std::string> kKnown = {
      "name",        "cpu",          "memory",     "pods",    "labels",
      "annotations", "temperatures", "powerCurve", "cpuUsed", "existingPods"};
  for (const auto& [key, v] : entry.items()) {
    if (kKnown.count(key) == 0) return InvalidSnapshot(where + ": unknown field \"" + key + "\"");
  }
  SimNode node;
  if (!entry.contains("name") || !entry["name"].is_string() ||
      entry["name"].get<std::string>().empty())
    return InvalidSnapshot(where + ": name: required");
  node.name = entry["name"].get<std::string>();
  std::string what = where + ": node \"" + node.name + "\"";
  if (!entry.contains("cpu")) return InvalidSnapshot(what + ": cpu: required (allocatable cores)");
  POWERCTL_TRY(cpu, Quantity(entry["cpu"], true, what + ": cpu"));
  if (cpu <= 0) return InvalidSnapshot(what + ": cpu: must be more than 0");
  node.cpu_cores = cpu;
  if (!entry.contains("memory"))
    return InvalidSnapshot(what + ": memory: required (allocatable bytes)");
  POWERCTL_TRY(memory, Quantity(entry["memory"], false, what + ": memory"));
  if (memory <= 0) return InvalidSnapshot(what + ": memory: must be more than 0");
  node.memory_bytes = memory;
  if (entry.contains("pods")) {
    if (!entry["pods"].is_number_integer() || entry["pods"].get<int>() < 1)
      return InvalidSnapshot(what + ": pods: must be a whole number of at least 1");
    node.max_pods = entry["pods"].get<int>();
  }
  POWERCTL_TRY(labels, StringMap(entry.value("labels", ojson()), what + ": labels"));
  node.labels = std::move(labels);
  POWERCTL_TRY(annotations, StringMap(entry.value("annotations", ojson()), what + ": annotations"));
  node.annotations = std::move(annotations);
  if (entry.contains("temperatures")) {
    const ojson& t = entry["temperatures"];
    if (!t.is_object()) return InvalidSnapshot(what + ": temperatures: must be a mapping");
    std::string tw = what + ": temperatures";
    POWERCTL_TRY(ambient, OptionalNumber(t, "ambient", tw));
    POWERCTL_TRY(cpu1, OptionalNumber(t, "cpu1", tw));
    POWERCTL_TRY(cpu2, OptionalNumber(t, "cpu2", tw));
    node.ambient = ambient;
    node.cpu1 = cpu1;
    node.cpu2 = cpu2;
  }
  if (entry.contains("powerCurve")) {
    const ojson& curve = entry["powerCurve"];
    if (!curve.is_array() || curve.size() != kCurvePoints)
      return InvalidSnapshot(what + ": powerCurve: must list 11 watts (0%, 10%, ..., 100% load)");
    double previous = -1;
    for (const ojson& w : curve) {
      if (!w.is_number() || !std::isfinite(w.get<double>()) || w.get<double>() < 0)
        return InvalidSnapshot(what + ": powerCurve: every value must be a number of watts >= 0");
      if (w.get<double>() < previous)
        return InvalidSnapshot(what + ": powerCurve: watts must not fall as load rises");
      previous = w.get<double>();
      node.power_curve.push_back(previous);
    }
    if (node.power_curve.back() <= node.power_curve.front())
      return InvalidSnapshot(what + ": powerCurve: watts at 100% must exceed watts at 0%");
  }
  POWERCTL_TRY(used, OptionalNumber(entry, "cpuUsed", what));
  if (used && (*used < 0 || *used > node.cpu_cores))
    return InvalidSnapshot(what + ": cpuUsed: must be between 0 and cpu");
  node.cpu_used = used;
  if (entry.contains("existingPods")) {
    const ojson& pods = entry["existingPods"];
    if (!pods.is_array()) return InvalidSnapshot(what + ": existingPods: must be a list");
    for (std::size_t i = 0; i < pods.size(); ++i) {
      POWERCTL_TRY(pod, ParsePodShorthand(nlohmann::json::parse(pods[i].dump()),
                                          what + ": existingPods[" + std::to_string(i) + "]"));
      node.pods.push_back(std::move(pod));
    }
  }
  return node;
}

nlohmann::json Resources(const nlohmann::json& c, const std::string& where, std::string* error) {
  nlohmann::json requests = nlohmann::json::object();
  for (const char* key : {"cpu", "memory"}) {
    if (!c.contains(key)) continue;
    const nlohmann::json& v = c[key];
    if (v.is_number()) {
      requests[key] = fmt::format("{}", v.get<double>());
    } else if (v.is_string()) {
      requests[key] = v.get<std::string>();
    } else {
      *error = where + ": " + key + ": must be a quantity";
      return {};
    }
    bool cpu = std::string_view(key) == "cpu";
    auto parsed = cpu ? kube::ParseCpuCores(requests[key].get<std::string>())
                      : kube::ParseBytes(requests[key].get<std::string>());
    if (!parsed.ok() || *parsed < 0) {
      *error = where + ": " + key + ": \"" + requests[key].get<std::string>() +
               "\" is not a valid quantity";
      return {};
    }
  }
  return {{"requests", requests}};
}

}  // namespace

Result<SimPod> ParsePodShorthand(const nlohmann::json& entry, const std::string& where) {
  if (!entry.is_object()) return InvalidSnapshot(where + ": must be a mapping");
  SimPod pod;
  pod.name = entry.value("name", "");
  if (pod.name.empty()) return InvalidSnapshot(where + ": name: required");
  std::string what = where + " (" + pod.name + ")";
  nlohmann::json containers = nlohmann::json::array();
  std::string error;
  if (entry.contains("containers")) {
    if (!entry["containers"].is_array() || entry["containers"].empty())
      return InvalidSnapshot(what + ": containers: must be a non-empty list");
    for (std::size_t i = 0; i < entry["containers"].size(); ++i) {
      const nlohmann::json& c = entry["containers"][i];
      if (!c.is_object())
        return InvalidSnapshot(what + ": containers[" + std::to_string(i) + "]: mapping");
      nlohmann::json r = Resources(c, what + ": containers[" + std::to_string(i) + "]", &error);
      if (!error.empty()) return InvalidSnapshot(error);
      containers.push_back(
          {{"name", c.value("name", "c" + std::to_string(i))}, {"resources", std::move(r)}});
    }
  } else {
    nlohmann::json r = Resources(entry, what, &error);
    if (!error.empty()) return InvalidSnapshot(error);
    containers.push_back({{"name", "main"}, {"resources", std::move(r)}});
  }
  const std::string name = pod.name;
  std::string ns = "simulated";
  if (entry.contains("namespace")) {
    if (!entry["namespace"].is_string() || entry["namespace"].get<std::string>().empty())
      return InvalidSnapshot(what + ": namespace: must be a name");
    ns = entry["namespace"].get<std::string>();
    pod.name = ns + "/" + name;
  }
  nlohmann::json metadata = {{"name", name}, {"namespace", ns}, {"uid", pod.name}};
  for (const char* key : {"labels", "annotations"}) {
    if (!entry.contains(key)) continue;
    POWERCTL_TRY(map, StringMap(ojson::parse(entry[key].dump()), what + ": " + key));
    metadata[key] = map;
  }
  if (entry.contains("owner")) {
    if (!entry["owner"].is_string() || entry["owner"].get<std::string>().empty())
      return InvalidSnapshot(what +
                             ": owner: must be the kind of the pod's controller, e.g. ReplicaSet");
    metadata["ownerReferences"] = nlohmann::json::array(
        {{{"kind", entry["owner"]}, {"name", name + "-owner"}, {"controller", true}}});
  }
  nlohmann::json spec = {{"containers", std::move(containers)}};
  if (entry.contains("volumes")) {
    const nlohmann::json& volumes = entry["volumes"];
    if (!volumes.is_array() || volumes.size() > 1000)
      return InvalidSnapshot(what + ": volumes: must be a list of at most 1000 volumes");
    for (const nlohmann::json& v : volumes)
      if (!v.is_object()) return InvalidSnapshot(what + ": volumes: each must be a mapping");
    spec["volumes"] = volumes;
  }
  pod.object = {{"apiVersion", "v1"},
                {"kind", "Pod"},
                {"metadata", std::move(metadata)},
                {"spec", std::move(spec)}};
  return pod;
}

int LineOf(std::string_view text, std::string_view needle) {
  std::size_t at = text.find(needle);
  if (at == std::string_view::npos) return 0;
  int line = 1;
  for (std::size_t i = 0; i < at; ++i) line += text[i] == '\n' ? 1 : 0;
  return line;
}

YamlLimits InputFileYamlLimits(std::size_t file_bytes) {
  YamlLimits limits;
  // Without aliases a YAML node takes at least two bytes of text ("a,"), and scalars are no
  // longer than the text: so a file within these limits is any file of this size, and an
  // alias-expanding one grows no larger than the text itself.
  limits.max_bytes = std::max(limits.max_bytes, file_bytes);
  limits.max_nodes = std::max(limits.max_nodes, file_bytes / 2);
  return limits;
}

Result<std::string> ReadInputFile(const std::string& path, std::string_view flag) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return MakeError(ErrorCode::kInvalidInput,
                     fmt::format("{} {}: cannot open the file", flag, path));
  }
  // In chunks, and no further than one chunk past the limit: a file too large (or a device
  // that never ends) is told without reading all of it.
  std::string text;
  std::vector<char> chunk(std::size_t{1} << 20);
  while (in && text.size() <= kMaxInputFileBytes) {
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    text.append(chunk.data(), static_cast<std::size_t>(in.gcount()));
  }
  if (in.bad()) {
    return MakeError(ErrorCode::kIo, fmt::format("{} {}: cannot read the file", flag, path));
  }
  if (text.size() > kMaxInputFileBytes) {
    return MakeError(ErrorCode::kInvalidInput,
                     fmt::format("{} {}: larger than {} MiB, the most powerctl reads", flag, path,
                                 kMaxInputFileBytes >> 20));
  }
  return text;
}

Result<Snapshot> ParseSnapshot(std::string_view text, std::string_view source_name) {
  const std::string source(source_name);
  POWERCTL_TRY(docs, ParseYamlDocuments(text, source_name, InputFileYamlLimits(text.size())));
  if (docs.size() != 1 || !docs[0].is_object())
    return InvalidSnapshot(source + ": must hold one ClusterSnapshot document");
  const ojson& doc = docs[0];
  if (doc.value("kind", "") != kSnapshotKind)
    return InvalidSnapshot(source + ": kind: must be " + std::string(kSnapshotKind));
  if (!doc.contains("nodes") || !doc["nodes"].is_array() || doc["nodes"].empty())
    return InvalidSnapshot(source + ": nodes: must be a non-empty list");
  Snapshot snapshot;
  snapshot.source = source;
  std::set<std::string> names;
  for (std::size_t i = 0; i < doc["nodes"].size(); ++i) {
    const ojson& entry = doc["nodes"][i];
    // The node's line is looked up only for an error: searching for it for every node made
    // reading a 5,000-node file quadratic in its size.
    auto where = [&] {
      std::string name = entry.is_object() ? entry.value("name", "") : "";
      int line = name.empty() ? 0 : LineOf(text, "name: " + name);
      return line > 0 ? fmt::format("{}:{}", source, line)
                      : fmt::format("{}: nodes[{}]", source, i);
    };
    auto node = ParseNode(entry, "");
    if (!node.ok()) return ParseNode(entry, where()).error();
    if (!names.insert(node->name).second)
      return InvalidSnapshot(where() + ": node \"" + node->name + "\" is listed twice");
    snapshot.nodes.push_back(std::move(*node));
  }
  if (doc.contains("podDisruptionBudgets")) {
    const ojson& budgets = doc["podDisruptionBudgets"];
    if (!budgets.is_array() || budgets.size() > 10000)
      return InvalidSnapshot(source +
                             ": podDisruptionBudgets: must be a list of at most 10000 objects");
    for (const ojson& b : budgets) {
      if (!b.is_object() || !b.contains("metadata"))
        return InvalidSnapshot(source +
                               ": podDisruptionBudgets: each must be an object with metadata");
      snapshot.disruption_budgets.push_back(nlohmann::json::parse(b.dump()));
    }
  }
  return snapshot;
}

Result<Snapshot> DemoSnapshot() {
  return ParseSnapshot(DemoSnapshotYaml(), "demo-snapshot.yaml");
}

ojson SnapshotDocument(const Snapshot& snapshot) {
  ojson doc = {{"apiVersion", kSnapshotApiVersion}, {"kind", kSnapshotKind}};
  ojson nodes = ojson::array();
  for (const SimNode& n : snapshot.nodes) {
    ojson node = {{"name", n.name},
                  {"cpu", fmt::format("{}m", std::llround(n.cpu_cores * 1000))},
                  {"memory", fmt::format("{}", std::llround(n.memory_bytes))},
                  {"pods", n.max_pods}};
    if (!n.labels.empty()) node["labels"] = n.labels;
    if (!n.annotations.empty()) node["annotations"] = n.annotations;
    ojson temps = ojson::object();
    if (n.ambient) temps["ambient"] = *n.ambient;
    if (n.cpu1) temps["cpu1"] = *n.cpu1;
    if (n.cpu2) temps["cpu2"] = *n.cpu2;
    if (!temps.empty()) node["temperatures"] = temps;
    if (!n.power_curve.empty()) node["powerCurve"] = n.power_curve;
    if (n.cpu_used) node["cpuUsed"] = *n.cpu_used;
    ojson pods = ojson::array();
    for (const SimPod& p : n.pods) {
      ojson containers = ojson::array();
      for (const auto& c : p.object["spec"]["containers"]) {
        ojson out = {{"name", c.value("name", "c")}};
        if (c.contains("resources") && c["resources"].contains("requests")) {
          for (const auto& [k, v] : c["resources"]["requests"].items())
            if (k == "cpu" || k == "memory") out[k] = v;
        }
        containers.push_back(std::move(out));
      }
      const nlohmann::json& meta = p.object["metadata"];
      ojson pod = {{"name", meta.value("name", p.name)}};
      if (meta.value("namespace", "simulated") != "simulated") pod["namespace"] = meta["namespace"];
      for (const char* key : {"labels", "annotations"})
        if (meta.contains(key) && !meta[key].empty()) pod[key] = ojson::parse(meta[key].dump());
      if (meta.contains("ownerReferences") && !meta["ownerReferences"].empty())
        pod["owner"] = meta["ownerReferences"][0].value("kind", "");
      pod["containers"] = std::move(containers);
      if (p.object["spec"].contains("volumes"))
        pod["volumes"] = ojson::parse(p.object["spec"]["volumes"].dump());
      pods.push_back(std::move(pod));
    }
    if (!pods.empty()) node["existingPods"] = std::move(pods);
    nodes.push_back(std::move(node));
  }
  doc["nodes"] = std::move(nodes);
  if (!snapshot.disruption_budgets.empty()) {
    ojson budgets = ojson::array();
    for (const nlohmann::json& b : snapshot.disruption_budgets)
      budgets.push_back(ojson::parse(b.dump()));
    doc["podDisruptionBudgets"] = std::move(budgets);
  }
  return doc;
}

}  // namespace powerctl::simulate
