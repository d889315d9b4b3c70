#pragma once
// Which Kubernetes node a Prometheus series belongs to. Series name their origin by scrape
// target ("instance": "10.0.0.5:9100", "node-a:9100", "[fd00::5]:9100") or, when
// kubernetes_sd relabelling copied it, by node name in a label such as "node". The rules,
// in order, for each series:
//   1. the first of `node_labels` that is present and equals a node's name;
//   2. the instance with its port removed, equal to a node's name;
//   3. ... equal to one of a node's InternalIP addresses;
//   4. ... equal to one of a node's Hostname addresses;
//   5. ... whose first DNS label ("node-a" of "node-a.example.com") equals a node's name.
// An address or hostname shared by two nodes maps to neither (it cannot say which), so a
// wrong node never gets another node's numbers.

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace powerctl::telemetry {

struct NodeInfo {
  std::string name;
  std::vector<std::string> internal_ips;  // status.addresses of type InternalIP, in order
  std::vector<std::string> hostnames;     // status.addresses of type Hostname
  std::optional<double> cpu_capacity;     // status.capacity.cpu in cores
};

// From a v1 Node object; fields that are absent or malformed stay empty.
NodeInfo NodeInfoFromJson(const nlohmann::json& node);

struct NodeMappingOptions {
  std::vector<std::string> node_labels{"node", "kubernetes_node", "nodename"};
  std::string instance_label = "instance";

  // "instance, node, kubernetes_node, nodename": a PromQL `by` list that keeps every label Map
  // reads, so a sum or average never drops what maps its series to a node.
  std::string GroupBy() const {
    std::string labels = instance_label;
    for (const std::string& l : node_labels) labels += ", " + l;
    return labels;
  }

  // The same with `labels` also read as node names (an exporter's own node label), each once.
  NodeMappingOptions WithNodeLabels(std::initializer_list<const char*> labels) const {
    NodeMappingOptions out = *this;
    for (const char* label : labels) {
      if (std::find(out.node_labels.begin(), out.node_labels.end(), label) ==
          out.node_labels.end()) {
        out.node_labels.push_back(label);
      }
    }
    return out;
  }

  // Every label Map reads, plus `extra` (for PrometheusClient::Query's KeepLabels).
  std::vector<std::string> LabelsRead(std::vector<std::string> extra = {}) const {
    extra.insert(extra.end(), node_labels.begin(), node_labels.end());
    extra.push_back(instance_label);
    return extra;
  }
};

// The host of an instance label: "10.0.0.5:9100" -> "10.0.0.5", "[fd00::5]:9100" ->
// "fd00::5", "fd00::5" (bare IPv6) and "node-a" unchanged.
std::string InstanceHost(std::string_view instance);

class NodeNameMapper {
 public:
  NodeNameMapper(const std::vector<NodeInfo>& nodes, NodeMappingOptions options = {});

  // The node name for a series' labels, or nullopt when no rule matches.
  std::optional<std::string> Map(const std::map<std::string, std::string>& labels) const;
  // The same node as its position in the list the mapper was built from (no string made).
  std::optional<std::size_t> MapPosition(const std::map<std::string, std::string>& labels) const;

 private:
  // A piece of text_: a lower-case key, or a node's name as the Node has it.
  struct Span {
    std::uint32_t offset = 0;
    std::uint32_t length = 0;
  };
  // A key and the node it names (a position in names_), or kAmbiguous when two nodes claim it.
  struct Key {
    Span key;
    std::uint32_t node = 0;
  };
  static constexpr std::uint32_t kAmbiguous = static_cast<std::uint32_t>(-1);
  using Index = std::vector<Key>;  // sorted by key, one entry per key

  std::string_view Text(Span span) const { return {text_.data() + span.offset, span.length}; }
  Span Store(std::string_view text, bool lower);
  void Claim(Index& index, std::string_view key, std::uint32_t node);
  void Finish(Index& index) const;  // sorts and merges the keys claimed twice
  std::optional<std::uint32_t> Lookup(const Index& index, std::string_view key) const;

  NodeMappingOptions options_;
  // Every name and key in one block: a refresh builds a mapper for 5,000 nodes (three keys
  // each), and a map of strings per key was 3.5 MiB of the refresh's peak; this is a tenth.
  std::string text_;
  std::vector<Span> names_;  // by position
  Index by_name_;            // lower-case name -> node
  Index by_address_;         // InternalIP -> node
  Index by_hostname_;        // Hostname -> node
};

}  // namespace powerctl::telemetry
