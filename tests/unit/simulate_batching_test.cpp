#include "core/simulate/batching.h"

#include <gtest/gtest.h>

namespace powerctl::simulate {
namespace {

class OpportunisticBatchTest : public ::testing::Test {
 protected:
  OpportunisticBatchTest() {
    sim_.name = "n";
    sim_.max_pods = 110;
    for (int i = 0; i < 3; ++i) {
      NodeRuntime n;
      n.node = &sim_;
      n.cpu_allocatable_millis = 2000;
      n.memory_allocatable_bytes = std::int64_t{8} << 30;
      nodes_.push_back(n);
    }
  }

  static WorkloadPod Pod(std::int64_t cpu_millis) {
    WorkloadPod p;
    p.cpu_request_millis = p.cpu_nonzero_millis = cpu_millis;
    p.memory_request_bytes = p.memory_nonzero_bytes = std::int64_t{1} << 30;
    return p;
  }

  SimNode sim_;
  std::vector<NodeRuntime> nodes_;
  OpportunisticBatch batch_;
};

TEST_F(OpportunisticBatchTest, PodsLikeTheScoredOneTakeItsRankingOnceItsNodeIsFull) {
  WorkloadPod big = Pod(1500);                         // one per node
  EXPECT_FALSE(batch_.Hint(big, nodes_).has_value());  // nothing scored yet
  batch_.Store(big, {0, 1, 2}, {5, 9, 7}, 1);
  nodes_[1].Place(big);
  EXPECT_EQ(batch_.Hint(big, nodes_), 2u);  // the next of the ranking, unscored
  nodes_[2].Place(big);
  EXPECT_EQ(batch_.Hint(big, nodes_), 0u);
  nodes_[0].Place(big);
  EXPECT_FALSE(batch_.Hint(big, nodes_).has_value());  // the ranking is used up
  EXPECT_EQ(batch_.hinted(), 2);
}

TEST_F(OpportunisticBatchTest, AnotherSignatureOrAPreviousNodeWithRoomEndsTheBatch) {
  WorkloadPod small = Pod(500);
  batch_.Store(small, {0, 1, 2}, {5, 9, 7}, 1);
  nodes_[1].Place(small);
  // The previous node still has room for it: the batch ends (one pod per node), and stays
  // ended for the next pod.
  EXPECT_FALSE(batch_.Hint(small, nodes_).has_value());
  nodes_[1].Place(Pod(1500));
  EXPECT_FALSE(batch_.Hint(small, nodes_).has_value());
  // Another signature right after a scored pod ends it too.
  batch_.Store(small, {0, 1, 2}, {5, 9, 7}, 2);
  nodes_[2].Place(Pod(1500));
  EXPECT_FALSE(batch_.Hint(Pod(600), nodes_).has_value());
  EXPECT_EQ(batch_.hinted(), 0);
}

TEST_F(OpportunisticBatchTest, AHintTheFiltersRejectEndsTheBatch) {
  WorkloadPod big = Pod(1500);
  batch_.Store(big, {0, 1, 2}, {5, 9, 7}, 1);
  nodes_[1].Place(big);
  nodes_[2].Place(Pod(1000));  // the next of the ranking has no room any more
  EXPECT_FALSE(batch_.Hint(big, nodes_).has_value());
  EXPECT_FALSE(batch_.Hint(big, nodes_).has_value());  // and the batch is gone
}

}  // namespace
}  // namespace powerctl::simulate
