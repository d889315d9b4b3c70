#include "core/telemetry/node_mapping.h"

#include "core/common/encoding.h"
#include "core/kube/quantity.h"

#include <algorithm>
#include <cctype>
#include <utility>

namespace powerctl::telemetry {
namespace {

using json = nlohmann::json;

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
      if (Result<double> cores = kube::ParseCpuCores(cpu->get<std::string>()); cores.ok()) {
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
  std::size_t bytes = 0;
  for (const NodeInfo& node : nodes) {
    bytes += 2 * node.name.size();
    for (const std::string& ip : node.internal_ips) bytes += ip.size();
    for (const std::string& host : node.hostnames) bytes += host.size();
  }
  text_.reserve(bytes);
  for (const NodeInfo& node : nodes) {
    // Every node has its span, so positions in names_ are positions in `nodes`.
    const auto position = static_cast<std::uint32_t>(names_.size());
    names_.push_back(Store(node.name, false));
    if (node.name.empty()) continue;
    Claim(by_name_, node.name, position);
    for (const std::string& ip : node.internal_ips) Claim(by_address_, ip, position);
    for (const std::string& host : node.hostnames) Claim(by_hostname_, host, position);
  }
  for (Index* index : {&by_name_, &by_address_, &by_hostname_}) Finish(*index);
}

NodeNameMapper::Span NodeNameMapper::Store(std::string_view text, bool lower) {
  Span span{static_cast<std::uint32_t>(text_.size()), static_cast<std::uint32_t>(text.size())};
  text_.append(text);
  if (lower) {
    std::transform(text_.begin() + span.offset, text_.end(), text_.begin() + span.offset,
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  }
  return span;
}

// Keys compare case-insensitively (DNS names).
void NodeNameMapper::Claim(Index& index, std::string_view key, std::uint32_t node) {
  if (key.empty()) return;
  index.push_back(Key{Store(key, true), node});
}

void NodeNameMapper::Finish(Index& index) const {
  std::stable_sort(index.begin(), index.end(),
                   [this](const Key& a, const Key& b) { return Text(a.key) < Text(b.key); });
  Index merged;
  merged.reserve(index.size());
  for (const Key& key : index) {
    if (!merged.empty() && Text(merged.back().key) == Text(key.key)) {
      // Claimed twice: by the same node (a repeated address) it still names it; by two, none.
      if (merged.back().node != key.node) merged.back().node = kAmbiguous;
      continue;
    }
    merged.push_back(key);
  }
  index.swap(merged);
}

std::optional<std::uint32_t> NodeNameMapper::Lookup(const Index& index,
                                                    std::string_view key) const {
  const std::string lower = AsciiLower(key);
  auto it = std::lower_bound(
      index.begin(), index.end(), lower,
      [this](const Key& entry, const std::string& wanted) { return Text(entry.key) < wanted; });
  if (it == index.end() || Text(it->key) != lower || it->node == kAmbiguous) return std::nullopt;
  return it->node;
}

std::optional<std::string> NodeNameMapper::Map(
    const std::map<std::string, std::string>& labels) const {
  std::optional<std::size_t> position = MapPosition(labels);
  if (!position) return std::nullopt;
  return std::string(Text(names_[*position]));
}

std::optional<std::size_t> NodeNameMapper::MapPosition(
    const std::map<std::string, std::string>& labels) const {
  for (const std::string& label : options_.node_labels) {
    auto it = labels.find(label);
    if (it == labels.end()) continue;
    if (auto node = Lookup(by_name_, it->second)) return node;
  }
  auto instance = labels.find(options_.instance_label);
  if (instance == labels.end() || instance->second.empty()) return std::nullopt;
  std::string host = InstanceHost(instance->second);
  if (auto node = Lookup(by_name_, host)) return node;
  if (auto node = Lookup(by_address_, host)) return node;
  if (auto node = Lookup(by_hostname_, host)) return node;
  // An IPv4 address has dots too, but its first part is no host name.
  bool ipv4 = std::all_of(host.begin(), host.end(), [](char c) {
    return c == '.' || std::isdigit(static_cast<unsigned char>(c));
  });
  std::size_t dot = host.find('.');
  if (ipv4 || dot == std::string::npos || dot == 0) return std::nullopt;
  return Lookup(by_name_, std::string_view(host).substr(0, dot));
}

}  // namespace powerctl::telemetry
