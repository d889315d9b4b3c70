#include "core/scoring/prepared_nodes.h"

#include <algorithm>
#include <unordered_set>

namespace powerctl::scoring {
namespace {

// Entries of nodes that left the cluster are dropped when the cache holds this many more
// entries than the cluster has nodes. (Requests often carry a subset of the nodes, so the
// request's size is no measure.)
constexpr std::size_t kSlack = 1024;

}  // namespace

telemetry::NodeReading ReadingForNode(const NodeSource& node,
                                      const telemetry::TelemetryView* view) {
  telemetry::NodeReading reading;
  if (view != nullptr) {
    reading = view->For(node.facts->name);
  } else {
    reading.node = node.facts->name;
    reading.cpu_cores_used = telemetry::MissingReading("no telemetry configured");
  }
  if (!reading.cpu_capacity) reading.cpu_capacity = node.cpu_allocatable;
  return reading;
}

std::vector<PreparedPtr> PreparedNodeCache::Prepare(const std::vector<NodeSource>& nodes,
                                                    const telemetry::TelemetryView* view,
                                                    const manifests::PowerctlConfig& config,
                                                    std::size_t cluster_nodes,
                                                    std::size_t* prepared) {
  const telemetry::SteadyTime now = view != nullptr ? view->Now() : telemetry::SteadyTime{};
  const std::uint64_t generation = view != nullptr ? view->Generation() : 0;
  auto prepare = [&](const NodeSource& node) {
    telemetry::NodeReading reading = ReadingForNode(node, view);
    telemetry::SteadyTime stale_at =
        view != nullptr ? view->StaleAt(reading) : telemetry::SteadyTime::max();
    auto node_inputs = std::make_shared<const predict::PreparedNode>(
        predict::PrepareNode(*node.facts, std::move(reading), config, now));
    return std::pair{node_inputs, stale_at};
  };

  std::vector<PreparedPtr> out(nodes.size());
  // One lock for the batch: concurrent requests would prepare the same nodes anyway.
  std::lock_guard lock(mu_);
  const std::size_t before = prepared_count_;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const NodeSource& node = nodes[i];
    if (node.owner == nullptr) {
      out[i] = prepare(node).first;
      ++prepared_count_;
      continue;
    }
    Entry& entry = entries_[node.facts->name];
    if (entry.prepared == nullptr || entry.owner != node.owner || entry.generation != generation ||
        now >= entry.stale_at) {
      auto [fresh, stale_at] = prepare(node);
      entry = Entry{node.owner, generation, stale_at, std::move(fresh)};
      ++prepared_count_;
    }
    out[i] = entry.prepared;
  }
  if (prepared != nullptr) *prepared = prepared_count_ - before;
  if (entries_.size() > std::max(cluster_nodes, nodes.size()) + kSlack) {
    std::unordered_set<std::string_view> wanted;
    for (const NodeSource& node : nodes) wanted.insert(node.facts->name);
    std::erase_if(entries_, [&](const auto& item) { return !wanted.contains(item.first); });
  }
  return out;
}

std::size_t PreparedNodeCache::size() const {
  std::lock_guard lock(mu_);
  return entries_.size();
}

std::size_t PreparedNodeCache::prepared_count() const {
  std::lock_guard lock(mu_);
  return prepared_count_;
}

}  // namespace powerctl::scoring
