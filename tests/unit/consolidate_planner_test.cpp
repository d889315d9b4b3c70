// The planner's candidate rules and its greedy choice, over a fake Evacuator (first fit by
// CPU, 10 W per core moved): each rule has a case where only that rule keeps a node on.
#include "core/consolidate/planner.h"

#include <gtest/gtest.h>

namespace powerctl::consolidate {
namespace {

using json = nlohmann::json;

json PlannerPod(const std::string& name, const std::string& owner = "ReplicaSet") {
  json pod = {{"metadata", {{"name", name}, {"namespace", "default"}, {"labels", {{"app", name}}}}},
              {"spec", {{"containers", json::array()}}}};
  if (!owner.empty())
    pod["metadata"]["ownerReferences"] = {{{"kind", owner}, {"name", "o"}, {"controller", true}}};
  return pod;
}

// Every pod requests 1 core; nodes have `capacity` cores and start with their pods' cores.
// Pods go to the last open node with room (or the first, with `forward`).
class FakeEvacuator : public Evacuator {
 public:
  FakeEvacuator(std::vector<std::string> names, std::vector<double> capacity,
                std::vector<double> used, bool forward = false)
      : names_(std::move(names)),
        capacity_(std::move(capacity)),
        used_(std::move(used)),
        forward_(forward) {}
  Evacuation Evacuate(std::size_t /*from*/, const std::vector<std::size_t>& pods,
                      const std::vector<bool>& open, double max_fill, bool commit) override {
    Evacuation out;
    out.fits = true;
    std::vector<double> used = used_;
    for (std::size_t p : pods) {
      bool placed = false;
      for (std::size_t k = 0; k < used.size() && !placed; ++k) {
        const std::size_t i = forward_ ? k : used.size() - 1 - k;
        if (open[i] && used[i] + 1 <= max_fill * capacity_[i] + 1e-9) {
          used[i] += 1;
          out.moves.push_back({"pod" + std::to_string(p), names_[i]});
          out.added_watts += 10;
          placed = true;
        }
      }
      if (!placed) {
        out.fits = false;
        out.unplaced = "pod" + std::to_string(p);
        return out;
      }
    }
    if (commit) used_ = used;
    return out;
  }

 private:
  std::vector<std::string> names_;
  std::vector<double> capacity_, used_;
  bool forward_ = false;
};

PlanNodeInput PlannerNode(const std::string& name, double watts, std::vector<json> pods) {
  return {name, {{"pool", name == "big" ? "keep" : "any"}}, watts, std::move(pods)};
}

// Three nodes: a (100 W, one pod), b (300 W, one pod), big (500 W, 10 cores, holds nothing).
struct Fixture {
  PlanRequest request;
  FakeEvacuator evacuator{{"a", "b", "big"}, {4, 4, 10}, {1, 1, 0}};
  Fixture() {
    request.nodes = {PlannerNode("a", 100, {PlannerPod("pa")}),
                     PlannerNode("b", 300, {PlannerPod("pb")}), PlannerNode("big", 500, {})};
    request.excluded = {"big"};
  }
};

const NodePlan& Find(const Plan& plan, const std::string& node) {
  for (const NodePlan& n : plan.nodes)
    if (n.node == node) return n;
  throw std::runtime_error("no node " + node);
}

TEST(ConsolidatePlanner, DrainsTheNodeThatSavesMostFirst) {
  Fixture f;
  f.request.max_nodes = 1;
  auto plan = PlanConsolidation(f.request, f.evacuator);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  ASSERT_EQ(plan->drained, 1);
  EXPECT_EQ(plan->nodes[0].node, "b");
  EXPECT_DOUBLE_EQ(*plan->nodes[0].watts_saved, 290);
  EXPECT_EQ(Find(*plan, "a").reason, "--max-nodes reached");
  EXPECT_DOUBLE_EQ(plan->watts_after, 900 - 290);
}

TEST(ConsolidatePlanner, DrainsNodesInTurnAndNeverOntoADrainedNode) {
  Fixture f;
  auto plan = PlanConsolidation(f.request, f.evacuator);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->drained, 2);
  for (const NodePlan& n : plan->nodes)
    for (const PodMove& m : n.moves) EXPECT_EQ(m.to, "big") << n.node;
  EXPECT_EQ(Find(*plan, "big").reason, "excluded (--exclude)");
}

TEST(ConsolidatePlanner, CordonedNodesTakeNoPods) {
  Fixture f;
  f.request.cordoned = {"big"};
  auto plan = PlanConsolidation(f.request, f.evacuator);
  ASSERT_TRUE(plan.ok());
  // With big cordoned, b's pod can only go to a (which then stays on), and a's only to b.
  const NodePlan& b = Find(*plan, "b");
  ASSERT_TRUE(b.drain);
  ASSERT_EQ(b.moves.size(), 1u);
  EXPECT_EQ(b.moves[0].to, "a");
  EXPECT_EQ(plan->drained, 1);
}

TEST(ConsolidatePlanner, KeptOnNodesSayWhy) {
  Fixture f;
  f.request.kept_on = {{"b", "already drained"}};
  auto plan = PlanConsolidation(f.request, f.evacuator);
  ASSERT_TRUE(plan.ok());
  EXPECT_FALSE(Find(*plan, "b").drain);
  EXPECT_EQ(Find(*plan, "b").reason, "already drained");
  EXPECT_TRUE(Find(*plan, "a").drain);
}

TEST(ConsolidatePlanner, DaemonSetPodsStayAndAreNoLoad) {
  Fixture f;
  f.request.nodes[0].pods = {PlannerPod("ds", "DaemonSet")};
  auto plan = PlanConsolidation(f.request, f.evacuator);
  ASSERT_TRUE(plan.ok());
  const NodePlan& a = Find(*plan, "a");
  EXPECT_TRUE(a.drain);
  EXPECT_EQ(a.staying_pods, 1);
  EXPECT_TRUE(a.moves.empty());
  EXPECT_DOUBLE_EQ(*a.watts_saved, 100);
}

TEST(ConsolidatePlanner, APodWithoutControllerKeepsItsNode) {
  Fixture f;
  f.request.nodes[1].pods = {PlannerPod("bare", "")};
  auto plan = PlanConsolidation(f.request, f.evacuator);
  ASSERT_TRUE(plan.ok());
  EXPECT_FALSE(Find(*plan, "b").drain);
  EXPECT_EQ(Find(*plan, "b").reason, "pod default/bare: not owned by a controller");
}

TEST(ConsolidatePlanner, SafeToEvictFalseKeepsItsNode) {
  Fixture f;
  f.request.nodes[1].pods[0]["metadata"]["annotations"] = {{kSafeToEvictAnnotation, "false"}};
  auto plan = PlanConsolidation(f.request, f.evacuator);
  ASSERT_TRUE(plan.ok());
  EXPECT_FALSE(Find(*plan, "b").drain);
  EXPECT_NE(Find(*plan, "b").reason.find("safe-to-evict=false"), std::string::npos);
}

TEST(ConsolidatePlanner, LocalStorageKeepsItsNodeUnlessSafeToEvict) {
  Fixture f;
  f.request.nodes[1].pods[0]["spec"]["volumes"] = {
      {{"name", "scratch"}, {"emptyDir", json::object()}}};
  f.request.nodes[0].pods[0]["spec"]["volumes"] = {
      {{"name", "data"}, {"hostPath", {{"path", "/x"}}}}};
  auto plan = PlanConsolidation(f.request, f.evacuator);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(Find(*plan, "b").reason, "pod default/pb: local storage (emptyDir volume \"scratch\")");
  EXPECT_EQ(Find(*plan, "a").reason, "pod default/pa: local storage (hostPath volume \"data\")");

  Fixture g;
  g.request.nodes[1].pods[0]["spec"]["volumes"] = {
      {{"name", "tmp"}, {"emptyDir", {{"medium", "Memory"}}}}};
  g.request.nodes[0].pods[0]["spec"]["volumes"] = {
      {{"name", "data"}, {"hostPath", json::object()}}};
  g.request.nodes[0].pods[0]["metadata"]["annotations"] = {{kSafeToEvictAnnotation, "true"}};
  auto moved = PlanConsolidation(g.request, g.evacuator);
  ASSERT_TRUE(moved.ok());
  EXPECT_TRUE(Find(*moved, "b").drain);
  EXPECT_TRUE(Find(*moved, "a").drain);
}

TEST(ConsolidatePlanner, DisruptionBudgetsAreCountedAcrossThePlan) {
  Fixture f;
  f.request.nodes[0].pods[0]["metadata"]["labels"] = {{"app", "web"}};
  f.request.nodes[1].pods[0]["metadata"]["labels"] = {{"app", "web"}};
  DisruptionBudget budget{"default", "web", {{"matchLabels", {{"app", "web"}}}}, true, 1};
  f.request.budgets = {budget};
  auto plan = PlanConsolidation(f.request, f.evacuator);
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(Find(*plan, "b").drain);  // saves more, takes the one disruption allowed
  EXPECT_FALSE(Find(*plan, "a").drain);
  EXPECT_NE(Find(*plan, "a").reason.find("PodDisruptionBudget default/web allows 0"),
            std::string::npos);
}

TEST(ConsolidatePlanner, ReceivingNodesKeepHeadroom) {
  Fixture f;
  f.request.nodes[2].name = "small";
  f.request.excluded = {"small"};
  f.evacuator = FakeEvacuator({"a", "b", "small"}, {4, 4, 1.2},
                              {1, 1, 0});  // 1 core of 1.2 is more than 80 %
  auto plan = PlanConsolidation(f.request, f.evacuator);
  ASSERT_TRUE(plan.ok());
  // Small has room only past its headroom: b's pod goes to a instead.
  EXPECT_TRUE(Find(*plan, "b").drain);
  EXPECT_EQ(Find(*plan, "b").moves.at(0).to, "a");
  f.request.headroom = 0;
  FakeEvacuator roomy({"a", "b", "small"}, {4, 4, 1.2}, {1, 1, 0});
  auto full = PlanConsolidation(f.request, roomy);
  ASSERT_TRUE(full.ok());
  EXPECT_EQ(Find(*full, "b").moves.at(0).to, "small");
}

TEST(ConsolidatePlanner, ANodeThatReceivesPodsStaysOn) {
  Fixture f;
  f.evacuator = FakeEvacuator({"a", "b", "big"}, {4, 4, 10}, {1, 1, 0}, /*forward=*/true);
  auto plan = PlanConsolidation(f.request, f.evacuator);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(Find(*plan, "b").moves.at(0).to, "a");
  EXPECT_FALSE(Find(*plan, "a").drain);
  EXPECT_EQ(Find(*plan, "a").reason, "receives pods from b");
}

TEST(ConsolidatePlanner, NoSavingKeepsTheNode) {
  Fixture f;
  f.request.nodes[0].watts = 5;  // its pod would add 10 W elsewhere
  f.request.max_nodes = 2;
  auto plan = PlanConsolidation(f.request, f.evacuator);
  ASSERT_TRUE(plan.ok());
  EXPECT_FALSE(Find(*plan, "a").drain);
  EXPECT_NE(Find(*plan, "a").reason.find("no saving"), std::string::npos);
}

TEST(ConsolidatePlanner, SelectorLimitsWhichNodesMayBeEmptied) {
  Fixture f;
  f.request.excluded.clear();
  auto selector = ParseLabelSelector("pool=keep");
  ASSERT_TRUE(selector.ok());
  f.request.selector = *selector;
  auto plan = PlanConsolidation(f.request, f.evacuator);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(Find(*plan, "a").reason, "not selected (-l)");
  EXPECT_TRUE(Find(*plan, "big").drain);
}

TEST(ConsolidatePlanner, RejectsSettingsOutOfRange) {
  Fixture f;
  f.request.headroom = 0.95;
  EXPECT_FALSE(PlanConsolidation(f.request, f.evacuator).ok());
  f.request.headroom = 0.2;
  f.request.max_nodes = 0;
  EXPECT_FALSE(PlanConsolidation(f.request, f.evacuator).ok());
}

TEST(ConsolidateLabelSelector, ParsesKubectlForms) {
  auto s = ParseLabelSelector("a=1, b!=2,c in (x, y),!d,e");
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_TRUE(s->Matches({{"a", "1"}, {"c", "y"}, {"e", ""}}));
  EXPECT_FALSE(s->Matches({{"a", "1"}, {"b", "2"}, {"c", "y"}, {"e", ""}}));
  EXPECT_FALSE(s->Matches({{"a", "1"}, {"c", "z"}, {"e", ""}}));
  EXPECT_FALSE(s->Matches({{"a", "1"}, {"c", "y"}, {"d", ""}, {"e", ""}}));
  EXPECT_FALSE(ParseLabelSelector("a in x").ok());
  EXPECT_FALSE(ParseLabelSelector(std::string(5000, 'a')).ok());
}

TEST(ConsolidateDisruptionBudget, EmptySelectorDependsOnTheVersion) {
  auto budgets =
      DisruptionBudgetsFromObjects({{{"apiVersion", "policy/v1"},
                                     {"metadata", {{"name", "all"}, {"namespace", "default"}}},
                                     {"spec", {{"selector", json::object()}}},
                                     {"status", {{"disruptionsAllowed", 2}}}},
                                    {{"apiVersion", "policy/v1beta1"},
                                     {"metadata", {{"name", "none"}, {"namespace", "default"}}},
                                     {"spec", {{"selector", json::object()}}}}});
  ASSERT_EQ(budgets.size(), 2u);
  EXPECT_TRUE(budgets[0].Covers(PlannerPod("x")));
  EXPECT_EQ(budgets[0].disruptions_allowed, 2);
  EXPECT_FALSE(budgets[1].Covers(PlannerPod("x")));
}

}  // namespace
}  // namespace powerctl::consolidate
