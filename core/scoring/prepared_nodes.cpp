#include "core/scoring/prepared_nodes.h"

#include <algorithm>
#include <unordered_set>

namespace powerctl::scoring {
namespace {

// Entries of nodes that left the cluster are dropped when the cache holds this many more
// entries than the cluster has nodes. (Requests often carry a subset of the nodes, so the
// request's size is no measure.)
constexpr std::size_t kSlack = 1024;
// Below this many nodes per chunk, starting a thread costs more than it saves.
constexpr std::size_t kNodesPerChunk = 1024;

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

PreparedNodeCache::Shard& PreparedNodeCache::ShardOf(const std::string& name) {
  return shards_[std::hash<std::string>{}(name) % kShards];
}

std::vector<PreparedPtr> PreparedNodeCache::Prepare(const std::vector<NodeSource>& nodes,
                                                    const telemetry::TelemetryView* view,
                                                    const manifests::PowerctlConfig& config,
                                                    std::size_t cluster_nodes,
                                                    std::size_t* prepared, WorkerPool* pool) {
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
  std::atomic<std::size_t> misses{0};
  auto run = [&](std::size_t begin, std::size_t end) {
    std::size_t chunk_misses = 0;
    for (std::size_t i = begin; i < end; ++i) {
      const NodeSource& node = nodes[i];
      if (node.owner == nullptr) {
        out[i] = prepare(node).first;
        ++chunk_misses;
        continue;
      }
      Shard& shard = ShardOf(node.facts->name);
      std::lock_guard lock(shard.mu);
      Entry& entry = shard.entries[node.facts->name];
      if (entry.prepared == nullptr || entry.owner != node.owner ||
          entry.generation != generation || now >= entry.stale_at) {
        auto [fresh, stale_at] = prepare(node);
        entry = Entry{node.owner, generation, stale_at, std::move(fresh)};
        ++chunk_misses;
      }
      out[i] = entry.prepared;
    }
    misses += chunk_misses;
  };
  if (pool != nullptr) {
    pool->ForEachChunk(nodes.size(), kNodesPerChunk, run);
  } else {
    run(0, nodes.size());
  }
  prepared_count_ += misses;
  if (prepared != nullptr) *prepared = misses;
  if (size() > std::max(cluster_nodes, nodes.size()) + kSlack) {
    std::lock_guard evict(evict_mu_);
    std::unordered_set<std::string_view> wanted;
    for (const NodeSource& node : nodes) wanted.insert(node.facts->name);
    for (Shard& shard : shards_) {
      std::lock_guard lock(shard.mu);
      std::erase_if(shard.entries, [&](const auto& item) { return !wanted.contains(item.first); });
    }
  }
  return out;
}

std::size_t PreparedNodeCache::size() const {
  std::size_t total = 0;
  for (const Shard& shard : shards_) {
    std::lock_guard lock(shard.mu);
    total += shard.entries.size();
  }
  return total;
}

std::size_t PreparedNodeCache::prepared_count() const {
  return prepared_count_;
}

}  // namespace powerctl::scoring
