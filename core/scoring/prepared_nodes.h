#pragma once
// Per-node power inputs, prepared once and reused for every pod. Preparing a node (its
// reading, model endpoint, built-in parameters and normalised temperatures) is most of the
// cost of scoring it, and none of it depends on the pod; on a 5,000-node cluster doing it per
// request took tens of milliseconds. An entry is prepared again when the node's cached
// object changes (a new object: the cache replaces, never mutates, what it has published),
// when telemetry moves to new snapshots, or when one of its readings goes stale.
//
// Entries are kept by the node's position in the cluster snapshot (its NodeIndex), so a
// lookup is an array access rather than a hash of the name (which, with its lock contention,
// was a fifth of a 5,000-node prioritize). When nodes join or leave, the snapshot has a new
// index and the entries move to their new positions by name; entries of departed nodes go.

#include "core/cluster/node_cache.h"
#include "core/config/config.h"
#include "core/predict/node_power.h"
#include "core/telemetry/telemetry_service.h"

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <vector>

namespace powerctl::scoring {

// A node to prepare: its facts and allocatable CPU, and the object they belong to.
struct NodeSource {
  const predict::NodeFacts* facts = nullptr;  // required; facts->name is the node's name
  std::optional<double> cpu_allocatable;      // used when telemetry has no capacity
  // The cached object that owns `facts`; an entry is reused while it is the same object
  // (held, so its address cannot be reused). Null (e.g. a Node sent in the request):
  // prepared afresh every time.
  std::shared_ptr<const void> owner;
  // The node's position in the index given to Begin(); cluster::kNoNode: not cached.
  std::size_t slot = cluster::kNoNode;
};

using PreparedPtr = std::shared_ptr<const predict::PreparedNode>;

// What a node's power estimate depends on besides its prepared inputs: EstimatePower's other
// arguments for that node. With a predictor that repeats its answers, the same prepared inputs
// and an equal key give the same estimate.
struct EstimateKey {
  double unseen_cpu = 0;     // cores of the node's pods the usage metrics cannot show yet
  double pod_cpu = 0;        // the pod's cores
  double reachable_cpu = 0;  // fill only: how far the node can still be filled
  bool fill = false;
  bool operator==(const EstimateKey&) const = default;
};

class PreparedNodeCache {
 public:
  // The prepared inputs of one request's nodes. Get() may be called from several threads;
  // while a batch lives, the cache keeps the index it was begun with.
  class Batch {
   public:
    ~Batch();
    Batch(const Batch&) = delete;
    Batch& operator=(const Batch&) = delete;

    PreparedPtr Get(const NodeSource& node);
    // The estimate remembered for the node at `slot` with these prepared inputs and key, if
    // any: pods of one Deployment ask for the same thing over and over, and the fill cost is
    // most of what scoring a node costs. A node prepared again forgets its estimate.
    std::optional<predict::PowerEstimate> Remembered(std::size_t slot,
                                                     const predict::PreparedNode* prepared,
                                                     const EstimateKey& key) const;
    std::size_t misses() const { return misses_; }  // nodes prepared (not reused) so far

   private:
    friend class PreparedNodeCache;
    Batch(PreparedNodeCache& cache, std::shared_lock<std::shared_mutex> lock, bool cached,
          const telemetry::TelemetryView* view, const config::PowerctlConfig& config);
    PreparedPtr PrepareAfresh(const NodeSource& node, telemetry::SteadyTime* stale_at) const;

    PreparedNodeCache& cache_;
    std::shared_lock<std::shared_mutex> lock_;
    bool cached_;  // the batch has an index: nodes with a slot are looked up and kept
    const telemetry::TelemetryView* view_;
    const config::PowerctlConfig& config_;
    telemetry::SteadyTime now_;
    std::uint64_t generation_;
    // The configuration's default model endpoint, shared by every node that resolves to it.
    std::shared_ptr<const predict::ModelEndpoint> usual_model_;
    std::atomic<std::size_t> misses_{0};
  };

  // Starts a batch whose nodes' slots are positions in `index` (null: nothing is cached,
  // e.g. without a cluster). `view` null: telemetry is not configured.
  Batch Begin(cluster::NodeIndexPtr index, const telemetry::TelemetryView* view,
              const config::PowerctlConfig& config);

  // Keeps `estimate` for the node at `slot` of `index` while it has the prepared inputs
  // `prepared` (else, or when the entries have moved to another index, keeps nothing). Called
  // after the batch that prepared it ended: a model call must not hold the cache's lock.
  void Remember(const cluster::NodeIndexPtr& index, std::size_t slot,
                const predict::PreparedNode* prepared, const EstimateKey& key,
                const predict::PowerEstimate& estimate);

  std::size_t size() const;  // nodes with prepared inputs held
  // Nodes prepared since construction (cache misses), for tests and metrics.
  std::size_t prepared_count() const;

 private:
  struct Entry {
    std::shared_ptr<const void> owner;
    std::uint64_t generation = 0;
    telemetry::SteadyTime stale_at{};
    PreparedPtr prepared;
    // The last estimate made from `prepared`, and for what.
    std::optional<EstimateKey> estimate_key;
    predict::PowerEstimate estimate;
  };
  // Slots share a lock in stripes: cheap to hold, and the threads of one batch (or of
  // concurrent requests) rarely meet on one.
  static constexpr std::size_t kSlotsPerStripe = 64;

  void MoveTo(cluster::NodeIndexPtr index);  // under the exclusive lock

  mutable std::shared_mutex mu_;  // exclusive: the entries move to a new index
  cluster::NodeIndexPtr index_;
  std::vector<Entry> entries_;             // by slot of index_
  std::unique_ptr<std::mutex[]> stripes_;  // entries_.size() / kSlotsPerStripe + 1
  std::atomic<std::size_t> prepared_count_{0};
};

// How a node's reading looks for power prediction: telemetry's, with the Node's allocatable
// CPU standing in for a missing capacity.
telemetry::NodeReading ReadingForNode(const NodeSource& node, const telemetry::TelemetryView* view);

}  // namespace powerctl::scoring
