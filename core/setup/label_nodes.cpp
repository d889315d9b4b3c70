#include "core/setup/label_nodes.h"

#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "core/common/names.h"
#include "core/kube/resources.h"
#include "core/setup/access.h"

namespace powerctl::setup {
namespace {

using json = nlohmann::json;

Error Invalid(const std::string& message) { return MakeError(ErrorCode::kInvalidInput, message); }

Result<double> ParseNumber(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(value)) {
    return Invalid(fmt::format("{}: \"{}\" is not a number", flag, text));
  }
  return value;
}

Status AddRange(std::map<std::string, std::string>& labels, const std::string& flag, const std::string& text,
                const char* min_key, const char* max_key) {
  std::size_t colon = text.find(':');
  if (colon == std::string::npos) return Invalid(fmt::format("{} {}: expected MIN:MAX, e.g. 18:35", flag, text));
  std::string min_text = text.substr(0, colon);
  std::string max_text = text.substr(colon + 1);
  POWERCTL_TRY(min, ParseNumber(flag, min_text));
  POWERCTL_TRY(max, ParseNumber(flag, max_text));
  if (!(max > min)) {
    return Invalid(fmt::format("{} {}: the maximum must be greater than the minimum", flag, text));
  }
  if (min < -50 || max > 150) {
    return Invalid(fmt::format("{} {}: outside -50..150 degrees Celsius", flag, text));
  }
  for (const std::string& v : {min_text, max_text}) {
    if (std::string why = ValidateLabelValue(v); !why.empty()) {
      return Invalid(fmt::format("{} {}: \"{}\" is not a valid label value ({}); negative temperatures cannot be "
                                 "stored in labels",
                                 flag, text, v, why));
    }
  }
  labels[min_key] = min_text;
  labels[max_key] = max_text;
  return OkStatus();
}

Status AddValue(std::map<std::string, std::string>& labels, const std::string& flag,
                const std::optional<std::string>& value, const char* key) {
  if (!value) return OkStatus();
  if (value->empty()) return Invalid(fmt::format("{}: must not be empty", flag));
  if (std::string why = ValidateLabelValue(*value); !why.empty()) {
    return Invalid(fmt::format("{} {}: not a valid label value ({})", flag, *value, why));
  }
  labels[key] = *value;
  return OkStatus();
}

Result<std::vector<json>> SelectNodes(kube::Client& client, const LabelNodesRequest& request) {
  std::string collection = kube::CollectionPath(*kube::FindResourceType("Node"), "");
  if (!request.nodes.empty()) {
    std::vector<json> nodes;
    std::vector<std::string> missing;
    for (const std::string& name : request.nodes) {
      auto node = client.Get(collection + "/" + name);
      if (node.ok()) {
        nodes.push_back(*node);
      } else if (node.error().code == ErrorCode::kNotFound) {
        missing.push_back(name);
      } else {
        return node.error();
      }
    }
    if (!missing.empty()) {
      return MakeError(ErrorCode::kNotFound,
                       fmt::format("node{} not found: {}; no node was changed", missing.size() == 1 ? "" : "s",
                                   fmt::join(missing, ", ")));
    }
    return nodes;
  }
  kube::ListOptions options;
  options.label_selector = request.selector;
  POWERCTL_TRY(nodes, client.List(collection, options));
  if (nodes.empty()) {
    return MakeError(ErrorCode::kNotFound,
                     request.all ? "the cluster has no nodes" : "no node matches -l " + request.selector);
  }
  return nodes;
}

}  // namespace

Result<std::map<std::string, std::string>> DesiredNodeLabels(const LabelNodesRequest& request) {
  int ways = (!request.nodes.empty() ? 1 : 0) + (!request.selector.empty() ? 1 : 0) + (request.all ? 1 : 0);
  if (ways != 1) return Invalid("name the nodes, or give -l SELECTOR, or --all (exactly one of them)");
  std::map<std::string, std::string> labels;
  if (request.ambient) POWERCTL_CHECK_OK(AddRange(labels, "--ambient", *request.ambient, kAmbientMin, kAmbientMax));
  if (request.cpu1) POWERCTL_CHECK_OK(AddRange(labels, "--cpu1", *request.cpu1, kCpu1Min, kCpu1Max));
  if (request.cpu2) POWERCTL_CHECK_OK(AddRange(labels, "--cpu2", *request.cpu2, kCpu2Min, kCpu2Max));
  POWERCTL_CHECK_OK(AddValue(labels, "--model-host", request.model_host, kModelHost));
  if (request.model_port) {
    char* end = nullptr;
    long port = std::strtol(request.model_port->c_str(), &end, 10);
    if (request.model_port->empty() || *end != '\0' || port < 1 || port > 65535) {
      return Invalid(fmt::format("--model-port {}: must be a port number 1-65535", *request.model_port));
    }
  }
  POWERCTL_CHECK_OK(AddValue(labels, "--model-port", request.model_port, kModelPort));
  POWERCTL_CHECK_OK(AddValue(labels, "--model-name", request.model_name, kModelName));
  POWERCTL_CHECK_OK(AddValue(labels, "--model-version", request.model_version, kModelVersion));
  POWERCTL_CHECK_OK(AddValue(labels, "--model-signature", request.model_signature, kModelSignature));
  if (labels.empty()) {
    return Invalid("nothing to set: give --ambient, --cpu1, --cpu2 and/or --model-host/--model-port/--model-name");
  }
  return labels;
}

Result<std::vector<NodeLabelResult>> LabelNodes(kube::Client& client, const LabelNodesRequest& request) {
  POWERCTL_TRY(labels, DesiredNodeLabels(request));
  POWERCTL_TRY(nodes, SelectNodes(client, request));

  std::vector<NodeLabelResult> results;
  std::vector<std::string> conflicts;
  for (const json& node : nodes) {
    NodeLabelResult r{node["metadata"].value("name", ""), false, {}};
    json current = node["metadata"].value("labels", json::object());
    for (const auto& [key, value] : labels) {
      if (!current.contains(key)) {
        r.keys_changed.push_back(key);
      } else if (current[key] != value) {
        if (!request.overwrite) {
          conflicts.push_back(fmt::format("node/{}: {} is {} (want {})", r.node, key, current[key].get<std::string>(),
                                          value));
        }
        r.keys_changed.push_back(key);
      }
    }
    r.changed = !r.keys_changed.empty();
    results.push_back(std::move(r));
  }
  if (!conflicts.empty()) {
    return MakeError(ErrorCode::kConflict, fmt::format("{}; use --overwrite to change existing values (no node was "
                                                       "changed)",
                                                       fmt::join(conflicts, "; ")));
  }
  POWERCTL_TRY(missing, MissingPermissions(client, {{"patch", "", "nodes", "", ""}}));
  if (!missing.empty()) return PermissionError("label nodes", missing);
  if (request.dry_run == DryRunMode::kClient) return results;

  json patch = {{"metadata", {{"labels", json::object()}}}};
  for (const auto& [key, value] : labels) patch["metadata"]["labels"][key] = value;
  std::string collection = kube::CollectionPath(*kube::FindResourceType("Node"), "");
  for (const NodeLabelResult& r : results) {
    if (!r.changed) continue;
    auto patched = client.MergePatch(collection + "/" + r.node, patch, request.dry_run == DryRunMode::kServer);
    if (!patched.ok()) return WithContext(patched.error(), "labelling node/" + r.node);
  }
  return results;
}

}  // namespace powerctl::setup
