#include "core/common/encoding.h"
#include "core/extender/decision_events.h"
#include "core/kube/events.h"

#include <gtest/gtest.h>

#include <string>

namespace powerctl::extender {
namespace {

using nlohmann::json;
using scoring::Decision;
using scoring::NodeDecision;

NodeDecision Scored(const std::string& name, std::int64_t score, const std::string& watts) {
  NodeDecision n;
  n.node = name;
  n.passed = true;
  n.score = score;
  n.components = {{"power", static_cast<double>(score), watts}};
  return n;
}

NodeDecision Rejected(const std::string& name, const std::string& reason) {
  NodeDecision n;
  n.node = name;
  n.passed = false;
  n.reason = reason;
  return n;
}

Decision PrioritizedDecision(std::size_t nodes) {
  Decision d;
  d.verb = scoring::kVerbPrioritize;
  d.pod_namespace = "team";
  d.pod_name = "web-1";
  d.pod_uid = "u-1";
  d.at_unix_ms = 1700000000123;
  d.notes = {"power: 3 nodes with a prediction add +1.0 W (score 10) to +9.0 W (score 0)"};
  for (std::size_t i = 0; i < nodes; ++i) {
    d.nodes.push_back(Scored("node-" + std::to_string(i), static_cast<std::int64_t>(i % 11),
                             "+" + std::to_string(i % 11) + ".0 W"));
  }
  return d;
}

DecisionEventSource Source() {
  return {"replica-a", "00000000000000ab",
          std::chrono::system_clock::time_point(std::chrono::seconds(1700000000))};
}

TEST(DecisionEventTest, PrioritizeBecomesAPowerScoredEventOnThePod) {
  Decision d = PrioritizedDecision(3);
  auto event = DecisionEvent(d, Source());
  ASSERT_TRUE(event.has_value());
  const json& e = *event;
  EXPECT_EQ(e["metadata"]["name"], "web-1.00000000000000ab");
  EXPECT_EQ(e["metadata"]["namespace"], "team");
  EXPECT_EQ(e["involvedObject"], json::parse(R"({"apiVersion":"v1","kind":"Pod","namespace":"team",
                                                  "name":"web-1","uid":"u-1"})"));
  EXPECT_EQ(e["reason"], kReasonPowerScored);
  EXPECT_EQ(e["type"], "Normal");
  EXPECT_EQ(e["source"]["component"], "powerctl-extender");
  EXPECT_EQ(e["reportingInstance"], "replica-a");
  EXPECT_EQ(e["firstTimestamp"], "2023-11-14T22:13:20Z");
  EXPECT_EQ(e["count"], 1);
  // The best node first, with its power delta, then the range.
  EXPECT_EQ(e["message"],
            "Scored 3 nodes for power; best node-2 2 (+2.0 W), node-1 1 (+1.0 W), node-0 0 "
            "(+0.0 W); power: 3 nodes with a prediction add +1.0 W (score 10) to +9.0 W (score 0)");
  auto back = scoring::DecisionFromJson(
      json::parse(e["metadata"]["annotations"][kDecisionAnnotation].get<std::string>()));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, d);
}

TEST(DecisionEventTest, LargeDecisionsKeepTheBestNodesWithinTheLimits) {
  Decision d = PrioritizedDecision(5000);
  d.notes.push_back(std::string(3000, 'x'));
  auto event = DecisionEvent(d, Source());
  ASSERT_TRUE(event.has_value());
  const std::string annotation = (*event)["metadata"]["annotations"][kDecisionAnnotation];
  EXPECT_LE(annotation.size(), kMaxDecisionAnnotationBytes);
  EXPECT_LE((*event)["message"].get<std::string>().size(), kube::kMaxEventMessageBytes);
  auto back = scoring::DecisionFromJson(json::parse(annotation));
  ASSERT_TRUE(back.ok());
  ASSERT_EQ(back->nodes.size(), kEventScoredNodes);
  EXPECT_EQ(back->omitted_nodes, 5000 - kEventScoredNodes);
  for (const NodeDecision& n : back->nodes) EXPECT_EQ(n.score, 10);  // the best score
  EXPECT_NE((*event)["message"].get<std::string>().find("and 4995 more"), std::string::npos);

  // Reasons so long that 20 nodes do not fit: fewer nodes, still valid, still within 16 KiB.
  Decision wordy = PrioritizedDecision(100);
  for (auto& n : wordy.nodes) n.components[0].reason = std::string(2000, 'w');
  std::string text = DecisionAnnotation(wordy);
  EXPECT_LE(text.size(), kMaxDecisionAnnotationBytes);
  auto shrunk = scoring::DecisionFromJson(json::parse(text));
  ASSERT_TRUE(shrunk.ok());
  EXPECT_FALSE(shrunk->nodes.empty());
  EXPECT_EQ(shrunk->nodes.size() + shrunk->omitted_nodes, 100u);
}

TEST(DecisionEventTest, WhenReasonsDoNotFitEachNodesPowerCostStays) {
  // 20 nodes whose policy reasons alone exceed 16 KiB: the policy reasons go, the power
  // reasons (the cost `explain` compares) stay.
  Decision d = PrioritizedDecision(20);
  for (auto& n : d.nodes) {
    n.score = 10;
    n.components[0].reason = "+12.5 W, 3.25 W/core to fill";
    n.components.push_back({"policy", 10, std::string(1000, 'p')});
  }
  auto back = scoring::DecisionFromJson(json::parse(DecisionAnnotation(d)));
  ASSERT_TRUE(back.ok()) << back.error().message;
  ASSERT_EQ(back->nodes.size(), 20u);
  for (const NodeDecision& n : back->nodes) {
    ASSERT_EQ(n.components.size(), 2u);
    EXPECT_EQ(n.components[0].reason, "+12.5 W, 3.25 W/core to fill");
    EXPECT_EQ(n.components[1].reason, "");
  }
  EXPECT_EQ(back->notes, d.notes);
}

TEST(DecisionEventTest, FilterEventsOnlyWhenANodeWasRejected) {
  Decision d;
  d.verb = scoring::kVerbFilter;
  d.pod_namespace = "team";
  d.pod_name = "web-1";
  d.nodes = {Scored("a", 0, ""), Scored("b", 0, "")};
  for (auto& n : d.nodes) n.score.reset();
  EXPECT_FALSE(DecisionEvent(d, Source()).has_value());
  d.nodes.push_back(Rejected("hot-1", "policy dontschedule: temperature 91 > 80"));
  auto event = DecisionEvent(d, Source());
  ASSERT_TRUE(event.has_value());
  EXPECT_EQ((*event)["reason"], kReasonPowerFiltered);
  EXPECT_EQ((*event)["message"],
            "Rejected 1 of 3 nodes: hot-1: policy dontschedule: temperature 91 > 80");
  Decision preempt = d;
  preempt.verb = scoring::kVerbPreempt;
  EXPECT_FALSE(DecisionEvent(preempt, Source()).has_value());
  Decision nameless = PrioritizedDecision(2);
  nameless.pod_namespace.clear();
  EXPECT_FALSE(DecisionEvent(nameless, Source()).has_value());
}

TEST(DecisionEventTest, TheCutDecisionTheWriterQueuesMakesTheSameEvent) {
  // A 5,000-node prioritize, and a filter with rejections scattered among passes (more than
  // the annotation keeps), each with notes: the Event from the cut decision is the Event
  // from the whole one, counts in the message included.
  Decision scored = PrioritizedDecision(5000);
  Decision filtered = scored;
  filtered.verb = scoring::kVerbFilter;
  for (std::size_t i = 0; i < filtered.nodes.size(); ++i) {
    filtered.nodes[i].score.reset();
    filtered.nodes[i].components = {};
    if (i % 37 == 0) filtered.nodes[i] = Rejected(filtered.nodes[i].node, "too hot");
  }
  for (const Decision* whole : {&scored, &filtered}) {
    const Decision cut = DecisionForEvent(*whole);
    EXPECT_LT(cut.nodes.size(), whole->nodes.size() / 10);
    EXPECT_EQ(cut.nodes.size() + cut.omitted_nodes, whole->nodes.size());
    EXPECT_EQ(DecisionEventMessage(cut), DecisionEventMessage(*whole));
    EXPECT_EQ(DecisionAnnotation(cut), DecisionAnnotation(*whole));
    EXPECT_EQ(DecisionEvent(cut, Source()), DecisionEvent(*whole, Source()));
  }
  EXPECT_NE(DecisionEventMessage(filtered).find("Rejected 136 of 5000 nodes"), std::string::npos)
      << DecisionEventMessage(filtered);
}

TEST(DecisionEventTest, LongPodNamesStillMakeValidEventNames) {
  Decision d = PrioritizedDecision(1);
  d.pod_name = std::string(250, 'p');
  auto event = DecisionEvent(d, Source());
  ASSERT_TRUE(event.has_value());
  const std::string name = (*event)["metadata"]["name"];
  EXPECT_LE(name.size(), 253u);
  EXPECT_EQ(name.substr(name.size() - 17), ".00000000000000ab");
  EXPECT_EQ((*event)["involvedObject"]["name"], d.pod_name);
}

TEST(DecisionEventTest, TruncatesOnCharacterBoundaries) {
  EXPECT_EQ(TruncateUtf8("short", 10), "short");
  const std::string ellipsis = "\xE2\x80\xA6";  // "…"
  EXPECT_EQ(TruncateUtf8("abcdefghij", 8), "abcde" + ellipsis);
  // "é" is two bytes: a cut inside it backs up to before it.
  std::string text = "abcd\xC3\xA9zzzzzz";
  EXPECT_EQ(TruncateUtf8(text, 8), "abcd" + ellipsis);
  EXPECT_EQ(TruncateUtf8(text, 9), "abcd\xC3\xA9" + ellipsis);
  EXPECT_EQ(TruncateUtf8(text, 2), "");  // no room for the mark
  // A message of three-byte characters is cut whole, within the limit, and marked.
  Decision wide = PrioritizedDecision(1);
  wide.notes = {""};
  for (int i = 0; i < 600; ++i) wide.notes[0] += "\xE2\x84\x83";  // "℃"
  const std::string message = DecisionEventMessage(wide);
  EXPECT_LE(message.size(), kube::kMaxEventMessageBytes);
  EXPECT_GT(message.size(), kube::kMaxEventMessageBytes - 6);
  EXPECT_EQ(message.substr(message.size() - 3), ellipsis);
  EXPECT_NO_THROW((void)json(message).dump());  // strict: throws on invalid UTF-8
  Decision d = PrioritizedDecision(1);
  d.error = std::string(2000, 'e') + "\xff";
  auto event = DecisionEvent(d, Source());
  ASSERT_TRUE(event.has_value());
  EXPECT_LE((*event)["message"].get<std::string>().size(), kube::kMaxEventMessageBytes);
  EXPECT_NO_THROW((void)event->dump());
}

}  // namespace
}  // namespace powerctl::extender
