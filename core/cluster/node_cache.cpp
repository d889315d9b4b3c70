// NodeCache: list+watch threads feeding Nodes, Pods and TASPolicies into snapshots.

#include "core/cluster/node_cache.h"

#include "core/cluster/watch_transport.h"
#include "core/common/json_fields.h"
#include "core/common/malloc_tuning.h"
#include "core/config/tas_policy.h"

#include <algorithm>
#include <utility>

namespace powerctl::cluster {
namespace {

using json = nlohmann::json;

constexpr const char* kPaths[] = {"/api/v1/nodes", "/api/v1/pods",
                                  "/apis/telemetry.intel.com/v1alpha1/taspolicies"};
constexpr const char* kCrdMissing =
    "the TASPolicy CRD (taspolicies.telemetry.intel.com) is not installed: no telemetry policies";

std::string ObjectKey(const json& object) {
  return StringField(object, {"metadata", "namespace"}) + "/" +
         StringField(object, {"metadata", "name"});
}

}  // namespace

NodeCache::NodeCache(TransportFactory make_transport, NodeCacheOptions options)
    : make_transport_(std::move(make_transport)), options_(std::move(options)) {}

NodeCache::~NodeCache() {
  Stop();
}

void NodeCache::Start() {
  std::lock_guard lock(mu_);
  if (started_ || stopping_) return;
  started_ = true;
  threads_.emplace_back([this] { Run(kNodes); });
  threads_.emplace_back([this] { Run(kPods); });
  if (options_.watch_policies) threads_.emplace_back([this] { Run(kPolicies); });
}

void NodeCache::Stop() {
  std::vector<std::thread> threads;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    threads.swap(threads_);
  }
  changed_.notify_all();
  stop_requested_.notify_all();
  for (std::thread& t : threads) t.join();
}

bool NodeCache::InterruptibleWait(std::chrono::milliseconds duration) {
  std::unique_lock lock(mu_);
  return !stop_requested_.wait_for(lock, duration, [this] { return stopping_.load(); });
}

void NodeCache::ChangedLocked() {
  ++version_;
  snapshot_.reset();
  changed_.notify_all();
}

void NodeCache::GroupsChangedLocked() {
  ++groups_version_;
  groups_changed_.notify_all();
}

void NodeCache::SetError(Kind kind, std::string error) {
  std::lock_guard lock(mu_);
  if (watches_[kind].error == error) return;
  watches_[kind].error = std::move(error);
  ++status_changes_;
  changed_.notify_all();
}

void NodeCache::Run(Kind kind) {
  const std::string path = kPaths[kind];
  while (true) {
    {
      std::lock_guard lock(mu_);
      if (stopping_) return;
      watches_[kind].resyncing = true;
      watches_[kind].seen.clear();
    }
    Result<std::unique_ptr<kube::HttpTransport>> transport = make_transport_();
    if (!transport.ok()) {
      SetError(kind, "connecting to the API server: " + transport.error().message);
      if (!InterruptibleWait(options_.restart_after)) return;
      continue;
    }
    WatchHooks hooks;
    hooks.stopping = &stopping_;
    hooks.on_stream_start = [this, kind] { ListDelivered(kind); };
    hooks.on_success = [this, kind] {
      // A TASPolicy CRD that is missing stays reported until a list of policies succeeds.
      SetError(kind, "");
    };
    hooks.on_failure = [this, kind](const Error& error) {
      // One wording for a missing CRD, whichever request found it missing.
      bool no_crd = kind == kPolicies && error.code == ErrorCode::kNotFound;
      SetError(kind, no_crd ? kCrdMissing : error.message);
    };
    kube::ClientOptions client_options = options_.client;
    client_options.sleep = [this](std::chrono::milliseconds d) { InterruptibleWait(d); };
    kube::Client client(MakeWatchTransport(std::move(transport).value(), hooks), client_options);
    kube::WatchOptions watch;
    watch.timeout_seconds = options_.watch_timeout_seconds;
    watch.jitter_timeout = true;
    // As kube-scheduler: finished pods hold no resources; the server sends DELETED when a
    // pod stops matching.
    if (kind == kPods) watch.field_selector = "status.phase!=Succeeded,status.phase!=Failed";
    powerctl::Status status = client.ListAndWatch(
        path, watch, [this, kind](const kube::WatchEvent& event) { return Handle(kind, event); });
    {
      std::lock_guard lock(mu_);
      if (stopping_) return;
    }
    if (!status.ok() && kind == kPolicies && status.error().code == ErrorCode::kNotFound) {
      SetError(kind, kCrdMissing);
      ListDelivered(kind);  // nothing to list: synced, and stale policies are dropped
    } else if (!status.ok()) {
      SetError(kind, status.error().message);
      if (options_.client.log) {
        options_.client.log->warn("cluster cache: watch of {} failed, restarting in {}ms: {}", path,
                                  options_.restart_after.count(), status.error().message);
      }
    }
    if (!InterruptibleWait(options_.restart_after)) return;
  }
}

NodePtr NodeCache::WithPodsLocked(NodeState node) const {
  node.pods.clear();
  node.requested = PodRequests{};
  if (auto on_node = pods_by_node_.find(node.name); on_node != pods_by_node_.end()) {
    node.pods.reserve(on_node->second.size());
    for (const auto& [key, pod] : on_node->second) {
      node.pods.push_back(pod);
      node.requested.cpu_cores += pod->requests.cpu_cores;
      node.requested.memory_bytes += pod->requests.memory_bytes;
    }
  }
  return std::make_shared<const NodeState>(std::move(node));
}

void NodeCache::PutPodLocked(const std::string& key, PodPtr pod) {
  RemovePodLocked(key);
  if (!pod->node_name.empty()) {
    pods_by_node_[pod->node_name][key] = pod;
    dirty_nodes_.insert(pod->node_name);
  }
  auto group = pod->labels.find(kPodGroupLabel);
  if (group != pod->labels.end() && !group->second.empty()) {
    std::string group_key = pod->namespace_ + "/" + group->second;
    group_members_[group_key][key] = pod;
    dirty_groups_.insert(std::move(group_key));
    GroupsChangedLocked();
  }
  pods_[key] = std::move(pod);
}

void NodeCache::RemovePodLocked(const std::string& key) {
  auto it = pods_.find(key);
  if (it == pods_.end()) return;
  const PodInfo& pod = *it->second;
  if (!pod.node_name.empty()) {
    auto on_node = pods_by_node_.find(pod.node_name);
    if (on_node != pods_by_node_.end()) {
      on_node->second.erase(key);
      if (on_node->second.empty()) pods_by_node_.erase(on_node);
    }
    dirty_nodes_.insert(pod.node_name);
  }
  auto group = pod.labels.find(kPodGroupLabel);
  if (group != pod.labels.end() && !group->second.empty()) {
    std::string group_key = pod.namespace_ + "/" + group->second;
    auto members = group_members_.find(group_key);
    if (members != group_members_.end()) {
      members->second.erase(key);
      if (members->second.empty()) group_members_.erase(members);
    }
    dirty_groups_.insert(std::move(group_key));
    GroupsChangedLocked();
  }
  pods_.erase(it);
}

bool NodeCache::Handle(Kind kind, const kube::WatchEvent& event) {
  std::lock_guard lock(mu_);
  if (stopping_) return false;
  bool deleted = event.type == "DELETED";
  std::string key =
      kind == kNodes ? StringField(event.object, {"metadata", "name"}) : ObjectKey(event.object);
  if (watches_[kind].resyncing) watches_[kind].seen.insert(key);
  if (kind == kNodes) {
    if (deleted) {
      if (nodes_.erase(key) > 0) index_.reset();
    } else {
      NodePtr& slot = nodes_[key];
      if (slot == nullptr) index_.reset();  // a node joined
      slot = WithPodsLocked(NodeStateFromJson(event.object));
      replaced_.insert(key);
    }
    dirty_nodes_.erase(key);  // published with its current pods, or gone
  } else if (kind == kPods) {
    auto pod = std::make_shared<const PodInfo>(PodInfoFromJson(event.object));
    if (deleted || pod->Terminal()) {
      RemovePodLocked(key);
    } else {
      PutPodLocked(key, std::move(pod));
    }
  } else {
    // Updates replace the policy as a whole (TAS issue #60 treated an update as an addition).
    policies_.erase(key);
    invalid_policies_.erase(key);
    if (!deleted) {
      Result<config::Policy> policy = config::PolicyFromJson(event.object);
      if (policy.ok()) {
        policies_[key] = std::move(policy).value();
      } else {
        invalid_policies_[key] = policy.error().message;
        if (options_.client.log) options_.client.log->warn("{}", policy.error().message);
      }
    }
  }
  ChangedLocked();
  return true;
}

void NodeCache::ListDelivered(Kind kind) {
  {
    std::lock_guard lock(mu_);
    WatchState& w = watches_[kind];
    if (w.resyncing) {
      // After a restart: what the new list did not contain is gone.
      auto prune = [&w](auto& map) {
        for (auto it = map.begin(); it != map.end();) {
          it = w.seen.count(it->first) > 0 ? std::next(it) : map.erase(it);
        }
      };
      if (kind == kNodes) {
        std::size_t before = nodes_.size();
        prune(nodes_);
        if (nodes_.size() != before) index_.reset();
      }
      if (kind == kPods) {
        std::vector<std::string> gone;
        for (const auto& [key, pod] : pods_) {
          if (w.seen.count(key) == 0) gone.push_back(key);
        }
        for (const std::string& key : gone) RemovePodLocked(key);
      }
      if (kind == kPolicies) {
        prune(policies_);
        prune(invalid_policies_);
      }
      w.resyncing = false;
      w.seen.clear();
    }
    w.synced = true;
    ChangedLocked();
  }
  // A (re)list allocates and frees a great deal (every object's JSON, page by page); give
  // what is free back to the system rather than keep it for the next relist.
  ReleaseFreeMemory();
}

bool NodeCache::HasSynced() const {
  std::lock_guard lock(mu_);
  return watches_[kNodes].synced && watches_[kPods].synced;
}

bool NodeCache::WaitForSync(std::chrono::milliseconds timeout) const {
  WaitForStatus([](const CacheStatus& s) { return s.synced || !s.last_error.empty(); }, timeout);
  return HasSynced();
}

CacheStatus NodeCache::Status() const {
  std::lock_guard lock(mu_);
  CacheStatus status;
  status.synced = watches_[kNodes].synced && watches_[kPods].synced;
  status.last_error =
      !watches_[kNodes].error.empty() ? watches_[kNodes].error : watches_[kPods].error;
  status.ready = status.synced && status.last_error.empty();
  status.policy_note = watches_[kPolicies].error;
  status.policies_synced = watches_[kPolicies].synced && status.policy_note.empty();
  return status;
}

std::shared_ptr<const ClusterSnapshot> NodeCache::Snapshot() const {
  std::lock_guard lock(mu_);
  if (snapshot_) return snapshot_;
  // Only nodes whose pods changed are copied; the others are shared with earlier snapshots.
  for (const std::string& name : dirty_nodes_) {
    auto node = nodes_.find(name);
    if (node == nodes_.end()) continue;
    node->second = WithPodsLocked(*node->second);
    replaced_.insert(name);
  }
  dirty_nodes_.clear();
  for (const std::string& group_key : dirty_groups_) {
    auto members = group_members_.find(group_key);
    if (members == group_members_.end()) {
      groups_.erase(group_key);
      continue;
    }
    auto pods = std::make_shared<std::vector<PodInfo>>();
    pods->reserve(members->second.size());
    for (const auto& [key, pod] : members->second) pods->push_back(*pod);
    groups_[group_key] = std::move(pods);
  }
  dirty_groups_.clear();
  // The same names as the last snapshot (index_ is kept): replace the changed nodes in place.
  bool patched = index_ != nullptr && ordered_.size() == nodes_.size();
  for (auto name = replaced_.begin(); patched && name != replaced_.end(); ++name) {
    std::size_t position = index_->Find(*name);
    auto node = nodes_.find(*name);
    patched = position < ordered_.size() && node != nodes_.end();
    if (patched) ordered_[position] = node->second;
  }
  replaced_.clear();
  if (!patched) {  // a node joined or left: walk the map, and index the names anew
    ordered_.clear();
    ordered_.reserve(nodes_.size());
    for (const auto& [name, node] : nodes_) ordered_.push_back(node);
    index_.reset();
  }
  auto snapshot = std::make_shared<ClusterSnapshot>();
  snapshot->nodes = ordered_;
  if (index_ == nullptr) {
    snapshot->IndexNodes();
    index_ = snapshot->index;
  }
  snapshot->index = index_;
  snapshot->pod_count = pods_.size();
  snapshot->pod_groups = groups_;
  snapshot->policies = policies_;
  snapshot->invalid_policies = invalid_policies_;
  snapshot->version = version_;
  snapshot->groups_version = groups_version_;
  snapshot_ = std::move(snapshot);
  return snapshot_;
}

bool NodeCache::WaitFor(const std::function<bool(const ClusterSnapshot&)>& predicate,
                        std::chrono::milliseconds timeout) const {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    std::shared_ptr<const ClusterSnapshot> snapshot = Snapshot();
    if (predicate(*snapshot)) return true;
    std::unique_lock lock(mu_);
    bool moved = changed_.wait_until(lock, deadline, [&] { return version_ != snapshot->version; });
    if (!moved) return false;
  }
}

bool NodeCache::WaitForGroupsChange(std::uint64_t version,
                                    std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mu_);
  return groups_changed_.wait_for(lock, timeout, [&] { return groups_version_ != version; });
}

bool NodeCache::WaitForStatus(const std::function<bool(const CacheStatus&)>& predicate,
                              std::chrono::milliseconds timeout) const {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    std::uint64_t version = 0;
    std::uint64_t changes = 0;
    {
      std::lock_guard lock(mu_);
      version = version_;
      changes = status_changes_;
    }
    if (predicate(Status())) return true;
    std::unique_lock lock(mu_);
    bool moved = changed_.wait_until(
        lock, deadline, [&] { return version_ != version || status_changes_ != changes; });
    if (!moved) return false;
  }
}

}  // namespace powerctl::cluster
