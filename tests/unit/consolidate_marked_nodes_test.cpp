// What `status` and `doctor` say of the nodes consolidate marked: drift is a drained node that
// no longer keeps its promise (uncordoned, pods landed, still on) or a drain left unfinished.
#include "core/consolidate/marked_nodes.h"
#include "core/consolidate/node_marks.h"
#include "core/telemetry/metrics_api.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace powerctl::consolidate {
namespace {

using json = nlohmann::json;
using std::chrono::minutes;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

const auto kNow = *telemetry::ParseRfc3339("2026-11-27T12:00:00Z");

json Marked(const char* state, const std::string& since, bool cordoned = true,
            const char* heartbeat = nullptr) {
  json node = {
      {"metadata",
       {{"name", "n1"},
        {"labels", {{kPowerStateLabel, state}}},
        {"annotations",
         {{kConsolidationAnnotation,
           json{{"state", state}, {"since", since}, {"expectedWattsSaved", 250.0}}.dump()}}}}},
      {"spec", {{"unschedulable", cordoned}}}};
  if (heartbeat != nullptr) {
    node["status"]["conditions"] = {
        {{"type", "Ready"}, {"status", "True"}, {"lastHeartbeatTime", heartbeat}}};
  }
  return node;
}

json MarkedPod(const std::string& name, const char* owner_kind) {
  return {{"metadata",
           {{"name", name},
            {"namespace", "shop"},
            {"ownerReferences", {{{"kind", owner_kind}, {"name", "o"}, {"controller", true}}}}}},
          {"spec", {{"nodeName", "n1"}}},
          {"status", {{"phase", "Running"}}}};
}

TEST(ConsolidateMarkedNodes, ADrainedNodeOffAndEmptyHasNoDrift) {
  MarkedNode n = JudgeMarkedNode(Marked(kPowerStateDrained, "2026-11-27T10:00:00Z"),
                                 {MarkedPod("agent", "DaemonSet")}, kNow);
  EXPECT_EQ(n.mark.expected_watts_saved, 250.0);
  EXPECT_TRUE(n.cordoned);
  EXPECT_FALSE(n.kubelet_ready);
  EXPECT_TRUE(n.movable.empty());
  EXPECT_TRUE(n.drift.empty());
}

TEST(ConsolidateMarkedNodes, UncordonedLandedAndStillOnAreDrift) {
  MarkedNode n = JudgeMarkedNode(
      Marked(kPowerStateDrained, "2026-11-27T10:00:00Z", false, "2026-11-27T11:59:00Z"),
      {MarkedPod("web-2", "ReplicaSet"), MarkedPod("agent", "DaemonSet")}, kNow);
  EXPECT_THAT(n.movable, ElementsAre("shop/web-2"));
  ASSERT_EQ(n.drift.size(), 3u);
  EXPECT_THAT(n.drift[0], HasSubstr("uncordoned"));
  EXPECT_THAT(n.drift[1], HasSubstr("1 pod(s) landed on it since it was drained (shop/web-2)"));
  EXPECT_THAT(n.drift[2], HasSubstr("still on 2 h after it was drained"));
}

TEST(ConsolidateMarkedNodes, StillOnIsDriftOnlyAfterTheGraceAndWithAFreshHeartbeat) {
  // Drained 5 minutes ago: its hook may still be switching it off.
  EXPECT_TRUE(JudgeMarkedNode(
                  Marked(kPowerStateDrained, "2026-11-27T11:55:00Z", true, "2026-11-27T11:59:30Z"),
                  {}, kNow)
                  .drift.empty());
  // A stale heartbeat: the node stopped reporting, it is off.
  EXPECT_TRUE(JudgeMarkedNode(
                  Marked(kPowerStateDrained, "2026-11-27T10:00:00Z", true, "2026-11-27T11:40:00Z"),
                  {}, kNow)
                  .drift.empty());
}

TEST(ConsolidateMarkedNodes, ADrainLeftUnfinishedIsDriftAfterHalfAnHour) {
  EXPECT_TRUE(
      JudgeMarkedNode(Marked(kPowerStateDraining, "2026-11-27T11:50:00Z"), {}, kNow).drift.empty());
  MarkedNode n = JudgeMarkedNode(Marked(kPowerStateDraining, "2026-11-27T11:00:00Z"), {}, kNow);
  ASSERT_EQ(n.drift.size(), 1u);
  EXPECT_THAT(n.drift[0], HasSubstr("draining for 60 min: an apply was interrupted"));
}

TEST(ConsolidateMarkedNodes, MeasuredPowerAboveTheStandbyBoundIsStillOnAfterTheGrace) {
  EXPECT_EQ(StillOnWatts(100), 20);  // a small node: the floor
  EXPECT_EQ(StillOnWatts(600), 60);  // a large one: a tenth of its saving
  const json drained = Marked(kPowerStateDrained, "2026-11-27T10:00:00Z");  // no heartbeat
  MarkedNode on = JudgeMarkedNode(drained, {}, kNow, 180.0);
  EXPECT_EQ(on.measured_watts, 180.0);
  ASSERT_EQ(on.drift.size(), 1u);
  EXPECT_EQ(on.drift[0],
            "still draws 180 W 2 h after it was drained (measured; more than 25 W means on): the "
            "watts the plan expected are not saved");
  // Standby draw (BMC, power supplies) is off.
  EXPECT_TRUE(JudgeMarkedNode(drained, {}, kNow, 12.0).drift.empty());
  // Within the grace its hook may still be switching it off.
  EXPECT_TRUE(JudgeMarkedNode(Marked(kPowerStateDrained, "2026-11-27T11:50:00Z"), {}, kNow, 180.0)
                  .drift.empty());
  // Measured and Ready both: said once, with the watts.
  MarkedNode both = JudgeMarkedNode(
      Marked(kPowerStateDrained, "2026-11-27T10:00:00Z", true, "2026-11-27T11:59:00Z"), {}, kNow,
      180.0);
  ASSERT_EQ(both.drift.size(), 1u);
  EXPECT_THAT(both.drift[0], HasSubstr("still draws 180 W"));
}

}  // namespace
}  // namespace powerctl::consolidate
