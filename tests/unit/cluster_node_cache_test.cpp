// NodeCache: list+watch of Nodes, Pods and TASPolicies into snapshots, against the in-memory
// watch server (tests/unit/fake_watch_server.h); and, when POWERCTL_E2E_KUBECONFIG names a
// kubeconfig, against a real kube-apiserver.
#include "core/cluster/node_cache.h"
#include "core/kube/connection.h"
#include "core/scoring/pod_groups.h"
#include "core/telemetry/metrics_api.h"
#include "tests/unit/fake_watch_server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <sstream>
#include <thread>

namespace powerctl::cluster {
namespace {

using json = nlohmann::json;
using kube::fake::FakeWatchServer;
using std::chrono::milliseconds;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr milliseconds kWait{10000};  // generous: only reached when a test fails

json Node(const std::string& name, const std::string& ip, json labels = json::object()) {
  return {
      {"apiVersion", "v1"},
      {"kind", "Node"},
      {"metadata",
       {{"name", name},
        {"labels", labels},
        {"annotations", {{"a", "1"}, {"powerctl.io/idle-watts", "90"}}}}},
      {"status",
       {{"capacity", {{"cpu", "8"}, {"memory", "16Gi"}}},
        {"allocatable", {{"cpu", "7500m"}, {"memory", "15Gi"}}},
        {"addresses",
         {{{"type", "InternalIP"}, {"address", ip}}, {{"type", "Hostname"}, {"address", name}}}}}}};
}

json Pod(const std::string& ns, const std::string& name, const std::string& node,
         const std::string& cpu, json labels = json::object(),
         const std::string& phase = "Running") {
  json spec = {{"containers",
                {{{"name", "c1"}, {"resources", {{"requests", {{"cpu", cpu}, {"memory", "1Gi"}}}}}},
                 {{"name", "c2"}, {"resources", {{"requests", {{"cpu", cpu}}}}}}}}};
  if (!node.empty()) spec["nodeName"] = node;
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"namespace", ns}, {"labels", labels}}},
          {"spec", spec},
          {"status", {{"phase", phase}, {"startTime", "2026-01-01T00:00:00Z"}}}};
}

json Policy(const std::string& ns, const std::string& name, const std::string& op = "LessThan") {
  return {{"apiVersion", "telemetry.intel.com/v1alpha1"},
          {"kind", "TASPolicy"},
          {"metadata", {{"name", name}, {"namespace", ns}}},
          {"spec",
           {{"strategies",
             {{"scheduleonmetric", {{"rules", {{{"metricname", "power"}, {"operator", op}}}}}}}}}}};
}

class NodeCacheTest : public ::testing::Test {
 protected:
  std::unique_ptr<NodeCache> MakeCache(std::shared_ptr<spdlog::logger> log = nullptr) {
    NodeCacheOptions options;
    options.watch_timeout_seconds = 300;  // as in production: Stop() must not wait for it
    options.restart_after = milliseconds(20);
    options.client.log = std::move(log);
    options.client.max_attempts = 2;
    options.client.initial_backoff = milliseconds(1);
    options.client.max_backoff = milliseconds(5);
    return std::make_unique<NodeCache>(
        [this]() -> Result<std::unique_ptr<kube::HttpTransport>> { return server.Transport(); },
        options);
  }

  FakeWatchServer server;
};

TEST_F(NodeCacheTest, ListsIntoASnapshot) {
  server.Put(Node("n1", "10.0.0.1", {{"ambient/max", "40"}}));
  server.Put(Node("n2", "10.0.0.2"));
  server.Put(Pod("team", "web", "n1", "250m", {{"podGroup", "g"}, {"minAvailable", "2"}}));
  server.Put(Pod("team", "db", "n1", "500m"));
  server.Put(Pod("team", "wait", "", "1", {{"podGroup", "g"}, {"minAvailable", "2"}}, "Pending"));
  server.Put(Pod("team", "done", "n2", "1", json::object(), "Succeeded"));
  server.Put(Policy("team", "power"));
  json broken = Policy("team", "broken", "Lt");
  server.Put(broken);
  auto cache = MakeCache();
  EXPECT_FALSE(cache->HasSynced());
  cache->Start();
  ASSERT_TRUE(
      cache->WaitFor([](const ClusterSnapshot& s) { return s.policies.size() == 1; }, kWait));
  ASSERT_TRUE(cache->WaitForStatus([](const CacheStatus& s) { return s.ready; }, kWait));
  EXPECT_TRUE(cache->HasSynced());
  auto snap = cache->Snapshot();
  ASSERT_EQ(snap->nodes.size(), 2u);
  ASSERT_NE(snap->FindNode("n1"), nullptr);
  const NodeState& n1 = *snap->FindNode("n1");
  EXPECT_EQ(n1.cpu_capacity, 8);
  EXPECT_EQ(n1.cpu_allocatable, 7.5);
  EXPECT_EQ(n1.memory_allocatable, 15.0 * 1024 * 1024 * 1024);
  EXPECT_EQ(n1.facts.labels.at("ambient/max"), "40");
  EXPECT_EQ(n1.facts.annotations,
            (std::map<std::string, std::string>{{"powerctl.io/idle-watts", "90"}}));
  EXPECT_EQ(n1.info.internal_ips, std::vector<std::string>{"10.0.0.1"});
  ASSERT_EQ(n1.pods.size(), 2u);
  EXPECT_EQ(n1.pods[0]->name, "db");
  EXPECT_EQ(n1.pods[0]->requests.cpu_cores, 1.0);  // two containers of 500m
  EXPECT_EQ(n1.pods[0]->started, telemetry::ParseRfc3339("2026-01-01T00:00:00Z"));
  EXPECT_TRUE(n1.pods[0]->started.has_value());
  EXPECT_FALSE(n1.pods[0]->uid.empty());
  EXPECT_DOUBLE_EQ(n1.requested.cpu_cores, 1.5);
  EXPECT_TRUE(snap->FindNode("n2")->pods.empty());  // the Succeeded pod is not listed
  EXPECT_EQ(snap->pod_count, 3u);
  ASSERT_EQ(snap->PodGroup("team", "g").size(), 2u);
  EXPECT_TRUE(snap->PodGroup("team", "nope").empty());
  EXPECT_EQ(snap->policies.at("team/power").strategies.count("scheduleonmetric"), 1u);
  EXPECT_THAT(snap->invalid_policies.at("team/broken"), HasSubstr("operator: must be one of"));
  EXPECT_EQ(snap->NodeInfos().size(), 2u);
  // The field selector kube-scheduler uses went to the server.
  EXPECT_THAT(server.Requests(),
              ::testing::Contains(HasSubstr("fieldSelector=status.phase%21%3DSucceeded")));
  cache->Stop();
}

TEST(NodeStateTest, KeepsOnlyTheLabelsAndAnnotationsScoringReads) {
  json node = {{"metadata",
                {{"name", "n1"},
                 {"labels",
                  {{"zone", "a"},
                   {"kubernetes.io/hostname", "n1"},
                   {"ambient/min", "10"},
                   {"cpu2/max", "90"},
                   {"cpu1/minimum", "1"},
                   {"ambient", "x"},
                   {"tensorflow/host", "model.example"},
                   {"telemetry.aware.scheduling.power/hot", "true"},
                   {"power-policy", "violating"},
                   {"other-policy", "fine"}}},
                 {"annotations",
                  {{"powerctl.io/idle-watts", "80"},
                   {"node.alpha.kubernetes.io/ttl", "0"},
                   {"kubectl.kubernetes.io/last-applied-configuration", std::string(4096, 'x')}}},
                 {"managedFields", json::array({{{"manager", "kubectl"}}})}}},
               {"status", {{"allocatable", {{"cpu", "4"}, {"memory", "8Gi"}, {"pods", "250"}}}}}};
  NodeState state = NodeStateFromJson(node);
  EXPECT_EQ(state.name, "n1");
  EXPECT_EQ(state.facts.labels,
            (std::map<std::string, std::string>{{"ambient/min", "10"},
                                                {"cpu2/max", "90"},
                                                {"tensorflow/host", "model.example"},
                                                {"telemetry.aware.scheduling.power/hot", "true"},
                                                {"power-policy", "violating"}}));
  EXPECT_EQ(state.facts.annotations,
            (std::map<std::string, std::string>{{"powerctl.io/idle-watts", "80"}}));
  EXPECT_EQ(state.cpu_allocatable, 4);
  EXPECT_EQ(state.pods_allocatable, 250);  // what caps how far the fill cost looks
  // Addresses come from status, not labels: a series still maps by hostname and IP.
  EXPECT_EQ(state.info.name, "n1");
}

TEST(ClusterSnapshotTest, PutNodeKeepsNodesSortedForFindNode) {
  ClusterSnapshot snapshot;
  for (const char* name : {"c", "a", "b"}) {
    NodeState node;
    node.name = name;
    snapshot.PutNode(node);
  }
  NodeState replaced;
  replaced.name = "b";
  replaced.unschedulable = true;
  snapshot.PutNode(replaced);
  ASSERT_EQ(snapshot.nodes.size(), 3u);
  EXPECT_EQ(snapshot.nodes[0]->name, "a");
  EXPECT_EQ(snapshot.nodes[2]->name, "c");
  ASSERT_NE(snapshot.FindNode("b"), nullptr);
  EXPECT_TRUE(snapshot.FindNode("b")->unschedulable);
  EXPECT_EQ(snapshot.FindNode("bb"), nullptr);
  EXPECT_EQ(snapshot.FindNodePtr("a").get(), snapshot.FindNode("a"));
}

TEST(ClusterSnapshotTest, TheIndexFindsWhatTheBinarySearchFinds) {
  ClusterSnapshot snapshot;
  for (int i = 0; i < 3000; ++i) {
    NodeState node;
    node.name =
        "node-" + std::to_string(i * 7 % 3000) + (i % 3 == 0 ? ".a-long-domain.example" : "");
    snapshot.PutNode(std::move(node));
  }
  std::vector<std::size_t> searched;
  for (const NodePtr& node : snapshot.nodes)
    searched.push_back(snapshot.FindNodePosition(node->name));
  EXPECT_EQ(snapshot.FindNodePosition("node-1.a"), kNoNode);
  snapshot.IndexNodes();
  ASSERT_NE(snapshot.index, nullptr);
  EXPECT_EQ(snapshot.index->size(), 3000u);
  for (std::size_t i = 0; i < snapshot.nodes.size(); ++i) {
    EXPECT_EQ(searched[i], i);
    EXPECT_EQ(snapshot.FindNodePosition(snapshot.nodes[i]->name), i);
  }
  for (const char* absent : {"", "node-", "node-3000", "node-1.a", "Node-1"})
    EXPECT_EQ(snapshot.FindNodePosition(absent), kNoNode) << absent;
  // Replacing a node keeps the index; adding one drops it (lookups search again).
  NodeState replaced;
  replaced.name = snapshot.nodes[5]->name;
  snapshot.PutNode(replaced);
  EXPECT_NE(snapshot.index, nullptr);
  NodeState added;
  added.name = "a-new-node";
  snapshot.PutNode(added);
  EXPECT_EQ(snapshot.index, nullptr);
  EXPECT_EQ(snapshot.FindNodePosition("a-new-node"), 0u);
  EXPECT_EQ(ClusterSnapshot{}.FindNodePosition("x"), kNoNode);
  ClusterSnapshot empty;
  empty.IndexNodes();
  EXPECT_EQ(empty.FindNodePosition("x"), kNoNode);
}

TEST_F(NodeCacheTest, SnapshotsShareTheIndexUntilANodeJoinsOrLeaves) {
  server.Put(Node("n1", "10.0.0.1"));
  auto cache = MakeCache();
  cache->Start();
  ASSERT_TRUE(cache->WaitForSync(kWait));
  NodeIndexPtr first = cache->Snapshot()->index;
  ASSERT_NE(first, nullptr);
  // A pod bound to n1 and a change of n1 make new snapshots with the same names.
  server.Put(Pod("team", "a", "n1", "1", {}, "Running"));
  ASSERT_TRUE(cache->WaitFor(
      [](const ClusterSnapshot& s) { return s.FindNode("n1")->pods.size() == 1; }, kWait));
  server.Put(Node("n1", "10.0.0.1", {{"ambient/min", "5"}}));
  ASSERT_TRUE(cache->WaitFor(
      [](const ClusterSnapshot& s) {
        return s.FindNode("n1")->facts.labels.count("ambient/min") == 1;
      },
      kWait));
  EXPECT_EQ(cache->Snapshot()->index, first);
  // A node joins: a new index that finds both.
  server.Put(Node("n0", "10.0.0.2"));
  ASSERT_TRUE(cache->WaitFor([](const ClusterSnapshot& s) { return s.nodes.size() == 2; }, kWait));
  auto joined = cache->Snapshot();
  ASSERT_NE(joined->index, nullptr);
  EXPECT_NE(joined->index, first);
  EXPECT_EQ(joined->FindNodePosition("n0"), 0u);
  EXPECT_EQ(joined->FindNodePosition("n1"), 1u);
  // One leaves: again.
  server.Delete("/api/v1/nodes/n0");
  ASSERT_TRUE(cache->WaitFor([](const ClusterSnapshot& s) { return s.nodes.size() == 1; }, kWait));
  auto left = cache->Snapshot();
  EXPECT_NE(left->index, joined->index);
  EXPECT_EQ(left->FindNodePosition("n1"), 0u);
  EXPECT_EQ(left->FindNodePosition("n0"), kNoNode);
}

TEST_F(NodeCacheTest, ANodeDeletedAndAddedAgainIsPublishedInPlace) {
  server.Put(Node("n1", "10.0.0.1"));
  server.Put(Node("n2", "10.0.0.2"));
  auto cache = MakeCache();
  cache->Start();
  ASSERT_TRUE(cache->WaitForSync(kWait));
  auto first = cache->Snapshot();
  ASSERT_EQ(first->nodes.size(), 2u);
  // Replaced under the same name, while the other node changes and a pod binds to the new one:
  // every snapshot on the way has each node at its name's position, as it is now.
  server.Delete("/api/v1/nodes/n1");
  server.Put(Node("n1", "10.0.0.9", {{"ambient/max", "30"}}));
  server.Put(Node("n2", "10.0.0.2", {{"ambient/min", "3"}}));
  server.Put(Pod("team", "a", "n1", "1"));
  ASSERT_TRUE(cache->WaitFor(
      [](const ClusterSnapshot& s) {
        for (std::size_t i = 0; i < s.nodes.size(); ++i) {
          if (s.FindNodePosition(s.nodes[i]->name) != i) return false;
        }
        const NodeState* n1 = s.FindNode("n1");
        const NodeState* n2 = s.FindNode("n2");
        return n1 != nullptr && n2 != nullptr && n1->facts.labels.count("ambient/max") == 1 &&
               n1->pods.size() == 1 && n2->facts.labels.count("ambient/min") == 1;
      },
      kWait));
  auto now = cache->Snapshot();
  ASSERT_EQ(now->nodes.size(), 2u);
  EXPECT_EQ(now->nodes[0]->name, "n1");
  EXPECT_EQ(now->nodes[1]->name, "n2");
  EXPECT_EQ(now->nodes[0]->info.internal_ips, std::vector<std::string>{"10.0.0.9"});
  EXPECT_NE(now->nodes[1], first->nodes[1]);           // its change was published
  EXPECT_TRUE(first->nodes[0]->facts.labels.empty());  // published states are never changed
}

TEST_F(NodeCacheTest, FollowsChanges) {
  server.Put(Node("n1", "10.0.0.1"));
  server.Put(Pod("team", "a", "", "1", {{"podGroup", "g"}, {"minAvailable", "2"}}, "Pending"));
  server.Put(Policy("team", "p", "LessThan"));
  auto cache = MakeCache();
  cache->Start();
  ASSERT_TRUE(cache->WaitFor([](const ClusterSnapshot& s) { return !s.policies.empty(); }, kWait));
  std::uint64_t version = cache->Snapshot()->version;

  server.Put(Node("n2", "10.0.0.2", {{"zone", "b"}}));
  server.Put(Pod("team", "b", "", "1", {{"podGroup", "g"}, {"minAvailable", "2"}}, "Pending"));
  ASSERT_TRUE(cache->WaitFor(
      [](const ClusterSnapshot& s) {
        return s.nodes.size() == 2 && s.PodGroup("team", "g").size() == 2;
      },
      kWait));
  EXPECT_GT(cache->Snapshot()->version, version);
  // The group is complete for pod a now.
  auto snap = cache->Snapshot();
  const std::vector<PodInfo>& group = snap->PodGroup("team", "g");
  auto a = std::find_if(group.begin(), group.end(), [](const PodInfo& p) { return p.name == "a"; });
  ASSERT_NE(a, group.end());
  auto verdict = scoring::EvaluatePodGroup(*a, group);
  EXPECT_TRUE(verdict.complete);

  // Bound, then finished: it leaves the node and the group.
  cluster::NodePtr n1_before = snap->FindNodePtr("n1");
  cluster::NodePtr n2_before = snap->FindNodePtr("n2");
  server.Put(Pod("team", "b", "n2", "1", {{"podGroup", "g"}, {"minAvailable", "2"}}, "Running"));
  ASSERT_TRUE(cache->WaitFor(
      [](const ClusterSnapshot& s) { return s.FindNode("n2")->pods.size() == 1; }, kWait));
  // Copy on write: only the node the pod was bound to is new.
  EXPECT_EQ(cache->Snapshot()->FindNodePtr("n1"), n1_before);
  EXPECT_NE(cache->Snapshot()->FindNodePtr("n2"), n2_before);
  EXPECT_TRUE(n2_before->pods.empty());  // published states are never changed
  server.Put(Pod("team", "b", "n2", "1", {{"podGroup", "g"}, {"minAvailable", "2"}}, "Succeeded"));
  ASSERT_TRUE(cache->WaitFor(
      [](const ClusterSnapshot& s) {
        return s.FindNode("n2")->pods.empty() && s.PodGroup("team", "g").size() == 1;
      },
      kWait));

  // A policy update replaces the policy (TAS issue #60 added the new rule instead).
  server.Put(Policy("team", "p", "GreaterThan"));
  ASSERT_TRUE(cache->WaitFor(
      [](const ClusterSnapshot& s) {
        const auto& rules = s.policies.at("team/p").strategies.at("scheduleonmetric").rules;
        return rules.size() == 1 && rules[0].op == "GreaterThan";
      },
      kWait));
  // Broken by an update: moves to invalid; deleted: gone.
  server.Put(Policy("team", "p", "Bad"));
  ASSERT_TRUE(cache->WaitFor(
      [](const ClusterSnapshot& s) { return s.policies.empty() && s.invalid_policies.size() == 1; },
      kWait));
  server.Delete("/api/v1/nodes/n1");
  server.Delete("/apis/telemetry.intel.com/v1alpha1/namespaces/team/taspolicies/p");
  ASSERT_TRUE(cache->WaitFor(
      [](const ClusterSnapshot& s) { return s.nodes.size() == 1 && s.invalid_policies.empty(); },
      kWait));
  cache->Stop();
}

TEST_F(NodeCacheTest, OnlyPodsOfGroupsMoveTheGroupsVersion) {
  server.Put(Node("n1", "10.0.0.1"));
  server.Put(Node("n2", "10.0.0.2"));
  auto cache = MakeCache();
  cache->Start();
  ASSERT_TRUE(cache->WaitForSync(kWait));
  auto before = cache->Snapshot();
  // A bind of a pod outside any group (every scheduled pod's) changes the snapshot, its
  // node among many that stay shared, but not the groups: a groups waiter sleeps through it.
  server.Put(Pod("team", "web", "n2", "1"));
  ASSERT_TRUE(cache->WaitFor(
      [](const ClusterSnapshot& s) { return s.FindNode("n2")->pods.size() == 1; }, kWait));
  auto bound = cache->Snapshot();
  EXPECT_GT(bound->version, before->version);
  EXPECT_EQ(bound->groups_version, before->groups_version);
  EXPECT_EQ(bound->FindNodePtr("n1"), before->FindNodePtr("n1"));
  EXPECT_EQ(bound->FindNodePosition("n2"), 1u);
  EXPECT_EQ(bound->nodes[1]->name, "n2");
  EXPECT_FALSE(cache->WaitForGroupsChange(bound->groups_version, milliseconds(200)));
  // A member of a group wakes it.
  std::thread put([this] {
    std::this_thread::sleep_for(milliseconds(50));
    server.Put(Pod("team", "a", "", "1", {{"podGroup", "g"}, {"minAvailable", "2"}}, "Pending"));
  });
  EXPECT_TRUE(cache->WaitForGroupsChange(bound->groups_version, kWait));
  put.join();
  auto grouped = cache->Snapshot();
  EXPECT_GT(grouped->groups_version, bound->groups_version);
  EXPECT_EQ(grouped->PodGroup("team", "g").size(), 1u);
  // After Stop() a wait still lasts its timeout: a loop around it cannot spin.
  cache->Stop();
  auto before_wait = std::chrono::steady_clock::now();
  EXPECT_FALSE(cache->WaitForGroupsChange(grouped->groups_version, milliseconds(100)));
  EXPECT_GE(std::chrono::steady_clock::now() - before_wait, milliseconds(100));
}

TEST_F(NodeCacheTest, AMissingPolicyCrdIsANoteNotAFailure) {
  server.SetServed("taspolicies", false);
  server.Put(Node("n1", "10.0.0.1"));
  auto cache = MakeCache();
  cache->Start();
  ASSERT_TRUE(cache->WaitForStatus(
      [](const CacheStatus& s) { return s.ready && !s.policy_note.empty(); }, kWait));
  EXPECT_THAT(cache->Status().policy_note, HasSubstr("TASPolicy CRD"));
  EXPECT_THAT(cache->Status().policy_note, HasSubstr("not installed"));
  // Installed later: picked up at the next restart of the policy watch.
  server.SetServed("taspolicies", true);
  server.Put(Policy("team", "p"));
  ASSERT_TRUE(cache->WaitFor([](const ClusterSnapshot& s) { return !s.policies.empty(); }, kWait));
  ASSERT_TRUE(
      cache->WaitForStatus([](const CacheStatus& s) { return s.policy_note.empty(); }, kWait));
  cache->Stop();
}

TEST_F(NodeCacheTest, DegradesWhileTheServerIsDownAndResyncsAfterwards) {
  server.Put(Node("n1", "10.0.0.1"));
  server.Put(Node("n2", "10.0.0.2"));
  server.Put(Pod("team", "a", "n1", "1"));
  auto cache = MakeCache();
  cache->Start();
  ASSERT_TRUE(cache->WaitForStatus([](const CacheStatus& s) { return s.ready; }, kWait));

  server.SetDown(true);
  ASSERT_TRUE(cache->WaitForStatus([](const CacheStatus& s) { return !s.ready; }, kWait));
  CacheStatus down = cache->Status();
  EXPECT_TRUE(down.synced);  // it was synced; the data is stale but there
  EXPECT_THAT(down.last_error, HasSubstr("fake API server"));
  EXPECT_EQ(cache->Snapshot()->nodes.size(), 2u);  // serving the last known state

  // Changes while down, with the history gone: only a new list can tell.
  server.Delete("/api/v1/nodes/n2");
  server.Delete("/api/v1/namespaces/team/pods/a");
  server.Put(Node("n3", "10.0.0.3"));
  server.Compact();
  server.SetDown(false);
  ASSERT_TRUE(cache->WaitFor(
      [](const ClusterSnapshot& s) {
        return s.nodes.size() == 2 && s.FindNode("n3") != nullptr && s.pod_count == 0;
      },
      kWait));
  ASSERT_TRUE(cache->WaitForStatus([](const CacheStatus& s) { return s.ready; }, kWait));
  EXPECT_EQ(cache->Status().last_error, "");
  cache->Stop();
}

TEST_F(NodeCacheTest, RelistsWhenTheWatchExpires) {
  server.Put(Node("n1", "10.0.0.1"));
  auto cache = MakeCache();
  cache->Start();
  ASSERT_TRUE(cache->WaitFor([](const ClusterSnapshot& s) { return s.nodes.size() == 1; }, kWait));
  server.Delete("/api/v1/nodes/n1");
  server.Put(Node("n2", "10.0.0.2"));
  server.Compact();       // the watches' versions are now too old...
  server.CloseWatches();  // ...and they must watch again: 410, relist
  ASSERT_TRUE(cache->WaitFor(
      [](const ClusterSnapshot& s) { return s.nodes.size() == 1 && s.FindNode("n2") != nullptr; },
      kWait));
  cache->Stop();
}

// Polls `condition` (the fake server has no change notification for open watches).
bool Eventually(const std::function<bool()>& condition) {
  for (auto deadline = std::chrono::steady_clock::now() + kWait;
       std::chrono::steady_clock::now() < deadline; std::this_thread::sleep_for(milliseconds(5))) {
    if (condition()) return true;
  }
  return false;
}

TEST_F(NodeCacheTest, StopCancelsIdleWatchesAndIsIdempotent) {
  std::ostringstream logged;
  auto log = std::make_shared<spdlog::logger>(
      "cache", std::make_shared<spdlog::sinks::ostream_sink_mt>(logged));
  log->set_level(spdlog::level::debug);
  server.Put(Node("n1", "10.0.0.1"));
  auto cache = MakeCache(log);
  cache->Start();
  ASSERT_TRUE(cache->WaitForStatus([](const CacheStatus& s) { return s.ready; }, kWait));
  // Nodes, pods and policies are all watched; the server holds them open for 5-10 minutes and
  // has nothing to send.
  ASSERT_TRUE(Eventually([this] { return server.OpenWatches() == 3; }));
  std::size_t requests = server.Requests().size();
  auto started = std::chrono::steady_clock::now();
  cache->Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(2));
  // Ended by the cancel, not by the server; then nothing retried, and nothing is wrong.
  EXPECT_EQ(server.OpenWatches(), 0);
  EXPECT_EQ(server.CancelledWatches(), 3);
  EXPECT_EQ(server.Requests().size(), requests);
  EXPECT_EQ(cache->Status().last_error, "");
  EXPECT_EQ(cache->Status().policy_note, "");
  EXPECT_THAT(logged.str(), Not(HasSubstr("fail")));
  EXPECT_EQ(cache->Snapshot()->nodes.size(), 1u);  // the last state stays readable
  cache->Stop();
  cache->Start();  // a stopped cache stays stopped
  EXPECT_EQ(server.OpenWatches(), 0);
  EXPECT_EQ(server.Requests().size(), requests);
}

TEST_F(NodeCacheTest, WatchesAskForJitteredFiveToTenMinuteTimeouts) {
  auto cache = MakeCache();
  cache->Start();
  ASSERT_TRUE(Eventually([this] { return server.OpenWatches() == 3; }));
  cache->Stop();
  int watches = 0;
  for (const std::string& request : server.Requests()) {
    std::size_t at = request.find("timeoutSeconds=");
    if (at == std::string::npos) continue;
    ++watches;
    int timeout_seconds = std::stoi(request.substr(at + 15));
    EXPECT_GE(timeout_seconds, 300) << request;
    EXPECT_LT(timeout_seconds, 600) << request;
  }
  EXPECT_EQ(watches, 3);
}

TEST_F(NodeCacheTest, WaitForSyncIsBoundedAndGivesUpOnAFailure) {
  server.Put(Node("n1", "10.0.0.1"));
  auto cache = MakeCache();
  EXPECT_FALSE(cache->WaitForSync(milliseconds(50)));  // not started: the timeout
  cache->Start();
  EXPECT_TRUE(cache->WaitForSync(kWait));
  cache->Stop();

  server.SetDown(true);
  auto unreachable = MakeCache();
  unreachable->Start();
  auto started = std::chrono::steady_clock::now();
  EXPECT_FALSE(unreachable->WaitForSync(kWait));
  EXPECT_LT(std::chrono::steady_clock::now() - started, kWait / 2);  // the first failure ends it
  unreachable->Stop();
}

TEST_F(NodeCacheTest, TransportFailuresAreReported) {
  NodeCacheOptions options;
  options.restart_after = milliseconds(10);
  NodeCache cache(
      []() -> Result<std::unique_ptr<kube::HttpTransport>> {
        return MakeError(ErrorCode::kInvalidInput, "kubeconfig: no current-context");
      },
      options);
  cache.Start();
  ASSERT_TRUE(
      cache.WaitForStatus([](const CacheStatus& s) { return !s.last_error.empty(); }, kWait));
  EXPECT_EQ(cache.Status().last_error,
            "connecting to the API server: kubeconfig: no current-context");
  EXPECT_FALSE(cache.Status().ready);
  cache.Stop();
}

// ---- against a real kube-apiserver (skipped unless POWERCTL_E2E_KUBECONFIG is set) --------

class NodeCacheRealApiServer : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* kubeconfig = std::getenv("POWERCTL_E2E_KUBECONFIG");
    if (kubeconfig == nullptr || *kubeconfig == '\0') {
      GTEST_SKIP() << "set POWERCTL_E2E_KUBECONFIG to run against a real API server";
    }
    kube::ConnectionRequest request;
    request.kubeconfig_flag = kubeconfig;
    Result<kube::ClusterConnection> resolved = kube::ResolveConnection(request);
    ASSERT_TRUE(resolved.ok()) << resolved.error().message;
    connection = resolved.value();
    auto transport = make();
    ASSERT_TRUE(transport.ok()) << transport.error().message;
    admin = std::make_unique<kube::Client>(std::move(transport).value(), kube::ClientOptions{});
  }
  NodeCache::TransportFactory make = [this] { return kube::MakeCurlTransport(connection, {}); };
  kube::ClusterConnection connection;
  std::unique_ptr<kube::Client> admin;
};

TEST_F(NodeCacheRealApiServer, FollowsNodesAndPods) {
  kube::Client& api = *admin;
  std::string node =
      "cache-e2e-" +
      std::to_string(std::chrono::steady_clock::now().time_since_epoch().count() % 100000);
  api.Delete("/api/v1/nodes/" + node).ok();

  NodeCacheOptions options;
  options.watch_timeout_seconds = 5;
  options.restart_after = milliseconds(200);
  NodeCache cache(make, options);
  cache.Start();
  ASSERT_TRUE(
      cache.WaitForStatus([](const CacheStatus& s) { return s.ready; }, milliseconds(30000)))
      << cache.Status().last_error;

  json n = Node(node, "10.9.9.9", {{"powerctl-e2e", "cache"}, {"ambient/max", "35"}});
  n.erase("status");
  ASSERT_TRUE(api.Create("/api/v1/nodes", n).ok());
  // A pod bound to the node by nodeName (no scheduler needed); it stays Pending.
  json pod =
      Pod("default", node, node, "100m", {{"podGroup", node}, {"minAvailable", "2"}}, "Pending");
  pod.erase("status");
  pod["spec"]["containers"][0]["image"] = "example.invalid/none";
  pod["spec"]["containers"][1]["image"] = "example.invalid/none";
  pod["spec"]["tolerations"] = {{{"operator", "Exists"}}};
  auto created = api.Create("/api/v1/namespaces/default/pods", pod);
  ASSERT_TRUE(created.ok()) << created.error().message;
  ASSERT_TRUE(cache.WaitFor(
      [&](const ClusterSnapshot& s) {
        return s.FindNode(node) != nullptr && s.FindNode(node)->pods.size() == 1;
      },
      milliseconds(30000)));
  auto snap = cache.Snapshot();
  EXPECT_EQ(snap->FindNode(node)->facts.labels,
            (std::map<std::string, std::string>{{"ambient/max", "35"}}));
  EXPECT_DOUBLE_EQ(snap->FindNode(node)->requested.cpu_cores, 0.2);
  EXPECT_EQ(snap->PodGroup("default", node).size(), 1u);
  ASSERT_TRUE(api.Delete("/api/v1/namespaces/default/pods/" + node).ok());
  ASSERT_TRUE(api.Delete("/api/v1/nodes/" + node).ok());
  ASSERT_TRUE(cache.WaitFor([&](const ClusterSnapshot& s) { return s.FindNode(node) == nullptr; },
                            milliseconds(30000)));
  cache.Stop();
}

TEST_F(NodeCacheRealApiServer, StopEndsIdleWatchesAtOnce) {
  std::ostringstream logged;
  auto log = std::make_shared<spdlog::logger>(
      "cache", std::make_shared<spdlog::sinks::ostream_sink_mt>(logged));
  log->set_level(spdlog::level::debug);
  NodeCacheOptions options;  // the default 5-10 minute watch timeouts
  options.client.log = log;
  options.restart_after = milliseconds(200);
  NodeCache cache(
      [this, log] {
        kube::TransportOptions transport;
        transport.log = log;  // request lines, to see the watches end
        return kube::MakeCurlTransport(connection, transport);
      },
      options);
  cache.Start();
  ASSERT_TRUE(
      cache.WaitForStatus([](const CacheStatus& s) { return s.ready; }, milliseconds(30000)))
      << cache.Status().last_error;
  // Past the first progress callbacks, into the idle part of the streams (nothing to wait on).
  std::this_thread::sleep_for(milliseconds(1500));
  auto started = std::chrono::steady_clock::now();
  cache.Stop();
  // Without the cancel this takes until the server ends the watches, minutes from now.
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(3));
  EXPECT_EQ(cache.Status().last_error, "");
  EXPECT_THAT(logged.str(), Not(HasSubstr("fail")));
  // Both watches were open, with minutes left, when the cancel ended them.
  EXPECT_THAT(logged.str(), ::testing::ContainsRegex("nodes\\?watch=1.*cancelled after"));
  EXPECT_THAT(logged.str(), ::testing::ContainsRegex("pods\\?watch=1.*cancelled after"));
}

TEST_F(NodeCacheRealApiServer, PicksUpTasPoliciesOnceTheCrdIsInstalled) {
  const std::string crd_path =
      "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/taspolicies.telemetry.intel.com";
  bool had_crd = admin->Get(crd_path).ok();
  NodeCacheOptions options;
  options.watch_timeout_seconds = 5;
  options.restart_after = milliseconds(200);
  NodeCache cache(make, options);
  cache.Start();
  if (!had_crd) {
    ASSERT_TRUE(
        cache.WaitForStatus([](const CacheStatus& s) { return s.ready && !s.policy_note.empty(); },
                            milliseconds(30000)));
    EXPECT_THAT(cache.Status().policy_note, HasSubstr("not installed"));
    json crd = {
        {"apiVersion", "apiextensions.k8s.io/v1"},
        {"kind", "CustomResourceDefinition"},
        {"metadata", {{"name", "taspolicies.telemetry.intel.com"}}},
        {"spec",
         {{"group", "telemetry.intel.com"},
          {"scope", "Namespaced"},
          {"names",
           {{"kind", "TASPolicy"},
            {"listKind", "TASPolicyList"},
            {"plural", "taspolicies"},
            {"singular", "taspolicy"}}},
          {"versions",
           {{{"name", "v1alpha1"},
             {"served", true},
             {"storage", true},
             {"schema",
              {{"openAPIV3Schema",
                {{"type", "object"}, {"x-kubernetes-preserve-unknown-fields", true}}}}}}}}}}};
    auto created = admin->Create("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd);
    ASSERT_TRUE(created.ok()) << created.error().message;
  }
  std::string name =
      "cache-e2e-" +
      std::to_string(std::chrono::steady_clock::now().time_since_epoch().count() % 100000);
  // The CRD takes a moment to be served.
  Result<json> created = MakeError(ErrorCode::kNotFound, "not tried");
  for (int i = 0; i < 100 && !created.ok(); ++i) {
    created = admin->Create("/apis/telemetry.intel.com/v1alpha1/namespaces/default/taspolicies",
                            Policy("default", name));
    if (!created.ok()) std::this_thread::sleep_for(milliseconds(100));  // no event to wait on
  }
  ASSERT_TRUE(created.ok()) << created.error().message;
  ASSERT_TRUE(cache.WaitFor(
      [&](const ClusterSnapshot& s) { return s.policies.count("default/" + name) == 1; },
      milliseconds(30000)));
  EXPECT_EQ(cache.Status().policy_note, "");
  ASSERT_TRUE(
      admin->Delete("/apis/telemetry.intel.com/v1alpha1/namespaces/default/taspolicies/" + name)
          .ok());
  ASSERT_TRUE(cache.WaitFor(
      [&](const ClusterSnapshot& s) { return s.policies.count("default/" + name) == 0; },
      milliseconds(30000)));
  cache.Stop();
  if (!had_crd) {
    EXPECT_TRUE(admin->Delete(crd_path).ok());
  }
}

}  // namespace
}  // namespace powerctl::cluster
