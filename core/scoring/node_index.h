#pragma once
// Name -> cached node for one cluster snapshot, built once per snapshot and shared by the
// requests that read it: looking every candidate up in the snapshot's ordered map was an
// eighth of a 5,000-node prioritize.

#include "core/cluster/node_cache.h"

#include <memory>
#include <mutex>
#include <string_view>
#include <unordered_map>

namespace powerctl::scoring {

class NodeIndex {
 public:
  explicit NodeIndex(std::shared_ptr<const cluster::ClusterSnapshot> snapshot);
  // Null when the snapshot has no node of that name; else the snapshot's pointer to it (valid
  // while the snapshot is), which callers may copy to keep that one node alive.
  const cluster::NodeStatePtr* Find(std::string_view name) const;
  const std::shared_ptr<const cluster::ClusterSnapshot>& snapshot() const { return snapshot_; }

 private:
  std::shared_ptr<const cluster::ClusterSnapshot> snapshot_;  // owns what the index points to
  std::unordered_map<std::string_view, const cluster::NodeStatePtr*> by_name_;
};

// Keeps the index of the latest snapshot asked about.
class NodeIndexCache {
 public:
  // Null for a null snapshot.
  std::shared_ptr<const NodeIndex> For(const std::shared_ptr<const cluster::ClusterSnapshot>& s);

 private:
  std::mutex mu_;
  std::shared_ptr<const NodeIndex> current_;
};

}  // namespace powerctl::scoring
