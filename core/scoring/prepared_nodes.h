#pragma once
// Per-node power inputs, prepared once and reused for every pod. Preparing a node (its
// reading, model endpoint, built-in parameters and normalised temperatures) is most of the
// cost of scoring it, and none of it depends on the pod; on a 5,000-node cluster doing it per
// request took tens of milliseconds. An entry is prepared again when the node's cached
// object changes (a new object: the cache replaces, never mutates, what it has published),
// when telemetry moves to new snapshots, or when one of its readings goes stale.

#include "core/common/worker_pool.h"
#include "core/manifests/config.h"
#include "core/predict/node_power.h"
#include "core/telemetry/telemetry_service.h"

#include <array>
#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace powerctl::scoring {

// A node to prepare: its facts and allocatable CPU, and the object they belong to.
struct NodeSource {
  const predict::NodeFacts* facts = nullptr;  // required; facts->name is the node's name
  std::optional<double> cpu_allocatable;      // used when telemetry has no capacity
  // The cached object that owns `facts`; entries are reused while it is the same object
  // (held, so its address cannot be reused). Null (e.g. a Node sent in the request):
  // prepared afresh every time.
  std::shared_ptr<const void> owner;
};

using PreparedPtr = std::shared_ptr<const predict::PreparedNode>;

class PreparedNodeCache {
 public:
  // One prepared node per source, in order. `view` null: telemetry is not configured.
  // `cluster_nodes`: how many nodes the cluster has; entries of nodes that left it are
  // dropped once the cache holds well over that many. `prepared`, when given, is set to how
  // many of `nodes` had to be prepared (the rest were reused).
  // Large batches are split across `pool`'s threads when one is given.
  std::vector<PreparedPtr> Prepare(const std::vector<NodeSource>& nodes,
                                   const telemetry::TelemetryView* view,
                                   const manifests::PowerctlConfig& config,
                                   std::size_t cluster_nodes, std::size_t* prepared = nullptr,
                                   WorkerPool* pool = nullptr);

  std::size_t size() const;
  // Nodes prepared since construction (cache misses), for tests and metrics.
  std::size_t prepared_count() const;

 private:
  struct Entry {
    std::shared_ptr<const void> owner;
    std::uint64_t generation = 0;
    telemetry::SteadyTime stale_at{};
    PreparedPtr prepared;
  };

  // Entries are spread over shards by name so that the threads of one batch (and concurrent
  // requests) rarely wait for each other.
  static constexpr std::size_t kShards = 16;
  struct Shard {
    mutable std::mutex mu;
    std::unordered_map<std::string, Entry> entries;
  };
  Shard& ShardOf(const std::string& name);

  std::array<Shard, kShards> shards_;
  std::atomic<std::size_t> prepared_count_{0};
  std::mutex evict_mu_;  // one eviction pass at a time
};

// How a node's reading looks for power prediction: telemetry's, with the Node's allocatable
// CPU standing in for a missing capacity.
telemetry::NodeReading ReadingForNode(const NodeSource& node, const telemetry::TelemetryView* view);

}  // namespace powerctl::scoring
