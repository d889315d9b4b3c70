// Pod groups (after riya's PreFilter): completeness, the filter verdict, which waiting pods to
// requeue, and the applier that annotates them through the API (FakeApiServer).
#include "core/scoring/pod_groups.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace powerctl::scoring {
namespace {

using cluster::PodInfo;
using ::testing::ElementsAre;

PodInfo GroupPod(const std::string& name, const std::string& group, const std::string& min,
                 const std::string& phase = "Pending", const std::string& node = "",
                 const std::string& ns = "team") {
  PodInfo p;
  p.namespace_ = ns;
  p.name = name;
  p.uid = "uid-" + ns + "-" + name;
  p.phase = phase;
  p.node_name = node;
  if (!group.empty()) p.labels[cluster::kPodGroupLabel] = group;
  if (!min.empty()) p.labels[cluster::kMinAvailableLabel] = min;
  return p;
}

TEST(PodGroups, NotGatedAsInRiya) {
  EXPECT_FALSE(EvaluatePodGroup(GroupPod("a", "", "3"), {}).gated);   // no podGroup
  EXPECT_FALSE(EvaluatePodGroup(GroupPod("a", "g", ""), {}).gated);   // no minAvailable
  EXPECT_FALSE(EvaluatePodGroup(GroupPod("a", "g", "1"), {}).gated);  // minAvailable <= 1
  EXPECT_FALSE(EvaluatePodGroup(GroupPod("a", "g", "0"), {}).gated);
  PodGroupVerdict bad = EvaluatePodGroup(GroupPod("a", "g", "three"), {});
  EXPECT_FALSE(bad.gated);
  EXPECT_EQ(bad.note, "minAvailable \"three\" of pod group g is not an integer; no group gate");
  EXPECT_TRUE(PodGroupFailedNodes(bad, {"n1"}).empty());
}

TEST(PodGroups, CountsLivePodsOfTheGroupInTheNamespace) {
  PodInfo self = GroupPod("a", "g", "4");
  std::vector<PodInfo> pods{self,
                            GroupPod("b", "g", "4", "Running", "n1"),
                            GroupPod("c", "g", "4", "Succeeded", "n1"),       // terminal
                            GroupPod("d", "g", "4", "Failed"),                // terminal
                            GroupPod("e", "g", "4", "Pending", "", "other"),  // other namespace
                            GroupPod("f", "h", "4"),                          // other group
                            GroupPod("x", "g", "")};                          // same group, no min
  pods.push_back(GroupPod("t", "g", "4", "Running", "n2"));
  pods.back().deleting = true;  // terminating
  PodGroupVerdict v = EvaluatePodGroup(self, pods);
  EXPECT_TRUE(v.gated);
  EXPECT_EQ(v.present, 3);  // a, b, x
  EXPECT_FALSE(v.complete);
  EXPECT_EQ(v.reason, "pod group team/g has 3 of 4 pods (minAvailable)");
  auto failed = PodGroupFailedNodes(v, {"n1", "n2"});
  EXPECT_EQ(failed.size(), 2u);
  EXPECT_EQ(failed.at("n2"), v.reason);
  EXPECT_TRUE(PodsToTouch(v, "team/a", "2026-01-01T00:00:00Z").empty());  // incomplete
}

TEST(PodGroups, ThePodItselfCountsBeforeTheCacheSeesIt) {
  PodGroupVerdict v = EvaluatePodGroup(GroupPod("new", "g", "2"), {GroupPod("old", "g", "2")});
  EXPECT_EQ(v.present, 2);
  EXPECT_TRUE(v.complete);
  EXPECT_TRUE(PodGroupFailedNodes(v, {"n1"}).empty());
}

TEST(PodGroups, TouchesWaitingMembersOnceForEachMembership) {
  std::vector<PodInfo> pods{GroupPod("a", "g", "3"), GroupPod("b", "g", "3"),
                            GroupPod("c", "g", "3"), GroupPod("bound", "g", "3", "Pending", "n1"),
                            GroupPod("run", "g", "3", "Running", "n1")};
  PodGroupVerdict v = EvaluatePodGroup(pods[2], pods);
  ASSERT_TRUE(v.complete);
  std::vector<PodTouch> touches = PodsToTouch(v, "team/c", "2026-01-01T00:00:00Z");
  ASSERT_EQ(touches.size(), 2u);  // a and b wait; c is being scheduled; the others are bound
  EXPECT_EQ(touches[0].name, "a");
  EXPECT_EQ(touches[1].name, "b");
  std::string value = touches[0].annotation_value;
  EXPECT_EQ(value, "2026-01-01T00:00:00Z;members=" + MembersFingerprint(v.members));

  // Once annotated for this membership, a pod is not touched again...
  pods[0].annotations[cluster::kGroupCompleteAnnotation] = value;
  v = EvaluatePodGroup(pods[2], pods);
  touches = PodsToTouch(v, "team/c", "2026-01-01T00:01:00Z");
  ASSERT_EQ(touches.size(), 1u);
  EXPECT_EQ(touches[0].name, "b");
  // ...until the group completes again with other pods.
  pods.push_back(GroupPod("d", "g", "3"));
  v = EvaluatePodGroup(pods[2], pods);
  touches = PodsToTouch(v, "team/c", "2026-01-01T00:02:00Z");
  EXPECT_EQ(touches.size(), 3u);  // a, b, d
}

}  // namespace
}  // namespace powerctl::scoring
