#include "core/scoring/decision.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

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
  };
  for (const auto& [text, reason] : cases) {
    auto d = DecisionFromJson(json::parse(text));
    ASSERT_FALSE(d.ok()) << text;
    EXPECT_NE(d.error().message.find(reason), std::string::npos) << d.error().message;
  }
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

}  // namespace
}  // namespace powerctl::scoring
