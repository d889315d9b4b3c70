#include "core/scoring/prepared_nodes.h"

#include "core/predict/node_params.h"

#include <utility>

namespace powerctl::scoring {

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

PreparedNodeCache::Batch::Batch(PreparedNodeCache& cache, std::shared_lock<std::shared_mutex> lock,
                                bool cached, const telemetry::TelemetryView* view,
                                const config::PowerctlConfig& config)
    : cache_(cache),
      lock_(std::move(lock)),
      cached_(cached),
      view_(view),
      config_(config),
      now_(view != nullptr ? view->Now() : telemetry::SteadyTime{}),
      generation_(view != nullptr ? view->Generation() : 0) {
  if (auto usual = predict::ModelEndpointForNode({}, config); usual.ok()) {
    usual_model_ = std::make_shared<const predict::ModelEndpoint>(std::move(*usual));
  }
}

PreparedNodeCache::Batch::~Batch() {
  cache_.prepared_count_ += misses_;
}

PreparedPtr PreparedNodeCache::Batch::PrepareAfresh(const NodeSource& node,
                                                    telemetry::SteadyTime* stale_at) const {
  telemetry::NodeReading reading = ReadingForNode(node, view_);
  *stale_at = view_ != nullptr ? view_->StaleAt(reading) : telemetry::SteadyTime::max();
  return std::make_shared<const predict::PreparedNode>(
      predict::PrepareNode(*node.facts, std::move(reading), config_, now_, usual_model_));
}

PreparedPtr PreparedNodeCache::Batch::Get(const NodeSource& node) {
  telemetry::SteadyTime stale_at;
  if (!cached_ || node.owner == nullptr || node.slot >= cache_.entries_.size()) {
    misses_.fetch_add(1, std::memory_order_relaxed);
    return PrepareAfresh(node, &stale_at);
  }
  std::lock_guard lock(cache_.stripes_[node.slot / kSlotsPerStripe]);
  Entry& entry = cache_.entries_[node.slot];
  if (entry.prepared == nullptr || entry.owner != node.owner || entry.generation != generation_ ||
      now_ >= entry.stale_at) {
    PreparedPtr fresh = PrepareAfresh(node, &stale_at);
    entry = Entry{node.owner, generation_, stale_at, std::move(fresh)};
    misses_.fetch_add(1, std::memory_order_relaxed);
  }
  return entry.prepared;
}

std::optional<predict::PowerEstimate> PreparedNodeCache::Batch::Remembered(
    std::size_t slot, const predict::PreparedNode* prepared, const EstimateKey& key) const {
  if (!cached_ || slot >= cache_.entries_.size()) return std::nullopt;
  std::lock_guard lock(cache_.stripes_[slot / kSlotsPerStripe]);
  const Entry& entry = cache_.entries_[slot];
  if (entry.prepared.get() != prepared || entry.estimate_key != key) return std::nullopt;
  return entry.estimate;
}

void PreparedNodeCache::Remember(const cluster::NodeIndexPtr& index, std::size_t slot,
                                 const predict::PreparedNode* prepared, const EstimateKey& key,
                                 const predict::PowerEstimate& estimate) {
  std::shared_lock lock(mu_);
  if (index == nullptr || index_ != index || slot >= entries_.size()) return;
  std::lock_guard stripe(stripes_[slot / kSlotsPerStripe]);
  Entry& entry = entries_[slot];
  if (entry.prepared.get() != prepared) return;
  entry.estimate_key = key;
  entry.estimate = estimate;
}

PreparedNodeCache::Batch PreparedNodeCache::Begin(cluster::NodeIndexPtr index,
                                                  const telemetry::TelemetryView* view,
                                                  const config::PowerctlConfig& config) {
  std::shared_lock lock(mu_);
  // Another batch may move the entries between our two locks; then look again.
  while (index != nullptr && index_ != index) {
    lock.unlock();
    {
      std::unique_lock exclusive(mu_);
      if (index_ != index) MoveTo(index);
    }
    lock.lock();
  }
  bool cached = index != nullptr;
  return Batch(*this, std::move(lock), cached, view, config);
}

void PreparedNodeCache::MoveTo(cluster::NodeIndexPtr index) {
  std::vector<Entry> moved(index->size());
  for (Entry& entry : entries_) {
    if (entry.prepared == nullptr) continue;
    const std::size_t at = index->Find(entry.prepared->node);
    if (at < moved.size()) moved[at] = std::move(entry);
  }
  entries_ = std::move(moved);
  stripes_ = std::make_unique<std::mutex[]>(entries_.size() / kSlotsPerStripe + 1);
  index_ = std::move(index);
}

std::size_t PreparedNodeCache::size() const {
  std::unique_lock lock(mu_);  // no batch runs: entries are not being written
  std::size_t held = 0;
  for (const Entry& entry : entries_) held += entry.prepared != nullptr ? 1 : 0;
  return held;
}

std::size_t PreparedNodeCache::prepared_count() const {
  return prepared_count_;
}

}  // namespace powerctl::scoring
