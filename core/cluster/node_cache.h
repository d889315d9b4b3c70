#pragma once
// A cache of the cluster's Nodes, Pods and TASPolicies, kept current by list+watch
// (kube::Client::ListAndWatch) on background threads, read as immutable snapshots.
//
// Each watch runs on its own thread with its own transport (a watch holds its connection for
// minutes). When a watch gives up (the client's retries are exhausted) the cache records the
// error, waits `restart_after` and lists again; objects that vanished meanwhile are dropped
// once the new list has been delivered. Nodes and pods gate readiness; TASPolicies do not
// (a cluster without the CRD simply has no policies, and a broken policy object is reported,
// not fatal).
//
// Stop() cancels the requests in flight (HttpRequest::cancel: the libcurl transport notices
// within about a second, even on a silent watch) and joins the threads, so it does not wait for
// watches' server-side timeouts, which can therefore be as long as client-go's (5-10 minutes).

#include "core/cluster/pod_info.h"
#include "core/common/result.h"
#include "core/config/config.h"
#include "core/kube/client.h"
#include "core/kube/transport.h"
#include "core/predict/node_power.h"
#include "core/telemetry/node_mapping.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace powerctl::cluster {

// What scoring reads of a Node. Shared between snapshots: the cache replaces, never mutates,
// a NodeState it has published, so one pod change copies one node and every other node of the
// new snapshot is the previous snapshot's.
struct NodeState {
  std::string name;
  std::optional<double> cpu_capacity;  // cores
  std::optional<double> cpu_allocatable;
  std::optional<double> memory_capacity;  // bytes
  std::optional<double> memory_allocatable;
  std::optional<double> pods_allocatable;  // how many pods it may run (kubelet's maxPods)
  bool unschedulable = false;              // spec.unschedulable (cordoned)
  telemetry::NodeInfo info;                // name and addresses, for mapping Prometheus series
  // The labels and annotations the power model and policies read (ScoringReadsLabel,
  // ScoringReadsAnnotation), not all of them.
  predict::NodeFacts facts;
  std::vector<std::shared_ptr<const PodInfo>> pods;  // bound here, not terminal; by key
  PodRequests requested;                             // the sum of `pods`' requests
};

using NodePtr = std::shared_ptr<const NodeState>;
using PodGroupPtr = std::shared_ptr<const std::vector<PodInfo>>;

inline constexpr std::size_t kNoNode = static_cast<std::size_t>(-1);

// Node name -> position in ClusterSnapshot::nodes. Every request looks up each of its (up to
// thousands of) node names: a binary search over the names was a sixth of a 5,000-node
// prioritize, and std::unordered_map's chained nodes still a tenth, so this is an open-
// addressing table of positions with the names kept by position.
class NodeIndex {
 public:
  explicit NodeIndex(std::vector<std::string> names);  // in position order, distinct
  std::size_t Find(std::string_view name) const;       // kNoNode when absent
  std::size_t size() const { return names_.size(); }

 private:
  struct Slot {
    std::uint32_t hash = 0;
    std::uint32_t position_plus_one = 0;  // 0: empty
  };
  std::vector<std::string> names_;
  std::vector<Slot> slots_;  // a power of two, at least twice the names
};
using NodeIndexPtr = std::shared_ptr<const NodeIndex>;

struct ClusterSnapshot {
  std::vector<NodePtr> nodes;                           // sorted by name, no nulls
  std::size_t pod_count = 0;                            // non-terminal pods
  std::map<std::string, PodGroupPtr> pod_groups;        // "namespace/podGroup" -> pods, by key
  std::map<std::string, config::Policy> policies;       // "namespace/name"
  std::map<std::string, std::string> invalid_policies;  // "namespace/name" -> error
  std::uint64_t version = 0;                            // moves with every change
  std::uint64_t groups_version = 0;  // moves when a pod of a pod group changes (pod_groups)
  // Positions of `nodes` by name. Consecutive snapshots with the same node names share one
  // index, so its identity also tells the prepared power inputs (which are kept by position)
  // that no node joined or left. Null: lookups binary-search `nodes`.
  NodeIndexPtr index;

  // Null when there is no node of that name.
  const NodeState* FindNode(std::string_view name) const;
  // The same, as the pointer that keeps the node alive (null when absent).
  NodePtr FindNodePtr(std::string_view name) const;
  // The node's position in `nodes`, or kNoNode.
  std::size_t FindNodePosition(std::string_view name) const;
  // Adds or replaces a node, keeping `nodes` sorted (for snapshots built by hand). Adding one
  // drops `index`: call IndexNodes() when done.
  void PutNode(NodeState node);
  void IndexNodes();  // builds `index` from `nodes`
  // The pods labelled podGroup=`group` in `ns`; empty when there are none.
  const std::vector<PodInfo>& PodGroup(const std::string& ns, const std::string& group) const;
  std::vector<telemetry::NodeInfo> NodeInfos() const;
};

struct CacheStatus {
  bool synced = false;           // nodes and pods have been listed once
  bool ready = false;            // synced, and neither the node nor the pod watch is failing now
  std::string last_error;        // the current failure of the node or pod watch ("" when fine)
  std::string policy_note;       // TASPolicy watch: "CRD not installed", or its failure
  bool policies_synced = false;  // TASPolicies listed and their watch not failing now
};

struct NodeCacheOptions {
  // Passed to each watch's Client (log, connection_description, max_attempts, backoff);
  // `sleep` is replaced by a wait that Stop() interrupts.
  kube::ClientOptions client;
  // The shortest server-side watch timeout; each watch asks for up to twice it (jitter).
  int watch_timeout_seconds = 300;
  std::chrono::milliseconds restart_after{5000};  // after a watch gave up
  bool watch_policies = true;
};

class NodeCache {
 public:
  // Called once per watch thread (and again when a watch is restarted).
  using TransportFactory = std::function<Result<std::unique_ptr<kube::HttpTransport>>()>;

  NodeCache(TransportFactory make_transport, NodeCacheOptions options);
  ~NodeCache();
  NodeCache(const NodeCache&) = delete;
  NodeCache& operator=(const NodeCache&) = delete;

  void Start();  // starts the watch threads; once
  void Stop();   // stops and joins them; idempotent

  bool HasSynced() const;
  // Waits until nodes and pods have been listed once (true), or gives up (false) when `timeout`
  // passes or the node or pod watch reports a failure, so that an unreachable cluster does not
  // hold up the caller (server start-up).
  bool WaitForSync(std::chrono::milliseconds timeout) const;
  CacheStatus Status() const;
  // The current state; cheap when nothing changed since the last call.
  std::shared_ptr<const ClusterSnapshot> Snapshot() const;
  // Waits until `predicate` holds for a snapshot (true), or `timeout` passes (false).
  bool WaitFor(const std::function<bool(const ClusterSnapshot&)>& predicate,
               std::chrono::milliseconds timeout) const;
  // Waits until the pod groups are no longer those of ClusterSnapshot::groups_version
  // `version` (true), or `timeout` passes (false). Other changes (a bind, once per scheduled
  // pod) do not wake the caller: the cluster writer waits here. As WaitFor, it waits out
  // `timeout` after Stop(), so a caller looping on it never spins.
  bool WaitForGroupsChange(std::uint64_t version, std::chrono::milliseconds timeout) const;
  // The same for Status() (e.g. until a failure is reported).
  bool WaitForStatus(const std::function<bool(const CacheStatus&)>& predicate,
                     std::chrono::milliseconds timeout) const;

 private:
  enum Kind { kNodes = 0, kPods = 1, kPolicies = 2 };
  struct WatchState {
    bool synced = false;
    bool resyncing = false;      // a (re)started watch has not finished its list
    std::set<std::string> seen;  // keys delivered since the (re)start
    std::string error;
  };
  using PodPtr = std::shared_ptr<const PodInfo>;
  using PodsByKey = std::map<std::string, PodPtr>;

  void Run(Kind kind);
  bool Handle(Kind kind, const kube::WatchEvent& event);
  void ListDelivered(Kind kind);  // the watch began: the list before it has been delivered
  void SetError(Kind kind, std::string error);
  bool InterruptibleWait(std::chrono::milliseconds duration);  // false when stopping
  void ChangedLocked();
  void GroupsChangedLocked();  // a pod of a group was added, changed or removed
  void PutPodLocked(const std::string& key, PodPtr pod);
  void RemovePodLocked(const std::string& key);
  NodePtr WithPodsLocked(NodeState node) const;  // `node` with its pods from pods_by_node_

  TransportFactory make_transport_;
  NodeCacheOptions options_;

  mutable std::mutex mu_;
  mutable std::condition_variable changed_;
  // Notified by Stop() only. A watch that failed (a TASPolicy CRD that is not installed)
  // waits on it before retrying; on changed_ it was woken by every other watch's event.
  std::condition_variable stop_requested_;
  // Written under mu_ (condition variables wait on it); atomic because it is also every
  // request's cancel flag, read by transports without the lock.
  std::atomic<bool> stopping_{false};
  bool started_ = false;
  std::vector<std::thread> threads_;
  WatchState watches_[3];
  // Published nodes, with their pods as of the last snapshot; the names in dirty_nodes_ have
  // pods that changed since, and are copied with their new pods by the next Snapshot()
  // (mutable: published lazily, so a burst of pod events copies each node once).
  mutable std::map<std::string, NodePtr, std::less<>> nodes_;
  mutable std::set<std::string, std::less<>> dirty_nodes_;
  // nodes_' values in name order as the last snapshot published them, valid while index_ is:
  // a snapshot copies it and replaces the nodes named in replaced_ (changed since) by their
  // positions, instead of walking the map, the larger part of a snapshot's cost.
  mutable std::vector<NodePtr> ordered_;
  mutable std::set<std::string, std::less<>> replaced_;
  PodsByKey pods_;                                              // non-terminal pods, by key
  std::map<std::string, PodsByKey, std::less<>> pods_by_node_;  // spec.nodeName -> its pods
  std::map<std::string, PodsByKey> group_members_;              // "namespace/podGroup" -> its pods
  mutable std::map<std::string, PodGroupPtr> groups_;           // published, as group_members_ was
  mutable std::set<std::string> dirty_groups_;
  std::map<std::string, config::Policy> policies_;
  std::map<std::string, std::string> invalid_policies_;
  std::uint64_t version_ = 0;
  std::uint64_t groups_version_ = 0;
  mutable std::condition_variable groups_changed_;  // notified when groups_version_ moves
  std::uint64_t status_changes_ = 0;
  mutable NodeIndexPtr index_;  // of nodes_' names; reset when a node joins or leaves
  mutable std::shared_ptr<const ClusterSnapshot> snapshot_;  // of version_, built on demand
};

// The Node fields the cache keeps (pods excluded), from a v1 Node object.
NodeState NodeStateFromJson(const nlohmann::json& node);
// Which of a Node's labels and annotations NodeState keeps: those scoring and the cluster
// writer read (the power model's temperature ranges, `tensorflow/*` model labels and
// `powerctl.io/*` annotations; labels that labeling and deschedule policies write). A cloud
// node carries 15-30 labels and several annotations, and at 5,000 nodes keeping them all was
// 8 MiB, the largest part of the extender's cluster state.
bool ScoringReadsLabel(const std::string& key, const std::string& value);
bool ScoringReadsAnnotation(const std::string& key);

}  // namespace powerctl::cluster
