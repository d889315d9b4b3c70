// DecisionFromEvent, the reader of what DecisionEvent writes (what `explain` shows).
#include "core/extender/decision_events.h"

#include <gtest/gtest.h>

namespace powerctl::extender {
namespace {

using nlohmann::json;
using scoring::Decision;
using scoring::NodeDecision;

DecisionEventSource ParsedSource() {
  return {"replica-a", "abc123", std::chrono::system_clock::from_time_t(1700000000)};
}

Decision ParsedPrioritized() {
  Decision d;
  d.verb = scoring::kVerbPrioritize;
  d.pod_namespace = "team";
  d.pod_name = "web-1";
  d.pod_uid = "u-1";
  d.at_unix_ms = 1700000000123;
  d.notes = {"power: 2 nodes with a prediction add +1.0 W (score 10) to +9.0 W (score 0)"};
  NodeDecision a;
  a.node = "node-a";
  a.score = 10;
  a.watts_now = 120.25;
  a.watts_after = 121.25;
  a.components = {{"power", 10, "+1.0 W"}, {"policy", 3.5, "policy p scheduleonmetric: m=2"}};
  NodeDecision b;
  b.node = "node-b";
  b.score = 0;
  b.watts_now = 200;
  b.watts_after = 209;
  b.components = {{"power", 0, "+9.0 W"}};
  d.nodes = {a, b};
  return d;
}

TEST(DecisionFromEvent, RoundTripsAPrioritize) {
  Decision d = ParsedPrioritized();
  auto event = DecisionEvent(d, ParsedSource());
  ASSERT_TRUE(event);
  // Through the API server: JSON text and back.
  auto parsed = DecisionFromEvent(json::parse(event->dump()));
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_EQ(parsed->decision, d);
  EXPECT_EQ(parsed->event_reason, kReasonPowerScored);
  EXPECT_EQ(parsed->instance, "replica-a");
  EXPECT_EQ(parsed->last_timestamp, "2023-11-14T22:13:20Z");
  EXPECT_EQ(parsed->message, DecisionEventMessage(d));
}

TEST(DecisionFromEvent, RoundTripsARejectingFilter) {
  Decision d;
  d.verb = scoring::kVerbFilter;
  d.pod_namespace = "team";
  d.pod_name = "web-1";
  d.at_unix_ms = 42;
  NodeDecision rejected;
  rejected.node = "node-a";
  rejected.passed = false;
  rejected.reason = "pod group team/g has 1 of 2 pods (minAvailable)";
  d.nodes = {rejected};
  auto event = DecisionEvent(d, ParsedSource());
  ASSERT_TRUE(event);
  auto parsed = DecisionFromEvent(*event);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_EQ(parsed->decision, d);
  EXPECT_EQ(parsed->event_reason, kReasonPowerFiltered);
}

TEST(DecisionFromEvent, RecordsWhatWasLeftOutOfALargeDecision) {
  Decision d = ParsedPrioritized();
  for (int i = 0; i < 100; ++i) {
    NodeDecision n;
    n.node = "extra-" + std::to_string(i);
    n.score = 1;
    d.nodes.push_back(n);
  }
  auto parsed = DecisionFromEvent(*DecisionEvent(d, ParsedSource()));
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->decision.nodes.size(), kEventScoredNodes);
  EXPECT_EQ(parsed->decision.omitted_nodes, d.nodes.size() - kEventScoredNodes);
}

TEST(DecisionFromEvent, OtherEventsAreNotFound) {
  json scheduled = {{"reason", "Scheduled"}, {"message", "Successfully assigned"}};
  EXPECT_EQ(DecisionFromEvent(scheduled).error().code, ErrorCode::kNotFound);
  json bare = {{"reason", kReasonPowerScored}, {"metadata", json::object()}};
  EXPECT_EQ(DecisionFromEvent(bare).error().code, ErrorCode::kNotFound);
}

TEST(DecisionFromEvent, ABrokenAnnotationIsInvalid) {
  json event = {{"reason", kReasonPowerScored},
                {"metadata", {{"annotations", {{kDecisionAnnotation, "{not json"}}}}}};
  EXPECT_EQ(DecisionFromEvent(event).error().code, ErrorCode::kInvalidInput);
  event["metadata"]["annotations"][kDecisionAnnotation] = R"({"nodes":[{"node":1}]})";
  auto parsed = DecisionFromEvent(event);
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.error().code, ErrorCode::kInvalidInput);
  EXPECT_NE(parsed.error().message.find("nodes[0].node"), std::string::npos);
}

TEST(DecisionFromEvent, HostileNestingIsRefusedBeforeParsing) {
  // Anyone allowed to create Events can write this annotation.
  std::string deep = R"({"nodes":)" + std::string(100000, '[') + std::string(100000, ']') + "}";
  json event = {{"reason", kReasonPowerScored},
                {"metadata", {{"annotations", {{kDecisionAnnotation, deep}}}}}};
  auto parsed = DecisionFromEvent(event);
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.error().code, ErrorCode::kInvalidInput);
  EXPECT_NE(parsed.error().message.find("nested too deeply"), std::string::npos);
}

}  // namespace
}  // namespace powerctl::extender
