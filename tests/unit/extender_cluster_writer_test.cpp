// The leader's writes against the in-memory API server: deschedule and labeling node labels
// (only the keys that change; cleanup of policies that are gone), pod-group touches, and the
// loop that runs them only while leading and wakes on cache changes.
#include "core/extender/cluster_writer.h"
#include "core/scoring/pod_groups.h"
#include "core/scoring/policies.h"
#include "tests/unit/fake_api_server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <thread>

namespace powerctl::extender {
namespace {

using json = nlohmann::json;
using kube::fake::FakeApiServer;

// Values per metric and node; a node absent from the map has no value.
class FakeMetrics : public scoring::MetricSource {
 public:
  Result<scoring::NodeMetricValues> Values(const std::string& metric,
                                           const std::vector<telemetry::NodeInfo>& nodes) override {
    std::lock_guard lock(mu);
    scoring::NodeMetricValues out;
    for (const telemetry::NodeInfo& n : nodes) {
      auto it = values[metric].find(n.name);
      if (it == values[metric].end()) {
        out[n.name].reason = "no value";
      } else {
        out[n.name].value = it->second;
      }
    }
    return out;
  }
  std::mutex mu;
  std::map<std::string, std::map<std::string, double>> values;
};

// Serialises a test thread and the writer's thread on the (single-threaded) fake server.
class LockedTransport : public kube::HttpTransport {
 public:
  LockedTransport(FakeApiServer& server, std::mutex& mu) : server_(server), mu_(mu) {}
  Result<kube::HttpResponse> Send(const kube::HttpRequest& request) override {
    std::lock_guard lock(mu_);
    return server_.Send(request);
  }
  Result<long> Stream(const kube::HttpRequest& request,
                      const std::function<bool(std::string_view)>& on_data,
                      std::string* error_body) override {
    std::lock_guard lock(mu_);
    return server_.Stream(request, on_data, error_body);
  }

 private:
  FakeApiServer& server_;
  std::mutex& mu_;
};

config::Policy LabelPolicy(const std::string& name, const char* strategy,
                           std::vector<std::string> labels = {}) {
  config::Policy p;
  p.name = name;
  p.namespace_ = "team";
  config::PolicyRule rule{"temp", "GreaterThan", 80, true, std::move(labels)};
  p.strategies[strategy].rules.push_back(rule);
  return p;
}

cluster::PodInfo GroupPod(const std::string& name, const std::string& node = "") {
  cluster::PodInfo p;
  p.namespace_ = "team";
  p.name = name;
  p.uid = "uid-" + name;
  p.phase = node.empty() ? "Pending" : "Running";
  p.node_name = node;
  p.labels = {{cluster::kPodGroupLabel, "g"}, {cluster::kMinAvailableLabel, "2"}};
  return p;
}

class ClusterWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    AddNode("n1", {{"zone", "a"}});
    AddNode("n2", {{"zone", "b"}});
  }

  void AddNode(const std::string& name, std::map<std::string, std::string> labels) {
    server.Put(kube::fake::NodeObject(name, labels));
    cluster::NodeState node;
    node.name = name;
    node.info.name = name;
    node.facts.name = name;
    node.facts.labels = std::move(labels);
    snapshot.PutNode(std::move(node));
  }
  // The labels the server holds now, copied into the snapshot (as the watch would).
  void Resync() {
    for (cluster::NodePtr& shared : snapshot.nodes) {
      cluster::NodeState node = *shared;
      node.facts.labels.clear();
      json labels = server.Object("/api/v1/nodes/" + node.name)["metadata"]["labels"];
      for (const auto& [k, v] : labels.items()) node.facts.labels[k] = v.get<std::string>();
      shared = std::make_shared<const cluster::NodeState>(std::move(node));
    }
  }
  json Labels(const std::string& node) {
    return server.Object("/api/v1/nodes/" + node)["metadata"]["labels"];
  }
  void AddPod(const cluster::PodInfo& pod) {
    ++snapshot.pod_count;
    auto group = snapshot.pod_groups["team/g"];
    auto pods = group ? std::make_shared<std::vector<cluster::PodInfo>>(*group)
                      : std::make_shared<std::vector<cluster::PodInfo>>();
    pods->push_back(pod);
    snapshot.pod_groups["team/g"] = std::move(pods);
    server.Put({{"apiVersion", "v1"},
                {"kind", "Pod"},
                {"metadata", {{"name", pod.name}, {"namespace", "team"}}},
                {"spec", {{"containers", json::array()}}}});
  }

  ClusterWriterDeps Deps() {
    ClusterWriterDeps d;
    d.client = client.get();
    d.policy_metrics = &metrics;
    d.snapshot = [this] { return std::make_shared<const cluster::ClusterSnapshot>(snapshot); };
    d.policies_synced = [this] { return policies_synced; };
    d.wall_now = [] { return std::chrono::system_clock::time_point(std::chrono::hours(500000)); };
    return d;
  }

  FakeApiServer server;
  std::unique_ptr<kube::Client> client = server.MakeClient();
  FakeMetrics metrics;
  server::MetricsRegistry registry;
  cluster::ClusterSnapshot snapshot;
  bool policies_synced = true;
};

TEST_F(ClusterWriterTest, DescheduleLabelsTheViolatingNodeAndRemovesItOnRecovery) {
  snapshot.policies["team/hot"] = LabelPolicy("hot", config::kDeschedule);
  metrics.values["temp"] = {{"n1", 90}, {"n2", 50}};
  ClusterWriter writer(Deps(), registry, {});
  server.ClearRequests();
  LabelPassResult pass = writer.SyncLabels(snapshot);
  EXPECT_EQ(pass.changes, 1);
  auto patches = server.MutatingRequests();
  ASSERT_EQ(patches.size(), 1u);
  EXPECT_EQ(patches[0].path, "/api/v1/nodes/n1");
  // Only the key that changes: the node's other labels are not the writer's.
  EXPECT_EQ(json::parse(patches[0].body),
            json::parse(R"({"metadata":{"labels":{"hot":"violating"}}})"));
  EXPECT_EQ(Labels("n1"), json::parse(R"({"zone":"a","hot":"violating"})"));

  Resync();
  server.ClearRequests();
  EXPECT_EQ(writer.SyncLabels(snapshot).changes, 0);  // nothing to do: no requests
  EXPECT_TRUE(server.MutatingRequests().empty());

  metrics.values["temp"].erase("n1");  // unknown: the label stays
  EXPECT_EQ(writer.SyncLabels(snapshot).changes, 0);
  metrics.values["temp"]["n1"] = 60;  // recovered
  EXPECT_EQ(writer.SyncLabels(snapshot).patched, 1);
  EXPECT_EQ(Labels("n1"), json::parse(R"({"zone":"a"})"));
  EXPECT_EQ(
      registry.Counter("powerctl_extender_node_label_patches_total", "", {"result"}).Value({"ok"}),
      2);
}

TEST_F(ClusterWriterTest, LabelingWritesPrefixedLabels) {
  snapshot.policies["team/lab"] = LabelPolicy("lab", config::kLabeling, {"tier=hot"});
  metrics.values["temp"] = {{"n1", 90}, {"n2", 50}};
  ClusterWriter writer(Deps(), registry, {});
  writer.SyncLabels(snapshot);
  EXPECT_EQ(Labels("n1")["telemetry.aware.scheduling.lab/tier"], "hot");
  EXPECT_FALSE(Labels("n2").contains("telemetry.aware.scheduling.lab/tier"));
}

TEST_F(ClusterWriterTest, LabelsOfPoliciesThatAreGoneAreRemovedOnlyWhenPoliciesAreSynced) {
  snapshot.policies["team/hot"] = LabelPolicy("hot", config::kDeschedule);
  snapshot.policies["team/lab"] = LabelPolicy("lab", config::kLabeling, {"tier=hot"});
  metrics.values["temp"] = {{"n1", 90}, {"n2", 50}};
  ClusterWriter writer(Deps(), registry, {});
  writer.SyncLabels(snapshot);
  Resync();
  ASSERT_EQ(
      Labels("n1"),
      json::parse(R"({"zone":"a","hot":"violating","telemetry.aware.scheduling.lab/tier":"hot"})"));

  snapshot.policies.clear();
  policies_synced = false;  // e.g. the TASPolicy watch is failing: an empty list proves nothing
  EXPECT_EQ(writer.SyncLabels(snapshot).changes, 0);
  policies_synced = true;
  EXPECT_EQ(writer.SyncLabels(snapshot).changes, 2);
  EXPECT_EQ(Labels("n1"), json::parse(R"({"zone":"a"})"));
}

TEST_F(ClusterWriterTest, AFailedPatchIsCountedAndTheOthersGoOn) {
  snapshot.policies["team/hot"] = LabelPolicy("hot", config::kDeschedule);
  metrics.values["temp"] = {{"n1", 90}, {"n2", 95}};
  server.FailRequests("/api/v1/nodes/n1", 403, "PATCH");
  ClusterWriter writer(Deps(), registry, {});
  LabelPassResult pass = writer.SyncLabels(snapshot);
  EXPECT_EQ(pass.failed, 1);
  EXPECT_EQ(pass.patched, 1);
  EXPECT_EQ(Labels("n2")["hot"], "violating");
  EXPECT_EQ(registry.Counter("powerctl_extender_node_label_patches_total", "", {"result"})
                .Value({"error"}),
            1);
}

TEST_F(ClusterWriterTest, TouchesWaitingPodsOnceWhenTheGroupCompletes) {
  ClusterWriter writer(Deps(), registry, {});
  AddPod(GroupPod("p0"));
  EXPECT_TRUE(writer.TouchCompleteGroups(snapshot).touched.empty());  // 1 of 2

  AddPod(GroupPod("p1"));
  AddPod(GroupPod("p2", "n1"));  // bound: nothing to requeue
  extender::TouchResult touched = writer.TouchCompleteGroups(snapshot);
  EXPECT_THAT(touched.touched, ::testing::ElementsAre("team/p0", "team/p1"));
  std::string annotation =
      server.Object("/api/v1/namespaces/team/pods/p0")["metadata"]["annotations"]
                                                      [cluster::kGroupCompleteAnnotation];
  EXPECT_THAT(annotation, ::testing::MatchesRegex("[0-9T:.Z-]+;members=[0-9a-f]{16}"));

  // The cache has not seen the annotation yet: no second touch for the same membership.
  server.ClearRequests();
  EXPECT_TRUE(writer.TouchCompleteGroups(snapshot).touched.empty());
  EXPECT_TRUE(server.MutatingRequests().empty());
  EXPECT_EQ(
      registry.Counter("powerctl_extender_pod_group_touches_total", "", {"result"}).Value({"ok"}),
      2);
}

TEST_F(ClusterWriterTest, TheLoopWritesOnlyWhileLeadingAndWakesOnChanges) {
  std::mutex server_mu;
  auto locked = std::make_unique<kube::Client>(std::make_unique<LockedTransport>(server, server_mu),
                                               kube::ClientOptions{});
  std::mutex mu;
  std::condition_variable changed;
  bool leader = false;
  bool stopping = false;   // ends the test's wait (the cache's waits end within change_poll)
  AddPod(GroupPod("p0"));  // a complete group, before the writer starts
  AddPod(GroupPod("p1"));
  server.ClearRequests();
  auto shared = std::make_shared<const cluster::ClusterSnapshot>(snapshot);
  ClusterWriterDeps deps = Deps();
  deps.client = locked.get();
  deps.snapshot = [&] {
    std::lock_guard lock(mu);
    return shared;
  };
  deps.is_leader = [&] {
    std::lock_guard lock(mu);
    return leader;
  };
  deps.wait_for_change = [&](std::uint64_t version, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu);
    changed.wait_for(lock, timeout, [&] { return stopping || shared->groups_version != version; });
  };
  ClusterWriterOptions options;
  options.label_interval = std::chrono::hours(1);  // labels once per leadership here
  options.change_poll = std::chrono::hours(1);     // so only a change can wake the loop
  ClusterWriter writer(deps, registry, options);
  auto mutations = [&] {
    std::lock_guard lock(server_mu);
    return server.MutatingRequests().size();
  };
  auto wait_until = [&](const std::function<bool()>& done) {
    for (int i = 0; i < 500 && !done(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return done();
  };
  writer.Start();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(mutations(), 0u);  // not leading: no writes although the group is complete

  {
    std::lock_guard lock(mu);
    leader = true;
  }
  EXPECT_TRUE(wait_until([&] { return mutations() == 2; }));  // both waiting pods touched

  // A third waiting member: the cache changes, the loop wakes at once (change_poll is 1 h).
  cluster::ClusterSnapshot next;
  {
    std::lock_guard lock(server_mu);
    AddPod(GroupPod("p3"));
    next = snapshot;
  }
  next.groups_version = 7;
  {
    std::lock_guard lock(mu);
    shared = std::make_shared<const cluster::ClusterSnapshot>(next);
  }
  changed.notify_all();
  EXPECT_TRUE(wait_until([&] { return mutations() == 5; }));  // new membership: all three
  {
    std::lock_guard lock(mu);
    stopping = true;
  }
  changed.notify_all();
  writer.Stop();
}

TEST_F(ClusterWriterTest, TheLoopRetriesAFailedTouchWithoutAnyChange) {
  std::mutex server_mu;
  kube::ClientOptions once;  // a failed patch fails at once: the loop is what retries here
  once.max_attempts = 1;
  auto locked =
      std::make_unique<kube::Client>(std::make_unique<LockedTransport>(server, server_mu), once);
  AddPod(GroupPod("p0"));  // a complete group whose touches fail at first
  AddPod(GroupPod("p1"));
  server.FailRequests("/api/v1/namespaces/team/pods/", 503, "PATCH");
  auto shared = std::make_shared<const cluster::ClusterSnapshot>(snapshot);
  ClusterWriterDeps deps = Deps();
  deps.client = locked.get();
  deps.snapshot = [shared] { return shared; };  // the cache never changes
  deps.wait_for_change = [](std::uint64_t, std::chrono::milliseconds timeout) {
    std::this_thread::sleep_for(timeout);  // nothing wakes the loop but its own poll
  };
  ClusterWriterOptions options;
  options.label_interval = std::chrono::hours(1);
  options.change_poll = std::chrono::milliseconds(20);
  ClusterWriter writer(deps, registry, options);
  auto& touches = registry.Counter("powerctl_extender_pod_group_touches_total", "", {"result"});
  auto wait_until = [&](const std::function<bool()>& done) {
    for (int i = 0; i < 500 && !done(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return done();
  };
  writer.Start();
  EXPECT_TRUE(wait_until([&] { return touches.Value({"error"}) >= 2; }));
  {
    std::lock_guard lock(server_mu);
    server.ClearFailures();
  }
  EXPECT_TRUE(wait_until([&] { return touches.Value({"ok"}) == 2; }));
  writer.Stop();
}

}  // namespace
}  // namespace powerctl::extender
