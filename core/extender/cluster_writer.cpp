// The leader's writes: TASPolicy node labels and pod-group touches.

#include "core/extender/cluster_writer.h"

#include "core/cluster/lease.h"
#include "core/scoring/pod_groups.h"
#include "core/scoring/policies.h"

#include <algorithm>
#include <set>
#include <utility>
#include <vector>

namespace powerctl::extender {
namespace {

using json = nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

bool HasStrategy(const config::Policy& policy, const char* strategy) {
  return policy.strategies.count(strategy) > 0;
}

void AddMetrics(const config::Policy& policy, const char* strategy,
                std::set<std::string>& metrics) {
  auto it = policy.strategies.find(strategy);
  if (it == policy.strategies.end()) return;
  for (const config::PolicyRule& rule : it->second.rules) metrics.insert(rule.metric_name);
}

// Labels under the labeling prefix whose policy no longer exists (the policy was deleted, or
// lost its labeling strategy): TAS' Cleanup() removed them on delete.
std::vector<scoring::LabelChange> OrphanLabelingChanges(const std::set<std::string>& names,
                                                        const scoring::NodeLabels& nodes) {
  std::vector<scoring::LabelChange> out;
  const std::string prefix = config::kLabelingPrefix;
  for (const auto& [node, labels] : nodes) {
    for (const auto& [key, value] : *labels) {
      if (key.rfind(prefix, 0) != 0) continue;
      std::size_t slash = key.find('/', prefix.size());
      if (slash == std::string::npos) continue;
      std::string policy = key.substr(prefix.size(), slash - prefix.size());
      if (names.count(policy) == 0) {
        out.push_back({node, key, std::nullopt, "no labeling policy named " + policy + " is left"});
      }
    }
  }
  return out;
}

// The part of a touch annotation that names the group's membership ("members=<hash>").
std::string Marker(const std::string& annotation) {
  std::size_t semicolon = annotation.find(';');
  return semicolon == std::string::npos ? annotation : annotation.substr(semicolon + 1);
}

}  // namespace

ClusterWriter::ClusterWriter(ClusterWriterDeps deps, server::MetricsRegistry& metrics,
                             ClusterWriterOptions options)
    : deps_(std::move(deps)),
      options_(options),
      label_writes_(metrics.Counter("powerctl_extender_node_label_patches_total",
                                    "Node label patches of deschedule and labeling policies, by "
                                    "result (ok, error)",
                                    {"result"})),
      touches_(metrics.Counter("powerctl_extender_pod_group_touches_total",
                               "Waiting pods of completed pod groups annotated so kube-scheduler "
                               "requeues them, by result (ok, gone, error)",
                               {"result"})) {}

ClusterWriter::~ClusterWriter() {
  Stop();
}

LabelPassResult ClusterWriter::SyncLabels(const cluster::ClusterSnapshot& snapshot) {
  std::vector<config::Policy> deschedule;
  std::vector<const config::Policy*> labeling;
  std::set<std::string> deschedule_names;
  std::set<std::string> labeling_names;
  std::set<std::string> metrics;
  for (const auto& [key, policy] : snapshot.policies) {
    if (HasStrategy(policy, config::kDeschedule)) {
      deschedule.push_back(policy);
      deschedule_names.insert(policy.name);
      AddMetrics(policy, config::kDeschedule, metrics);
    }
    if (HasStrategy(policy, config::kLabeling)) {
      labeling.push_back(&policy);
      labeling_names.insert(policy.name);
      AddMetrics(policy, config::kLabeling, metrics);
    }
  }
  scoring::NodeLabels nodes;
  for (const cluster::NodePtr& node : snapshot.nodes) nodes[node->name] = &node->facts.labels;
  scoring::MetricValues values;
  if (deps_.policy_metrics != nullptr && !metrics.empty() && !nodes.empty()) {
    values = scoring::CollectMetricValues(*deps_.policy_metrics, metrics, snapshot.NodeInfos());
  }

  std::vector<scoring::LabelChange> changes =
      scoring::DescheduleLabelChanges(deschedule, nodes, values);
  for (const config::Policy* policy : labeling) {
    auto more = scoring::LabelingChanges(*policy, nodes, values);
    changes.insert(changes.end(), more.begin(), more.end());
  }
  if (deps_.policies_synced()) {
    // Only `<name>=violating` labels of names this process saw as deschedule policies are
    // ours to remove: a bare policy name could be anyone's label key.
    for (const std::string& name : deschedule_names_) {
      if (deschedule_names.count(name) > 0) continue;
      auto more = scoring::DescheduleCleanup(name, nodes);
      changes.insert(changes.end(), more.begin(), more.end());
    }
    deschedule_names_ = deschedule_names;
    auto orphans = OrphanLabelingChanges(labeling_names, nodes);
    changes.insert(changes.end(), orphans.begin(), orphans.end());
  } else {
    deschedule_names_.insert(deschedule_names.begin(), deschedule_names.end());
  }

  LabelPassResult result;
  std::map<std::string, json> patches;  // node -> labels to set (null removes)
  for (const scoring::LabelChange& c : changes) {
    json& labels = patches[c.node];
    if (labels.contains(c.key)) continue;  // the first strategy to decide a key wins
    labels[c.key] = c.value ? json(*c.value) : json(nullptr);
    ++result.changes;
    if (deps_.log) {
      if (c.value) {
        deps_.log->info("node {}: label {}={} ({})", c.node, c.key, *c.value, c.reason);
      } else {
        deps_.log->info("node {}: label {} removed ({})", c.node, c.key, c.reason);
      }
    }
  }
  for (const auto& [node, labels] : patches) {
    Result<json> patched =
        deps_.client->MergePatch("/api/v1/nodes/" + node, {{"metadata", {{"labels", labels}}}});
    if (patched.ok()) {
      ++result.patched;
      label_writes_.Inc({"ok"});
    } else {
      ++result.failed;
      label_writes_.Inc({"error"});
      if (deps_.log)
        deps_.log->warn("node {}: labels not written: {}", node, patched.error().message);
    }
  }
  return result;
}

TouchResult ClusterWriter::TouchCompleteGroups(const cluster::ClusterSnapshot& snapshot) {
  std::string now = cluster::FormatMicroTime(deps_.wall_now());
  std::vector<scoring::PodTouch> touches;
  std::set<std::string> members;  // of any group: touched_ forgets the others
  for (const auto& [group_key, group] : snapshot.pod_groups) {
    const std::vector<cluster::PodInfo>& pods = *group;
    for (const cluster::PodInfo& p : pods) members.insert(p.Key());
    // Any waiting member stands for the group: PodsToTouch covers all waiting members.
    auto waiting = std::find_if(pods.begin(), pods.end(), [](const cluster::PodInfo& p) {
      return p.node_name.empty() && !p.Terminal() && !p.deleting;
    });
    if (waiting == pods.end()) continue;
    scoring::PodGroupVerdict verdict = scoring::EvaluatePodGroup(*waiting, pods);
    for (scoring::PodTouch& t : scoring::PodsToTouch(verdict, "", now)) {
      // The cache may not have seen an annotation written a moment ago.
      auto done = touched_.find(t.namespace_ + "/" + t.name);
      if (done != touched_.end() && done->second == Marker(t.annotation_value)) continue;
      touches.push_back(std::move(t));
    }
  }
  for (auto it = touched_.begin(); it != touched_.end();) {
    it = members.count(it->first) == 0 ? touched_.erase(it) : std::next(it);
  }
  if (touches.empty()) return {};

  TouchResult result = TouchPods(*deps_.client, touches);
  for (const std::string& key : result.touched) {
    touches_.Inc({"ok"});
    if (deps_.log) deps_.log->info("pod {}: its group is complete; touched so it is retried", key);
  }
  touches_.Inc({"gone"}, static_cast<double>(result.gone.size()));
  for (const std::string& error : result.errors) {
    touches_.Inc({"error"});
    if (deps_.log) deps_.log->warn("{}", error);
  }
  // Remembered until the cache shows the annotation; a failed touch is tried again at the next
  // pass of the loop (Run), within change_poll.
  for (const scoring::PodTouch& t : touches) {
    std::string key = t.namespace_ + "/" + t.name;
    if (std::find(result.touched.begin(), result.touched.end(), key) != result.touched.end()) {
      touched_[key] = Marker(t.annotation_value);
    }
  }
  return result;
}

void ClusterWriter::Start() {
  if (thread_.joinable()) return;
  thread_ = std::thread([this] { Run(); });
}

void ClusterWriter::Stop() {
  stopping_ = true;
  if (thread_.joinable()) thread_.join();
}

void ClusterWriter::Run() {
  bool was_leader = false;
  std::uint64_t seen_groups = 0;
  // A failed patch changes nothing the cache sees, so the groups do not wake the loop for it:
  // it is retried at each pass (change_poll apart) until it succeeds.
  bool touches_failed = false;
  SteadyClock::time_point next_labels{};
  while (!stopping_) {
    bool leader = deps_.is_leader();
    auto snapshot = leader ? deps_.snapshot() : nullptr;
    if (snapshot != nullptr) {
      // A new leader starts with both jobs at once: the old one may have left work undone.
      if (!was_leader || SteadyClock::now() >= next_labels) {
        SyncLabels(*snapshot);
        next_labels = SteadyClock::now() + options_.label_interval;
      }
      if (!was_leader || snapshot->groups_version != seen_groups || touches_failed) {
        seen_groups = snapshot->groups_version;
        touches_failed = !TouchCompleteGroups(*snapshot).errors.empty();
      }
    }
    was_leader = snapshot != nullptr;
    auto wait = options_.change_poll;
    if (was_leader) {
      auto to_labels =
          std::chrono::duration_cast<std::chrono::milliseconds>(next_labels - SteadyClock::now());
      wait = std::clamp(to_labels, std::chrono::milliseconds(1), options_.change_poll);
    }
    if (was_leader && deps_.wait_for_change) {
      deps_.wait_for_change(seen_groups, wait);
    } else {
      std::this_thread::sleep_for(std::min(wait, std::chrono::milliseconds(200)));
    }
  }
}

}  // namespace powerctl::extender
