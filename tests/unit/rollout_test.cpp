#include "core/setup/rollout.h"

#include "tests/unit/fake_api_server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace powerctl::setup {
namespace {

using json = nlohmann::json;
using kube::fake::DeploymentObject;
using kube::fake::FakeApiServer;
using kube::fake::FakeClock;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr char kNs[] = "powerctl";
constexpr char kName[] = "powerctl-extender";

struct DeploymentStatus {
  int observed_generation = 1;
  int replicas = 3;
  int updated = 3;
  int available = 3;
};

class RolloutTest : public ::testing::Test {
 protected:
  RolloutTest() : client_(server_.MakeClient()) {}

  // A Deployment of `spec_replicas` at `generation` with this status, exactly as given.
  json PutDeployment(int spec_replicas, int generation, const DeploymentStatus& s,
                     const std::string& name = kName) {
    json d = DeploymentObject(kNs, name, "extender", spec_replicas);
    d["metadata"]["generation"] = generation;
    d["status"] = {{"observedGeneration", s.observed_generation},
                   {"replicas", s.replicas},
                   {"updatedReplicas", s.updated},
                   {"availableReplicas", s.available}};
    server_.PutExactly(d);
    return d;
  }

  // A pod of the extender Deployment with this status.
  void PutPod(const std::string& name, json status) {
    server_.PutExactly({{"apiVersion", "v1"},
                        {"kind", "Pod"},
                        {"metadata",
                         {{"name", name},
                          {"namespace", kNs},
                          {"labels",
                           {{"app.kubernetes.io/name", "powerctl"},
                            {"app.kubernetes.io/component", "extender"}}}}},
                        {"status", std::move(status)}});
  }

  void PutRunningPod(const std::string& name) {
    PutPod(name, {{"phase", "Running"},
                  {"conditions", json::array({{{"type", "PodScheduled"}, {"status", "True"}}})}});
  }

  Result<RolloutProgress> Inspect(const std::string& name = kName) {
    return InspectRollout(*client_, {kNs, name});
  }

  FakeApiServer server_;
  std::unique_ptr<kube::Client> client_;
  FakeClock clock_;
};

TEST_F(RolloutTest, DoneWhenTheNewGenerationIsObservedAndEveryReplicaUpdatedAndAvailable) {
  PutDeployment(3, 2, {2, 3, 3, 3});
  auto p = Inspect();
  ASSERT_TRUE(p.ok()) << p.error().message;

  EXPECT_TRUE(p->done);
  EXPECT_EQ(p->name, "deployment/powerctl-extender");
  EXPECT_EQ(p->replicas, 3);
  EXPECT_EQ(p->updated, 3);
  EXPECT_EQ(p->available, 3);
  EXPECT_EQ(p->waiting_for, "");
}

TEST_F(RolloutTest, NotDoneWhileTheControllerHasNotObservedTheGeneration) {
  PutDeployment(3, 3, {2, 3, 3, 3});
  PutRunningPod("powerctl-extender-a");
  auto p = Inspect();
  ASSERT_TRUE(p.ok()) << p.error().message;

  EXPECT_FALSE(p->done);
  EXPECT_EQ(p->waiting_for, "the controller has not seen the change yet");
}

TEST_F(RolloutTest, NotDoneWhileFewerReplicasAreUpdatedThanWanted) {
  PutDeployment(3, 2, {2, 3, 1, 3});
  PutRunningPod("powerctl-extender-a");
  auto p = Inspect();
  ASSERT_TRUE(p.ok()) << p.error().message;

  EXPECT_FALSE(p->done);
  EXPECT_EQ(p->updated, 1);
  EXPECT_FALSE(p->waiting_for.empty());
}

TEST_F(RolloutTest, WaitingForNamesHowManyReplicasAreUpdated) {
  PutDeployment(3, 2, {2, 3, 1, 3});
  PutRunningPod("powerctl-extender-a");
  auto p = Inspect();
  ASSERT_TRUE(p.ok()) << p.error().message;

  EXPECT_THAT(p->waiting_for, HasSubstr("1 of 3"));
}

TEST_F(RolloutTest, NotDoneWhileOldReplicasAreStillThere) {
  PutDeployment(3, 2, {2, 4, 3, 3});
  PutRunningPod("powerctl-extender-a");
  auto p = Inspect();
  ASSERT_TRUE(p.ok()) << p.error().message;

  EXPECT_FALSE(p->done);
  EXPECT_FALSE(p->waiting_for.empty());
}

TEST_F(RolloutTest, WaitingForSaysOldReplicasArePendingTermination) {
  PutDeployment(3, 2, {2, 4, 3, 3});
  PutRunningPod("powerctl-extender-a");
  auto p = Inspect();
  ASSERT_TRUE(p.ok()) << p.error().message;

  EXPECT_THAT(p->waiting_for, HasSubstr("old replica"));
}

TEST_F(RolloutTest, NotDoneWhileFewerReplicasAreAvailableSaysHowMany) {
  PutDeployment(3, 2, {2, 3, 3, 1});
  PutRunningPod("powerctl-extender-a");
  auto p = Inspect();
  ASSERT_TRUE(p.ok()) << p.error().message;

  EXPECT_FALSE(p->done);
  EXPECT_EQ(p->waiting_for, "1 of 3 updated replicas available");
}

TEST_F(RolloutTest, AnUnschedulablePodExplainsTheWait) {
  PutDeployment(1, 1, {1, 1, 1, 0});
  PutPod("powerctl-extender-a",
         {{"phase", "Pending"},
          {"conditions", json::array({{{"type", "PodScheduled"},
                                       {"status", "False"},
                                       {"reason", "Unschedulable"},
                                       {"message",
                                        "0/2 nodes are available: 2 node(s) had "
                                        "taint {x: y}."}}})}});
  auto p = Inspect();
  ASSERT_TRUE(p.ok()) << p.error().message;

  EXPECT_FALSE(p->done);
  EXPECT_EQ(p->waiting_for,
            "pod powerctl-extender-a unschedulable: 0/2 nodes are available: 2 node(s) had "
            "taint {x: y}.");
}

TEST_F(RolloutTest, AWaitingContainerExplainsTheWait) {
  PutDeployment(1, 1, {1, 1, 1, 0});
  PutPod("powerctl-extender-a",
         {{"phase", "Pending"},
          {"containerStatuses",
           json::array({{{"name", "extender"},
                         {"state",
                          {{"waiting",
                            {{"reason", "ImagePullBackOff"},
                             {"message", "Back-off pulling image \"x\""}}}}}}})}});
  auto p = Inspect();
  ASSERT_TRUE(p.ok()) << p.error().message;

  EXPECT_EQ(p->waiting_for,
            "pod powerctl-extender-a container extender: ImagePullBackOff Back-off pulling "
            "image \"x\"");
}

TEST_F(RolloutTest, AnExceededProgressDeadlineExplainsTheWait) {
  json d = PutDeployment(1, 1, {1, 1, 1, 0});
  d["status"]["conditions"] =
      json::array({{{"type", "Progressing"},
                    {"status", "False"},
                    {"reason", "ProgressDeadlineExceeded"},
                    {"message", "ReplicaSet \"x\" has timed out progressing."}}});
  server_.PutExactly(d);
  auto p = Inspect();
  ASSERT_TRUE(p.ok()) << p.error().message;

  EXPECT_EQ(p->waiting_for, "ReplicaSet \"x\" has timed out progressing.");
}

TEST_F(RolloutTest, NoPodsYetIsSaid) {
  PutDeployment(1, 1, {1, 0, 0, 0});
  auto p = Inspect();
  ASSERT_TRUE(p.ok()) << p.error().message;

  EXPECT_FALSE(p->done);
  EXPECT_EQ(p->waiting_for, "no pods created yet");
}

TEST_F(RolloutTest, ReplicasDefaultToOne) {
  json d = DeploymentObject(kNs, kName, "extender");
  d["spec"].erase("replicas");
  d["metadata"]["generation"] = 1;
  d["status"] = {
      {"observedGeneration", 1}, {"replicas", 1}, {"updatedReplicas", 1}, {"availableReplicas", 1}};
  server_.PutExactly(d);
  auto p = Inspect();
  ASSERT_TRUE(p.ok()) << p.error().message;

  EXPECT_EQ(p->replicas, 1);
  EXPECT_TRUE(p->done);
}

TEST_F(RolloutTest, ADeploymentScaledToZeroIsDone) {
  json d = DeploymentObject(kNs, kName, "extender", 0);
  d["metadata"]["generation"] = 2;
  d["status"] = {{"observedGeneration", 2}};  // the controller omits zero counts
  server_.PutExactly(d);
  auto p = Inspect();
  ASSERT_TRUE(p.ok()) << p.error().message;

  EXPECT_TRUE(p->done);
}

TEST_F(RolloutTest, AMissingDeploymentIsNotFound) {
  auto p = Inspect();
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().code, ErrorCode::kNotFound);
}

TEST_F(RolloutTest, WaitReturnsAtOnceWhenEverythingIsDone) {
  PutDeployment(3, 2, {2, 3, 3, 3});
  std::vector<std::vector<RolloutProgress>> progress;
  Status status =
      WaitForRollouts(*client_, {{kNs, kName}}, std::chrono::seconds(30), clock_.clock(),
                      [&](const std::vector<RolloutProgress>& p) { progress.push_back(p); });
  ASSERT_TRUE(status.ok()) << status.error().message;

  EXPECT_THAT(clock_.sleeps, IsEmpty());
  ASSERT_EQ(progress.size(), 1u);
  EXPECT_TRUE(progress[0][0].done);
}

TEST_F(RolloutTest, WaitPollsUntilTheRolloutIsDone) {
  server_.SetDeploymentsAvailable(false);
  server_.Put(DeploymentObject(kNs, kName, "extender", 2));
  clock_.on_sleep = [this] {
    if (clock_.sleeps.size() == 2) server_.SetDeploymentsAvailable(true);
  };
  int calls = 0;
  Status status =
      WaitForRollouts(*client_, {{kNs, kName}}, std::chrono::seconds(30), clock_.clock(),
                      [&](const std::vector<RolloutProgress>&) { ++calls; });
  ASSERT_TRUE(status.ok()) << status.error().message;

  EXPECT_EQ(calls, 3);
  EXPECT_EQ(clock_.sleeps.size(), 2u);
}

TEST_F(RolloutTest, WaitTimeoutNamesOnlyTheDeploymentsStillWaiting) {
  PutDeployment(3, 2, {2, 3, 3, 3}, "ready");
  PutDeployment(1, 1, {1, 1, 1, 0});
  PutPod(
      "powerctl-extender-a",
      {{"conditions",
        json::array({{{"type", "PodScheduled"}, {"status", "False"}, {"message", "no nodes"}}})}});
  Status status = WaitForRollouts(*client_, {{kNs, "ready"}, {kNs, kName}},
                                  std::chrono::seconds(10), clock_.clock(), nullptr);
  ASSERT_FALSE(status.ok());

  EXPECT_EQ(status.error().message,
            "timed out after 10s waiting for rollout; deployment/powerctl-extender 0/1 "
            "available: pod powerctl-extender-a unschedulable: no nodes");
  EXPECT_GE(clock_.sleeps.size(), 10u);
}

TEST_F(RolloutTest, WaitReturnsAnApiErrorAtOnce) {
  PutDeployment(1, 1, {1, 1, 1, 0});
  server_.FailRequests("/apis/apps/v1/namespaces/powerctl/deployments", 403, "GET",
                       "deployments.apps is forbidden");
  Status status =
      WaitForRollouts(*client_, {{kNs, kName}}, std::chrono::seconds(10), clock_.clock(), nullptr);
  ASSERT_FALSE(status.ok());

  EXPECT_EQ(status.error().code, ErrorCode::kForbidden);
  EXPECT_THAT(clock_.sleeps, IsEmpty());
}

// ---- DaemonSets ---------------------------------------------------------------------------------

constexpr char kAgent[] = "powerctl-lb-agent";

struct DaemonSetStatus {
  int observed_generation = 1;
  int desired = 3;
  int updated = 3;
  int available = 3;
};

json DaemonSetObject(int generation, const DaemonSetStatus& s) {
  json labels = {{"app.kubernetes.io/name", "powerctl"},
                 {"app.kubernetes.io/component", "lb-agent"}};
  return {{"apiVersion", "apps/v1"},
          {"kind", "DaemonSet"},
          {"metadata", {{"name", kAgent}, {"namespace", kNs}, {"generation", generation}}},
          {"spec",
           {{"selector", {{"matchLabels", labels}}},
            {"template", {{"metadata", {{"labels", labels}}}}}}},
          {"status",
           {{"observedGeneration", s.observed_generation},
            {"desiredNumberScheduled", s.desired},
            {"currentNumberScheduled", s.desired},
            {"updatedNumberScheduled", s.updated},
            {"numberReady", s.available},
            {"numberAvailable", s.available}}}};
}

// A Running pod of the lb-agent DaemonSet (matched by its selector).
json AgentPod() {
  return {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata",
       {{"name", "powerctl-lb-agent-x"},
        {"namespace", kNs},
        {"labels",
         {{"app.kubernetes.io/name", "powerctl"}, {"app.kubernetes.io/component", "lb-agent"}}}}},
      {"status", {{"phase", "Running"}}}};
}

TEST_F(RolloutTest, ADaemonSetIsDoneWhenEveryNodesPodIsUpdatedAndAvailable) {
  server_.PutExactly(DaemonSetObject(2, {2, 3, 3, 3}));
  auto p = InspectRollout(*client_, {kNs, kAgent, WorkloadKind::kDaemonSet});
  ASSERT_TRUE(p.ok()) << p.error().message;

  EXPECT_TRUE(p->done);
  EXPECT_EQ(p->name, "daemonset/powerctl-lb-agent");
  EXPECT_EQ(p->replicas, 3);  // desiredNumberScheduled
  EXPECT_EQ(p->updated, 3);
  EXPECT_EQ(p->available, 3);
}

TEST_F(RolloutTest, ADaemonSetWaitsForTheControllerToObserveItsGeneration) {
  server_.PutExactly(DaemonSetObject(3, {2, 3, 3, 3}));
  server_.PutExactly(AgentPod());
  auto p = InspectRollout(*client_, {kNs, kAgent, WorkloadKind::kDaemonSet});
  ASSERT_TRUE(p.ok()) << p.error().message;

  EXPECT_FALSE(p->done);
  EXPECT_EQ(p->waiting_for, "the controller has not seen the change yet");
}

TEST_F(RolloutTest, ADaemonSetWaitsForPodsToBeUpdatedThenAvailableCountingPods) {
  server_.PutExactly(DaemonSetObject(2, {2, 3, 1, 3}));
  auto updating = InspectRollout(*client_, {kNs, kAgent, WorkloadKind::kDaemonSet});
  ASSERT_TRUE(updating.ok()) << updating.error().message;
  EXPECT_FALSE(updating->done);
  // No pods are listed here, so the counts are what is left to say.
  EXPECT_EQ(updating->waiting_for, "no pods created yet");

  server_.PutExactly(AgentPod());
  updating = InspectRollout(*client_, {kNs, kAgent, WorkloadKind::kDaemonSet});
  ASSERT_TRUE(updating.ok()) << updating.error().message;
  EXPECT_EQ(updating->waiting_for, "1 of 3 pods updated");

  server_.PutExactly(DaemonSetObject(2, {2, 3, 3, 2}));
  auto p = InspectRollout(*client_, {kNs, kAgent, WorkloadKind::kDaemonSet});
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_FALSE(p->done);
  EXPECT_EQ(p->waiting_for, "2 of 3 updated pods available");
}

TEST_F(RolloutTest, ADaemonSetForNoNodesIsDoneOnceObserved) {
  server_.PutExactly(DaemonSetObject(1, {1, 0, 0, 0}));
  auto p = InspectRollout(*client_, {kNs, kAgent, WorkloadKind::kDaemonSet});
  ASSERT_TRUE(p.ok()) << p.error().message;

  EXPECT_TRUE(p->done);
}

TEST_F(RolloutTest, WaitTimeoutNamesTheDaemonSetAndItsUnschedulablePod) {
  server_.SetDeploymentsAvailable(false);
  server_.Put(kube::fake::NodeObject("n1"));
  json ds = DaemonSetObject(1, {});
  ds.erase("status");
  server_.Put(ds);
  Status status = WaitForRollouts(*client_, {{kNs, kAgent, WorkloadKind::kDaemonSet}},
                                  std::chrono::seconds(5), clock_.clock(), nullptr);
  ASSERT_FALSE(status.ok());

  EXPECT_EQ(status.error().message,
            "timed out after 5s waiting for rollout; daemonset/powerctl-lb-agent 0/1 "
            "available: pod powerctl-lb-agent-n1 unschedulable: " +
                std::string(FakeApiServer::kDefaultUnschedulable));
}

}  // namespace
}  // namespace powerctl::setup
