#include "core/telemetry/node_mapping.h"

#include "core/telemetry/quantity.h"

#include <algorithm>
#include <cctype>
#include <utility>

namespace powerctl::telemetry {
namespace {

using json = nlohmann::json;

std::string Lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// Hostnames compare case-insensitively (DNS); "" marks a key claimed by two nodes.
void Claim(std::map<std::string, std::string>& index, const std::string& key,
           const std::string& node) {
  if (key.empty()) return;
  auto [it, inserted] = index.emplace(Lower(key), node);
  if (!inserted && it->second != node) it->second.clear();
}

}  // namespace

NodeInfo NodeInfoFromJson(const json& node) {
  NodeInfo info;
  if (!node.is_object()) return info;
  auto metadata = node.find("metadata");
  if (metadata != node.end() && metadata->is_object()) {
    auto name = metadata->find("name");
    if (name != metadata->end() && name->is_string()) info.name = name->get<std::string>();
  }
  auto status = node.find("status");
  if (status == node.end() || !status->is_object()) return info;
  if (auto addresses = status->find("addresses");
      addresses != status->end() && addresses->is_array()) {
    for (const json& address : *addresses) {
      if (!address.is_object()) continue;
      auto type = address.find("type");
      auto value = address.find("address");
      if (type == address.end() || value == address.end() || !type->is_string() ||
          !value->is_string()) {
        continue;
      }
      if (*type == "InternalIP") info.internal_ips.push_back(value->get<std::string>());
      if (*type == "Hostname") info.hostnames.push_back(value->get<std::string>());
    }
  }
  if (auto capacity = status->find("capacity");
      capacity != status->end() && capacity->is_object()) {
    auto cpu = capacity->find("cpu");
    if (cpu != capacity->end() && cpu->is_string()) {
      if (Result<double> cores = ParseCpuCores(cpu->get<std::string>()); cores.ok()) {
        info.cpu_capacity = *cores;
      }
    }
  }
  return info;
}

std::string InstanceHost(std::string_view instance) {
  if (!instance.empty() && instance.front() == '[') {
    std::size_t close = instance.find(']');
    if (close != std::string_view::npos) return std::string(instance.substr(1, close - 1));
  }
  std::size_t colon = instance.rfind(':');
  // More than one ':' without brackets is a bare IPv6 address, not host:port.
  if (colon == std::string_view::npos || instance.find(':') != colon) return std::string(instance);
  std::string_view port = instance.substr(colon + 1);
  bool numeric = !port.empty() && std::all_of(port.begin(), port.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c));
  });
  return std::string(numeric ? instance.substr(0, colon) : instance);
}

NodeNameMapper::NodeNameMapper(const std::vector<NodeInfo>& nodes, NodeMappingOptions options)
    : options_(std::move(options)) {
  for (const NodeInfo& node : nodes) {
    if (node.name.empty()) continue;
    Claim(names_, node.name, node.name);
    for (const std::string& ip : node.internal_ips) Claim(addresses_, ip, node.name);
    for (const std::string& host : node.hostnames) Claim(hostnames_, host, node.name);
  }
}

std::optional<std::string> NodeNameMapper::Lookup(const std::map<std::string, std::string>& index,
                                                  const std::string& key) const {
  auto it = index.find(Lower(key));
  if (it == index.end() || it->second.empty()) return std::nullopt;
  return it->second;
}

std::optional<std::string> NodeNameMapper::Map(
    const std::map<std::string, std::string>& labels) const {
  for (const std::string& label : options_.node_labels) {
    auto it = labels.find(label);
    if (it == labels.end()) continue;
    if (auto node = Lookup(names_, it->second)) return node;
  }
  auto instance = labels.find(options_.instance_label);
  if (instance == labels.end() || instance->second.empty()) return std::nullopt;
  std::string host = InstanceHost(instance->second);
  if (auto node = Lookup(names_, host)) return node;
  if (auto node = Lookup(addresses_, host)) return node;
  if (auto node = Lookup(hostnames_, host)) return node;
  // An IPv4 address has dots too, but its first part is no host name.
  bool ipv4 = std::all_of(host.begin(), host.end(), [](char c) {
    return c == '.' || std::isdigit(static_cast<unsigned char>(c));
  });
  std::size_t dot = host.find('.');
  if (ipv4 || dot == std::string::npos || dot == 0) return std::nullopt;
  return Lookup(names_, host.substr(0, dot));
}

}  // namespace powerctl::telemetry
