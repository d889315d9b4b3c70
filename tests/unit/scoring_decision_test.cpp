#include "core/scoring/decision.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <limits>

namespace powerctl::scoring {
namespace {

using nlohmann::json;

Decision Sample() {
  Decision d;
  d.verb = kVerbPrioritize;
  d.pod_namespace = "ns";
  d.pod_name = "web-1";
  d.pod_uid = "u-1";
  d.at_unix_ms = 1700000000123;
  d.notes = {"the pod sets no CPU request or limit"};
  NodeDecision rejected;
  rejected.node = "n1";
  rejected.passed = false;
  rejected.reason = "policy dontschedule: temperature > 80";
  rejected.unresolvable = true;
  NodeDecision scored;
  scored.node = "n2";
  scored.passed = true;
  scored.score = 8;
  scored.components = {{"power", 7.5, "+3.0 W (lowest +1.0 W, highest +9.0 W)"},
                       {"policy", 10.0 / 3.0, "scheduleonmetric"}};
  d.nodes = {rejected, scored};
  return d;
}

TEST(DecisionJsonTest, CompactShape) {
  json j = DecisionToJson(Sample());
  EXPECT_EQ(
      j.dump(),
      R"js({"at":1700000000123,"nodes":[{"node":"n1","pass":false,"reason":"policy dontschedule: temperature > 80","unresolvable":true},{"components":[{"name":"power","reason":"+3.0 W (lowest +1.0 W, highest +9.0 W)","value":7.5},{"name":"policy","reason":"scheduleonmetric","value":3.3333333333333335}],"node":"n2","pass":true,"score":8}],"notes":["the pod sets no CPU request or limit"],"pod":{"name":"web-1","namespace":"ns","uid":"u-1"},"verb":"prioritize"})js");
  Decision bare;
  bare.verb = kVerbFilter;
  bare.nodes.push_back({.node = "n"});
  EXPECT_EQ(DecisionToJson(bare).dump(),
            R"({"at":0,"nodes":[{"node":"n"}],"pod":{},"verb":"filter"})");
}

TEST(DecisionJsonTest, RoundTripsExactly) {
  Decision d = Sample();
  auto back = DecisionFromJson(json::parse(DecisionToJson(d).dump()));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, d);
  Decision error_only;
  error_only.verb = kVerbFilter;
  error_only.error = "ExtenderArgs: Pod is missing";
  auto again = DecisionFromJson(DecisionToJson(error_only));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, error_only);
}

TEST(DecisionJsonTest, TheTextIsTheSameDocumentAsTheTree) {
  Decision d = Sample();
  d.omitted_nodes = 4980;
  d.error = "model: timeout";
  d.nodes[1].watts_now = 120.5;
  d.nodes[1].watts_after = 1.0 / 3.0;
  EXPECT_EQ(json::parse(DecisionJsonText(d)), DecisionToJson(d));
  auto back = DecisionFromJson(json::parse(DecisionJsonText(d)));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, d);  // every double reads back exactly
  Decision bare;
  bare.verb = kVerbFilter;
  EXPECT_EQ(DecisionJsonText(bare), R"({"verb":"filter","pod":{},"at":0,"nodes":[]})");
}

TEST(DecisionJsonTest, TheTextIsValidJsonWhateverTheDecisionHolds) {
  Decision d = Sample();
  d.pod_name = "caf\xc3\xa9 \"quoted\"\n";
  d.nodes[0].reason = std::string("bad \xff utf-8 \x01");
  d.nodes[1].watts_now = std::numeric_limits<double>::quiet_NaN();
  d.nodes[1].watts_after = std::numeric_limits<double>::infinity();
  json j = json::parse(DecisionJsonText(d));  // throws when it is not JSON
  EXPECT_EQ(j["pod"]["name"], "caf\xc3\xa9 \"quoted\"\n");
  EXPECT_EQ(j["nodes"][0]["reason"], "bad \xef\xbf\xbd utf-8 \x01");  // U+FFFD
  EXPECT_TRUE(j["nodes"][1]["wattsNow"].is_null());
  EXPECT_TRUE(j["nodes"][1]["wattsAfter"].is_null());
}

TEST(DecisionJsonTest, RejectsWrongTypesNamingTheField) {
  const std::pair<const char*, const char*> cases[] = {
      {R"([])", "document is not an object"},
      {R"({"verb":1})", "verb is not a string"},
      {R"({"at":"now"})", "at is not an integer"},
      {R"({"nodes":[{"node":"a","pass":"yes"}]})", "nodes[0].pass is not a boolean"},
      {R"({"nodes":[{"node":"a","score":7.5}]})", "nodes[0].score is not an integer"},
      {R"({"nodes":[{"node":"a","components":[{"name":"power"}]}]})",
       "nodes[0].components[0].value is not a number"},
      {R"({"pod":{"uid":3}})", "pod.uid is not a string"},
      {R"({"omitted":-1})", "omitted is not a count"},
  };
  for (const auto& [text, reason] : cases) {
    auto d = DecisionFromJson(json::parse(text));
    ASSERT_FALSE(d.ok()) << text;
    EXPECT_NE(d.error().message.find(reason), std::string::npos) << d.error().message;
  }
}

TEST(DecisionJsonTest, ComponentsPastOnePerKindAreIgnoredAsUnknownKeysAre) {
  // A newer powerctl may record a fourth kind; an older explain still reads the decision.
  auto d = DecisionFromJson(json::parse(
      R"({"nodes":[{"node":"a","components":[{"name":"power","value":1},)"
      R"({"name":"policy","value":2},{"name":"realUsage","value":3},{"name":"next","value":4}]}]})"));
  ASSERT_TRUE(d.ok()) << d.error().message;
  ASSERT_EQ(d->nodes[0].components.size(), 3u);
  EXPECT_EQ(d->nodes[0].components[2].name, "realUsage");
}

TEST(DecisionJsonTest, PodIdentityFromMetadata) {
  Decision d;
  SetPodIdentity(d, json::parse(R"({"metadata":{"name":"p","namespace":"ns","uid":"u"}})"));
  EXPECT_EQ(d.pod_name, "p");
  EXPECT_EQ(d.pod_namespace, "ns");
  EXPECT_EQ(d.pod_uid, "u");
  Decision none;
  SetPodIdentity(none, json::parse(R"({"metadata":{"name":1}})"));
  EXPECT_EQ(none.pod_name, "");
}

NodeDecision Scored(const std::string& name, std::int64_t score) {
  NodeDecision n;
  n.node = name;
  n.score = score;
  n.components = {{"power", static_cast<double>(score), "+1.0 W"}};
  return n;
}

NodeDecision Rejected(const std::string& name) {
  NodeDecision n;
  n.node = name;
  n.passed = false;
  n.reason = "too hot";
  return n;
}

TEST(DecisionTopNodesTest, KeepsTheBestScoredAndTheFirstRejectedInOrder) {
  Decision d;
  d.verb = kVerbPrioritize;
  d.pod_name = "p";
  d.notes = {"power: range"};
  d.nodes = {Scored("a", 3), Scored("b", 9), Rejected("r1"), Scored("c", 7),
             Scored("d", 9), Rejected("r2"), Rejected("r3")};
  Decision top = TopNodes(d, 2, 2);
  std::vector<std::string> kept;
  for (const auto& n : top.nodes) kept.push_back(n.node);
  // b and d score 9 (b first on the tie); r1 and r2 are the first rejected; order preserved.
  EXPECT_EQ(kept, (std::vector<std::string>{"b", "r1", "d", "r2"}));
  EXPECT_EQ(top.omitted_nodes, 3u);
  EXPECT_EQ(top.notes, d.notes);
  EXPECT_EQ(top.pod_name, "p");
  // Ties broken by the scheduler's order, and everything kept when the limits allow.
  Decision one = TopNodes(d, 1, 0);
  ASSERT_EQ(one.nodes.size(), 1u);
  EXPECT_EQ(one.nodes[0].node, "b");
  EXPECT_EQ(one.omitted_nodes, 6u);
  Decision all = TopNodes(d, 100, 100);
  EXPECT_EQ(all.nodes, d.nodes);
  EXPECT_EQ(all.omitted_nodes, 0u);
  // Counts add up when a trimmed decision is trimmed again, and survive JSON.
  Decision twice = TopNodes(top, 1, 1);
  EXPECT_EQ(twice.omitted_nodes, 5u);
  auto back = DecisionFromJson(DecisionToJson(twice));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, twice);
}

TEST(DecisionTopNodesTest, NodesThatOnlyPassedAFilterAreLeftOut) {
  Decision d;
  d.verb = kVerbFilter;
  NodeDecision passed;
  passed.node = "ok";
  passed.passed = true;
  d.nodes = {passed, Rejected("bad"), passed};
  Decision top = TopNodes(d, 20, 50);
  ASSERT_EQ(top.nodes.size(), 1u);
  EXPECT_EQ(top.nodes[0].node, "bad");
  EXPECT_EQ(top.omitted_nodes, 2u);
}

TEST(DecisionKeepRejectedNodesTest, KeepsWhatTopNodesKeepsOfAFilter) {
  Decision d;
  d.verb = kVerbFilter;
  d.omitted_nodes = 1;
  for (const char* name : {"a", "b", "c", "d"}) d.nodes.push_back({.node = name, .passed = true});
  d.nodes[1].passed = false;
  d.nodes[1].reason = "too hot";
  d.nodes[3].passed = false;
  const Decision expected = TopNodes(d, 0, std::numeric_limits<std::size_t>::max());
  KeepRejectedNodes(d);
  EXPECT_EQ(d, expected);
  ASSERT_EQ(d.nodes.size(), 2u);
  EXPECT_EQ(d.nodes[0].node, "b");
  EXPECT_EQ(d.nodes[1].node, "d");
  EXPECT_EQ(d.omitted_nodes, 3u);  // the one already omitted and the two passes
  // A recorded filter must not keep the room of the nodes that passed.
  EXPECT_EQ(d.nodes.capacity(), 2u);
}

}  // namespace
}  // namespace powerctl::scoring
