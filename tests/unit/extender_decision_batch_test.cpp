// DecisionBatch, the Event that records many pods' decisions, and DecisionsFromBatchEvent,
// its reader (what `explain` shows).
#include "core/extender/decision_batch.h"

#include <gtest/gtest.h>

namespace powerctl::extender {
namespace {

using nlohmann::json;
using scoring::Decision;
using scoring::NodeDecision;

DecisionEventSource BatchSource() {
  return {"replica-a", "abc123", std::chrono::system_clock::from_time_t(1700000000)};
}

Decision BatchPrioritized(const std::string& pod, const std::string& uid) {
  Decision d;
  d.verb = scoring::kVerbPrioritize;
  d.pod_namespace = "team";
  d.pod_name = pod;
  d.pod_uid = uid;
  d.at_unix_ms = 1700000000123;
  NodeDecision a;
  a.node = "node-a";
  a.score = 10;
  a.components = {{"power", 10, "+1.0 W"}};
  d.nodes = {a};
  return d;
}

DecisionBatch BatchOf(const std::vector<Decision>& decisions) {
  DecisionBatch batch("team");
  for (const Decision& d : decisions) {
    auto entry = BatchEntry(d, batch.empty());
    EXPECT_TRUE(entry);
    EXPECT_TRUE(batch.Fits(*entry));
    batch.Add(std::move(*entry));
  }
  return batch;
}

const std::string kUid1 = "0b7a6f1e-5d4c-4b3a-9f8e-7d6c5b4a3f2e";
const std::string kUid2 = "9a8b7c6d-5e4f-3a2b-1c0d-9e8f7a6b5c4d";

TEST(DecisionBatch, OneEventHoldsEachPodsDecisionFoundByItsLabel) {
  Decision web1 = BatchPrioritized("web-1", kUid1);
  Decision web2 = BatchPrioritized("web-2", kUid2);
  web2.nodes[0].score = 3;
  json event = json::parse(BatchOf({web1, web2}).ToEvent(BatchSource()).dump());

  EXPECT_EQ(event["reason"], kReasonPowerDecisions);
  EXPECT_EQ(event["metadata"]["namespace"], "team");
  EXPECT_EQ(event["metadata"]["name"], "web-1.abc123");
  // The first pod is the Event's object; each pod has its label.
  EXPECT_EQ(event["involvedObject"]["name"], "web-1");
  EXPECT_EQ(event["involvedObject"]["uid"], kUid1);
  EXPECT_EQ(event["metadata"]["labels"],
            (json{{"powerctl.io/pod-" + kUid1, ""}, {"powerctl.io/pod-" + kUid2, ""}}));
  EXPECT_EQ(event["message"],
            "Power decisions for 2 pods: web-1, web-2 (powerctl explain pod NAME shows each)");

  auto found = DecisionsFromBatchEvent(event, "web-2", kUid2);
  ASSERT_TRUE(found.ok()) << found.error().message;
  ASSERT_EQ(found->size(), 1u);
  EXPECT_EQ((*found)[0].decision, web2);
  EXPECT_EQ((*found)[0].event_reason, kReasonPowerDecisions);
  EXPECT_EQ((*found)[0].instance, "replica-a");
  EXPECT_EQ((*found)[0].last_timestamp, "2023-11-14T22:13:20Z");
  // Another pod of the same name (a later one, another uid) has no decision here.
  auto other = DecisionsFromBatchEvent(event, "web-2", "11111111-2222-3333-4444-555555555555");
  ASSERT_TRUE(other.ok());
  EXPECT_TRUE(other->empty());
}

TEST(DecisionBatch, ABatchOfOneReadsLikeTheSingleEvent) {
  Decision d = BatchPrioritized("web-1", kUid1);
  json event = BatchOf({d}).ToEvent(BatchSource());
  EXPECT_EQ(event["message"], DecisionEventMessage(d));
  EXPECT_EQ(json::parse(event["metadata"]["annotations"][kDecisionsAnnotation].get<std::string>()),
            json::array({json::parse(DecisionAnnotation(d))}));
}

TEST(DecisionBatch, DecisionsWithoutARecordAreNotBatched) {
  Decision passed = BatchPrioritized("web-1", kUid1);
  passed.verb = scoring::kVerbFilter;
  passed.nodes[0].passed = true;
  EXPECT_FALSE(BatchEntry(passed, true));
  passed.nodes[0].passed = false;
  EXPECT_TRUE(BatchEntry(passed, true));
  Decision no_pod = BatchPrioritized("", "");
  EXPECT_FALSE(BatchEntry(no_pod, true));
}

TEST(DecisionBatch, IsBoundedByCountAndBytes) {
  DecisionBatch batch("team");
  Decision d = BatchPrioritized("web-1", kUid1);
  for (std::size_t i = 0; i < kMaxBatchDecisions; ++i) {
    auto entry = *BatchEntry(d, false);
    ASSERT_TRUE(batch.Fits(entry)) << i;
    batch.Add(std::move(entry));
  }
  EXPECT_FALSE(batch.Fits(*BatchEntry(d, false)));

  // Eleven 16 KiB decisions fit in the annotation's 192 KiB, not twelve.
  DecisionBatch big("team");
  BatchedDecision large{"web-1", kUid1, std::string(16 * 1024, 'x'), ""};
  std::size_t taken = 0;
  while (big.Fits(large) && taken < 100) {
    big.Add(large);
    ++taken;
  }
  EXPECT_EQ(taken, kMaxBatchAnnotationBytes / (16 * 1024 + 1));
  // An empty batch takes anything: a decision is never refused for its size.
  DecisionBatch empty("team");
  EXPECT_TRUE(empty.Fits(BatchedDecision{"p", "u", std::string(300 * 1024, 'x'), ""}));
}

TEST(DecisionBatch, AUidThatIsNoLabelNameIsHashed) {
  EXPECT_EQ(PodLabel(kUid1), "powerctl.io/pod-" + kUid1);
  const std::string odd = PodLabel("not a uid/");
  EXPECT_EQ(odd.rfind("powerctl.io/pod-h", 0), 0u);
  EXPECT_EQ(odd.size(), std::string("powerctl.io/pod-h").size() + 16);
  EXPECT_EQ(odd, PodLabel("not a uid/"));  // stable: explain computes it again
  EXPECT_NE(odd, PodLabel("not a uid!"));
  EXPECT_EQ(PodLabel(std::string(60, 'a')).size(), std::string("powerctl.io/pod-h").size() + 16);
}

TEST(DecisionBatch, ReadingRefusesWhatIsNotABatch) {
  json single = *DecisionEvent(BatchPrioritized("web-1", kUid1), BatchSource());
  EXPECT_EQ(DecisionsFromBatchEvent(single, "web-1", kUid1).error().code, ErrorCode::kNotFound);
  json event = BatchOf({BatchPrioritized("web-1", kUid1)}).ToEvent(BatchSource());
  event["metadata"]["annotations"][kDecisionsAnnotation] = "{\"not\": \"a list\"}";
  EXPECT_EQ(DecisionsFromBatchEvent(event, "web-1", kUid1).error().code, ErrorCode::kInvalidInput);
  event["metadata"]["annotations"][kDecisionsAnnotation] = "[{\"verb\": 3}]";
  EXPECT_EQ(DecisionsFromBatchEvent(event, "web-1", kUid1).error().code, ErrorCode::kInvalidInput);
}

}  // namespace
}  // namespace powerctl::extender
