// PreparedNodeCache: a node is prepared again only when its cached object, telemetry's
// snapshots or the freshness of its readings change; entries follow nodes' positions when the
// cluster's index changes.

#include "core/scoring/prepared_nodes.h"
#include "tests/unit/telemetry_fakes.h"
#include "tests/unit/telemetry_test_support.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace powerctl::scoring {
namespace {

using std::chrono::seconds;
using telemetry_test::ManualClock;

class CountingCpu : public telemetry::CpuSource {
 public:
  explicit CountingCpu(ManualClock& clock) : clock_(clock) {}
  Result<std::map<std::string, telemetry::Reading>> Fetch(
      const std::vector<telemetry::NodeInfo>& nodes) override {
    std::map<std::string, telemetry::Reading> out;
    for (const auto& n : nodes) out[n.name] = telemetry::CpuReading(cores, clock_.Now(), "fake");
    return out;
  }
  std::string Describe() const override { return "fake"; }
  double cores = 4;

 private:
  ManualClock& clock_;
};

class PreparedNodeCacheTest : public ::testing::Test {
 protected:
  PreparedNodeCacheTest() : cpu_(clock_) {
    telemetry::TelemetryServiceOptions options;
    options.max_age = seconds(120);
    options.refresh_interval = seconds(15);
    options.time.clock = clock_.AsClock();
    service_ = std::make_unique<telemetry::TelemetryService>(
        cpu_, temps_,
        [] {
          return Result<std::vector<telemetry::NodeInfo>>(
              std::vector<telemetry::NodeInfo>{{"n1", {}, {}, 8.0}, {"n2", {}, {}, 8.0}});
        },
        options);
    EXPECT_TRUE(service_->Readings(telemetry::Wait::kIfEmpty).ok());
    facts1_->name = "n1";
    facts2_->name = "n2";
  }

  std::vector<NodeSource> Sources() {
    return {NodeSource{facts1_.get(), 8.0, facts1_, 0}, NodeSource{facts2_.get(), 8.0, facts2_, 1}};
  }

  // The prepared inputs of `sources` in one batch over `index`.
  std::vector<PreparedPtr> Prepare(const std::vector<NodeSource>& sources,
                                   const telemetry::TelemetryView* view,
                                   cluster::NodeIndexPtr index) {
    PreparedNodeCache::Batch batch = cache_.Begin(std::move(index), view, config_);
    std::vector<PreparedPtr> out;
    for (const NodeSource& source : sources) out.push_back(batch.Get(source));
    return out;
  }
  std::vector<PreparedPtr> Prepare(const telemetry::TelemetryView* view) {
    return Prepare(Sources(), view, index_);
  }

  static cluster::NodeIndexPtr IndexOf(const std::vector<std::string>& names) {
    return std::make_shared<const cluster::NodeIndex>(names);
  }

  ManualClock clock_;
  CountingCpu cpu_;
  testsupport::NoTemperatureSource temps_;
  std::unique_ptr<telemetry::TelemetryService> service_;
  config::PowerctlConfig config_;
  std::shared_ptr<predict::NodeFacts> facts1_ = std::make_shared<predict::NodeFacts>();
  std::shared_ptr<predict::NodeFacts> facts2_ = std::make_shared<predict::NodeFacts>();
  PreparedNodeCache cache_;
  cluster::NodeIndexPtr index_ = IndexOf({"n1", "n2"});
};

TEST_F(PreparedNodeCacheTest, ReusesPreparedNodesWhileNothingChanged) {
  auto view = service_->View();
  auto first = Prepare(&view);
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0]->node, "n1");
  EXPECT_EQ(first[0]->reading.cpu_cores_used.value, 4.0);
  EXPECT_EQ(cache_.prepared_count(), 2u);
  auto again = Prepare(&view);
  EXPECT_EQ(again[0].get(), first[0].get());
  EXPECT_EQ(again[1].get(), first[1].get());
  EXPECT_EQ(cache_.prepared_count(), 2u);
}

TEST_F(PreparedNodeCacheTest, ANewObjectForANodeIsPreparedAgainAlone) {
  auto view = service_->View();
  auto first = Prepare(&view);
  auto changed = std::make_shared<predict::NodeFacts>(*facts1_);
  changed->annotations["powerctl.io/idle-watts"] = "not a number";
  facts1_ = changed;  // the cache published a new object for n1
  auto second = Prepare(&view);
  EXPECT_NE(second[0].get(), first[0].get());
  EXPECT_FALSE(second[0]->error.empty());  // the new annotation is what was prepared
  EXPECT_EQ(second[1].get(), first[1].get());
  EXPECT_EQ(cache_.prepared_count(), 3u);
}

TEST_F(PreparedNodeCacheTest, NewTelemetryOrAStaleReadingPreparesAgain) {
  auto view = service_->View();
  auto first = Prepare(&view);
  // Readings go stale as time passes, even without a new snapshot.
  clock_.Advance(seconds(121));
  auto later = service_->View();
  auto stale = Prepare(&later);
  EXPECT_NE(stale[0].get(), first[0].get());
  EXPECT_FALSE(stale[0]->reading.cpu_cores_used.ok());
  EXPECT_FALSE(stale[0]->error.empty());
}

TEST_F(PreparedNodeCacheTest, AnEstimateIsRememberedForItsPreparedInputsAndKeyOnly) {
  auto view = service_->View();
  auto first = Prepare(&view);
  const EstimateKey key{0.5, 2.0, 8.0, true};
  predict::PowerEstimate estimate;
  estimate.watts_now = 100;
  estimate.watts_after = 130;
  estimate.fill_watts_per_core = 15;
  cache_.Remember(index_, 0, first[0].get(), key, estimate);
  // Not for another node's inputs, nor for an index the entries are not kept by.
  cache_.Remember(index_, 1, first[0].get(), key, estimate);
  cache_.Remember(IndexOf({"n1", "n2"}), 1, first[1].get(), key, estimate);
  {
    PreparedNodeCache::Batch batch = cache_.Begin(index_, &view, config_);
    auto kept = batch.Remembered(0, first[0].get(), key);
    ASSERT_TRUE(kept.has_value());
    EXPECT_EQ(kept->watts_after, 130);
    EXPECT_EQ(kept->fill_watts_per_core, 15);
    EXPECT_FALSE(batch.Remembered(1, first[1].get(), key).has_value());
    EXPECT_FALSE(batch.Remembered(0, first[0].get(), EstimateKey{0.5, 1.0, 8.0, true}).has_value());
    EXPECT_FALSE(
        batch.Remembered(0, first[0].get(), EstimateKey{0.75, 2.0, 8.0, true}).has_value());
  }
  // Prepared again (new telemetry): the estimate is forgotten.
  clock_.Advance(seconds(121));
  auto later = service_->View();
  auto again = Prepare(&later);
  PreparedNodeCache::Batch batch = cache_.Begin(index_, &later, config_);
  EXPECT_FALSE(batch.Remembered(0, again[0].get(), key).has_value());
  EXPECT_FALSE(batch.Remembered(0, first[0].get(), key).has_value());
}

TEST_F(PreparedNodeCacheTest, NodesWithoutAnOwnerASlotOrAnIndexAreNeverCached) {
  auto view = service_->View();
  std::vector<NodeSource> unowned = {NodeSource{facts1_.get(), 8.0, nullptr, 0}};
  EXPECT_NE(Prepare(unowned, &view, index_)[0].get(), Prepare(unowned, &view, index_)[0].get());
  std::vector<NodeSource> no_slot = {NodeSource{facts1_.get(), 8.0, facts1_, cluster::kNoNode}};
  EXPECT_NE(Prepare(no_slot, &view, index_)[0].get(), Prepare(no_slot, &view, index_)[0].get());
  // Without an index (no cluster cache) nothing is kept, and nothing kept is dropped.
  EXPECT_NE(Prepare(Sources(), &view, nullptr)[0].get(),
            Prepare(Sources(), &view, nullptr)[0].get());
  EXPECT_EQ(cache_.size(), 0u);
  EXPECT_EQ(cache_.prepared_count(), 8u);  // 1 + 1, 1 + 1, 2 + 2
}

TEST_F(PreparedNodeCacheTest, WithoutTelemetryTheReasonIsSaid) {
  auto prepared = Prepare(nullptr);
  EXPECT_EQ(prepared[0]->error, "no CPU usage: no telemetry configured");
  EXPECT_EQ(prepared[0]->reading.cpu_capacity, 8.0);
}

TEST_F(PreparedNodeCacheTest, ANodeJoiningMovesEntriesAndDepartedNodesAreDropped) {
  auto view = service_->View();
  auto first = Prepare(&view);
  ASSERT_EQ(cache_.size(), 2u);
  // "n0" joins ahead of both: their positions move, their prepared inputs stay.
  auto joined = IndexOf({"n0", "n1", "n2"});
  auto n0 = std::make_shared<predict::NodeFacts>();
  n0->name = "n0";
  std::vector<NodeSource> three = {NodeSource{n0.get(), 8.0, n0, 0},
                                   NodeSource{facts1_.get(), 8.0, facts1_, 1},
                                   NodeSource{facts2_.get(), 8.0, facts2_, 2}};
  auto after_join = Prepare(three, &view, joined);
  EXPECT_EQ(after_join[1].get(), first[0].get());
  EXPECT_EQ(after_join[2].get(), first[1].get());
  EXPECT_EQ(cache_.prepared_count(), 3u);  // only n0
  // n1 leaves: its entry goes with it.
  auto left = IndexOf({"n0", "n2"});
  std::vector<NodeSource> two = {three[0], NodeSource{facts2_.get(), 8.0, facts2_, 1}};
  auto after_leave = Prepare(two, &view, left);
  EXPECT_EQ(after_leave[1].get(), first[1].get());
  EXPECT_EQ(cache_.size(), 2u);
  EXPECT_EQ(cache_.prepared_count(), 3u);
}

TEST_F(PreparedNodeCacheTest, ConcurrentBatchesOverDifferentIndexesStayCorrect) {
  auto view = service_->View();
  auto other = IndexOf({"n2", "n1"});
  std::vector<NodeSource> swapped = {NodeSource{facts2_.get(), 8.0, facts2_, 0},
                                     NodeSource{facts1_.get(), 8.0, facts1_, 1}};
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        bool even = (t + i) % 2 == 0;
        auto got = even ? Prepare(Sources(), &view, index_) : Prepare(swapped, &view, other);
        if (got[0]->node != (even ? "n1" : "n2") || got[1]->node != (even ? "n2" : "n1")) ++wrong;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(cache_.size(), 2u);
}

}  // namespace
}  // namespace powerctl::scoring
