#include "core/scoring/node_fit.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace powerctl::scoring {
namespace {

using json = nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

json Node(json labels = json::object(), json taints = json::array(), bool cordoned = false) {
  json node = {{"metadata", {{"name", "n1"}, {"labels", labels}}},
               {"spec", json::object()},
               {"status", {{"allocatable", {{"cpu", "4"}, {"memory", "8Gi"}, {"pods", "10"}}}}}};
  if (!taints.empty()) node["spec"]["taints"] = taints;
  if (cordoned) node["spec"]["unschedulable"] = true;
  return node;
}

json Pod(json spec = json::object()) {
  if (!spec.contains("containers")) spec["containers"] = json::array({{{"name", "c"}}});
  return {{"metadata", {{"name", "p"}, {"namespace", "ns"}}}, {"spec", spec}};
}

json Taint(const std::string& key, const std::string& value, const std::string& effect) {
  json t = {{"key", key}, {"effect", effect}};
  if (!value.empty()) t["value"] = value;
  return t;
}

TEST(NodeFitTolerates, EqualNeedsKeyValueAndEffect) {
  json taint = Taint("dedicated", "gpu", "NoSchedule");
  EXPECT_TRUE(Tolerates({{"key", "dedicated"}, {"value", "gpu"}, {"effect", "NoSchedule"}}, taint));
  // Operator Equal is the default.
  EXPECT_TRUE(Tolerates(
      {{"key", "dedicated"}, {"operator", "Equal"}, {"value", "gpu"}, {"effect", "NoSchedule"}},
      taint));
  EXPECT_FALSE(
      Tolerates({{"key", "dedicated"}, {"value", "cpu"}, {"effect", "NoSchedule"}}, taint));
  EXPECT_FALSE(Tolerates({{"key", "other"}, {"value", "gpu"}}, taint));
  EXPECT_FALSE(Tolerates({{"key", "dedicated"}, {"value", "gpu"}, {"effect", "NoExecute"}}, taint));
  // An empty effect tolerates every effect.
  EXPECT_TRUE(Tolerates({{"key", "dedicated"}, {"value", "gpu"}}, taint));
}

TEST(NodeFitTolerates, ExistsIgnoresValueAndEmptyKeyMatchesAll) {
  json taint = Taint("dedicated", "gpu", "NoExecute");
  EXPECT_TRUE(Tolerates({{"key", "dedicated"}, {"operator", "Exists"}}, taint));
  EXPECT_TRUE(Tolerates({{"operator", "Exists"}}, taint));
  EXPECT_FALSE(Tolerates({{"operator", "Exists"}, {"effect", "NoSchedule"}}, taint));
  EXPECT_FALSE(Tolerates({{"key", "dedicated"}, {"operator", "Bogus"}}, taint));
}

TEST(NodeFitTaints, NoScheduleAndNoExecuteBlockPreferNoScheduleDoesNot) {
  EXPECT_FALSE(CheckTaints(Pod(), Node({}, {Taint("soft", "", "PreferNoSchedule")})));
  auto blocked = CheckTaints(Pod(), Node({}, {Taint("dedicated", "gpu", "NoSchedule")}));
  ASSERT_TRUE(blocked);
  EXPECT_EQ(blocked->reason, kReasonUntoleratedTaint);
  EXPECT_EQ(blocked->detail, "taint dedicated=gpu:NoSchedule");
  EXPECT_NE(blocked->fix.find("{key: dedicated, operator: Equal, value: gpu, effect: NoSchedule}"),
            std::string::npos)
      << blocked->fix;
  EXPECT_NE(blocked->fix.find("kubectl taint nodes n1 dedicated:NoSchedule-"), std::string::npos);
  auto no_execute = CheckTaints(Pod(), Node({}, {Taint("gone", "", "NoExecute")}));
  ASSERT_TRUE(no_execute);
  EXPECT_NE(no_execute->fix.find("{key: gone, operator: Exists, effect: NoExecute}"),
            std::string::npos);
}

TEST(NodeFitTaints, EveryTaintMustBeTolerated) {
  json node = Node({}, {Taint("a", "1", "NoSchedule"), Taint("b", "2", "NoSchedule")});
  json one = Pod({{"tolerations", {{{"key", "a"}, {"value", "1"}}}}});
  auto failure = CheckTaints(one, node);
  ASSERT_TRUE(failure);
  EXPECT_EQ(failure->detail, "taint b=2:NoSchedule");
  json both = Pod(
      {{"tolerations", {{{"key", "a"}, {"value", "1"}}, {{"key", "b"}, {"operator", "Exists"}}}}});
  EXPECT_FALSE(CheckTaints(both, node));
}

TEST(NodeFitUnschedulable, CordonedUnlessTolerated) {
  auto failure = CheckUnschedulable(Pod(), Node({}, json::array(), true));
  ASSERT_TRUE(failure);
  EXPECT_EQ(failure->reason, kReasonUnschedulable);
  EXPECT_EQ(failure->fix, "kubectl uncordon n1");
  json tolerant = Pod(
      {{"tolerations", {{{"key", "node.kubernetes.io/unschedulable"}, {"operator", "Exists"}}}}});
  EXPECT_FALSE(CheckUnschedulable(tolerant, Node({}, json::array(), true)));
  EXPECT_FALSE(CheckUnschedulable(Pod(), Node()));
}

TEST(NodeFitAffinity, NodeSelectorNeedsEveryLabel) {
  json node = Node({{"zone", "a"}, {"disk", "ssd"}});
  EXPECT_FALSE(CheckNodeAffinity(Pod({{"nodeSelector", {{"zone", "a"}}}}), node));
  auto failure = CheckNodeAffinity(Pod({{"nodeSelector", {{"zone", "a"}, {"gpu", "yes"}}}}), node);
  ASSERT_TRUE(failure);
  EXPECT_EQ(failure->reason, kReasonNodeAffinity);
  EXPECT_EQ(failure->detail, "nodeSelector gpu=yes: the node has no such label");
  EXPECT_NE(failure->fix.find("kubectl label nodes n1 gpu=yes"), std::string::npos);
  auto wrong = CheckNodeAffinity(Pod({{"nodeSelector", {{"zone", "b"}}}}), node);
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->detail, "nodeSelector zone=b: the node has zone=a");
}

TEST(NodeFitAffinity, RequirementOperators) {
  std::map<std::string, std::string> labels = {{"zone", "a"}, {"cores", "16"}};
  auto req = [](const std::string& key, const std::string& op, json values = json::array()) {
    return json{{"key", key}, {"operator", op}, {"values", values}};
  };
  EXPECT_TRUE(MatchesRequirement(req("zone", "In", {"a", "b"}), labels));
  EXPECT_FALSE(MatchesRequirement(req("zone", "In", {"b"}), labels));
  EXPECT_FALSE(MatchesRequirement(req("missing", "In", {"a"}), labels));
  EXPECT_TRUE(MatchesRequirement(req("zone", "NotIn", {"b"}), labels));
  EXPECT_FALSE(MatchesRequirement(req("zone", "NotIn", {"a"}), labels));
  EXPECT_TRUE(MatchesRequirement(req("missing", "NotIn", {"a"}), labels));
  EXPECT_TRUE(MatchesRequirement(req("zone", "Exists"), labels));
  EXPECT_FALSE(MatchesRequirement(req("missing", "Exists"), labels));
  EXPECT_TRUE(MatchesRequirement(req("missing", "DoesNotExist"), labels));
  EXPECT_FALSE(MatchesRequirement(req("zone", "DoesNotExist"), labels));
  EXPECT_TRUE(MatchesRequirement(req("cores", "Gt", {"8"}), labels));
  EXPECT_FALSE(MatchesRequirement(req("cores", "Gt", {"16"}), labels));
  EXPECT_TRUE(MatchesRequirement(req("cores", "Lt", {"32"}), labels));
  EXPECT_FALSE(MatchesRequirement(req("cores", "Lt", {"16"}), labels));
  EXPECT_FALSE(MatchesRequirement(req("zone", "Gt", {"1"}), labels));     // not a number
  EXPECT_FALSE(MatchesRequirement(req("missing", "Lt", {"1"}), labels));  // absent
  EXPECT_FALSE(MatchesRequirement(req("zone", "Near", {"a"}), labels));
}

TEST(NodeFitAffinity, TermsAreOredExpressionsAnded) {
  json node = Node({{"zone", "a"}, {"disk", "ssd"}});
  auto pod_with = [](json terms) {
    return Pod({{"affinity",
                 {{"nodeAffinity",
                   {{"requiredDuringSchedulingIgnoredDuringExecution",
                     {{"nodeSelectorTerms", terms}}}}}}}});
  };
  json zone_a = {{"key", "zone"}, {"operator", "In"}, {"values", {"a"}}};
  json hdd = {{"key", "disk"}, {"operator", "In"}, {"values", {"hdd"}}};
  EXPECT_FALSE(CheckNodeAffinity(pod_with({{{"matchExpressions", {zone_a}}}}), node));
  EXPECT_TRUE(CheckNodeAffinity(pod_with({{{"matchExpressions", {zone_a, hdd}}}}), node));
  EXPECT_FALSE(CheckNodeAffinity(
      pod_with({{{"matchExpressions", {hdd}}}, {{"matchExpressions", {zone_a}}}}), node));
  // matchFields on metadata.name.
  json by_name = {{"key", "metadata.name"}, {"operator", "In"}, {"values", {"n1"}}};
  EXPECT_FALSE(CheckNodeAffinity(pod_with({{{"matchFields", {by_name}}}}), node));
  by_name["values"] = {"n2"};
  EXPECT_TRUE(CheckNodeAffinity(pod_with({{{"matchFields", {by_name}}}}), node));
  // An empty term selects nothing.
  auto empty = CheckNodeAffinity(pod_with({json::object()}), node);
  ASSERT_TRUE(empty);
  EXPECT_EQ(empty->reason, kReasonNodeAffinity);
}

TEST(NodeFitResources, CpuMemoryAndPodCount) {
  kube::PodResources pod;
  pod.cpu_request_millis = 1500;
  pod.memory_request_bytes = 1024LL * 1024 * 1024;
  EXPECT_TRUE(CheckResources(pod, Node(), NodeLoad{2500, 0, 3}).empty());
  auto cpu = CheckResources(pod, Node(), NodeLoad{3000, 0, 3});
  ASSERT_EQ(cpu.size(), 1u);
  EXPECT_EQ(cpu[0].reason, kReasonInsufficientCpu);
  EXPECT_EQ(cpu[0].detail, "requests 1500m CPU; 1000m of 4000m allocatable is free");
  auto memory = CheckResources(pod, Node(), NodeLoad{0, 7LL * 1024 * 1024 * 1024 + 1, 0});
  ASSERT_EQ(memory.size(), 1u);
  EXPECT_EQ(memory[0].reason, kReasonInsufficientMemory);
  auto pods = CheckResources(kube::PodResources{}, Node(), NodeLoad{0, 0, 10});
  ASSERT_EQ(pods.size(), 1u);
  EXPECT_EQ(pods[0].reason, kReasonTooManyPods);
  // A pod that requests nothing needs only a slot, however full the node is.
  EXPECT_TRUE(CheckResources(kube::PodResources{}, Node(), NodeLoad{999999, 0, 0}).empty());
}

TEST(NodeFitResources, APodLargerThanTheNodeIsNotToldToFreeResources) {
  kube::PodResources huge;
  huge.cpu_request_millis = 1'000'000;  // 1000 CPU on a 4-CPU node
  huge.memory_request_bytes = 64LL * 1024 * 1024 * 1024;
  auto failures = CheckResources(huge, Node(), NodeLoad{});
  ASSERT_EQ(failures.size(), 2u);
  EXPECT_THAT(failures[0].fix, HasSubstr("to at most 4000m"));
  EXPECT_THAT(failures[0].fix, HasSubstr("add a node with more CPU"));
  EXPECT_THAT(failures[0].fix, Not(HasSubstr("free CPU")));
  EXPECT_THAT(failures[1].fix, HasSubstr("add a node with more memory"));
  // A pod that fits an empty node but not this one's free room: free some.
  kube::PodResources fits;
  fits.cpu_request_millis = 1500;
  auto busy = CheckResources(fits, Node(), NodeLoad{3000, 0, 3});
  ASSERT_EQ(busy.size(), 1u);
  EXPECT_THAT(busy[0].fix, HasSubstr("free CPU on"));
}

TEST(NodeFitResources, EffectiveRequestsCountInitContainersAndOverhead) {
  json pod =
      Pod({{"containers", {{{"name", "c"}, {"resources", {{"requests", {{"cpu", "1"}}}}}}}},
           {"initContainers", {{{"name", "i"}, {"resources", {{"requests", {{"cpu", "3"}}}}}}}},
           {"overhead", {{"cpu", "500m"}}}});
  auto resources = kube::EffectivePodResources(pod);
  ASSERT_TRUE(resources.ok());
  // max(1, 3) + 0.5 = 3.5 CPU: fits an empty 4-CPU node, not one with 1 CPU used.
  EXPECT_TRUE(CheckNodeFit(pod, *resources, Node(), NodeLoad{}).empty());
  auto failures = CheckNodeFit(pod, *resources, Node(), NodeLoad{1000, 0, 1});
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_EQ(failures[0].reason, kReasonInsufficientCpu);
}

TEST(NodeFit, ReportsEveryFailedCheckInSchedulerOrder) {
  json node = Node({{"zone", "a"}}, {Taint("t", "", "NoSchedule")}, true);
  json pod = Pod({{"nodeSelector", {{"zone", "b"}}}});
  auto failures = CheckNodeFit(pod, kube::PodResources{}, node, NodeLoad{});
  ASSERT_EQ(failures.size(), 3u);
  EXPECT_EQ(failures[0].check, kCheckUnschedulable);
  EXPECT_EQ(failures[1].check, kCheckNodeAffinity);
  EXPECT_EQ(failures[2].check, kCheckTaints);
}

}  // namespace
}  // namespace powerctl::scoring
