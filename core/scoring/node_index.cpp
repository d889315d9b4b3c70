#include "core/scoring/node_index.h"

namespace powerctl::scoring {

NodeIndex::NodeIndex(std::shared_ptr<const cluster::ClusterSnapshot> snapshot)
    : snapshot_(std::move(snapshot)) {
  by_name_.reserve(snapshot_->nodes.size());
  for (const auto& [name, node] : snapshot_->nodes) by_name_.emplace(name, &node);
}

const cluster::NodeStatePtr* NodeIndex::Find(std::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

std::shared_ptr<const NodeIndex> NodeIndexCache::For(
    const std::shared_ptr<const cluster::ClusterSnapshot>& snapshot) {
  if (snapshot == nullptr) return nullptr;
  {
    std::lock_guard lock(mu_);
    if (current_ != nullptr && current_->snapshot() == snapshot) return current_;
  }
  // Built outside the lock; two requests racing on a new snapshot may both build it.
  auto index = std::make_shared<const NodeIndex>(snapshot);
  std::lock_guard lock(mu_);
  current_ = index;
  return index;
}

}  // namespace powerctl::scoring
