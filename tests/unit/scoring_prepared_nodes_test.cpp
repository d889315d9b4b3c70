// PreparedNodeCache: a node is prepared again only when its cached object, telemetry's
// snapshots or the freshness of its readings change.

#include "core/scoring/prepared_nodes.h"
#include "tests/unit/telemetry_fakes.h"
#include "tests/unit/telemetry_test_support.h"

#include <gtest/gtest.h>

#include <memory>

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
    return {NodeSource{facts1_.get(), 8.0, facts1_}, NodeSource{facts2_.get(), 8.0, facts2_}};
  }

  ManualClock clock_;
  CountingCpu cpu_;
  testsupport::NoTemperatureSource temps_;
  std::unique_ptr<telemetry::TelemetryService> service_;
  manifests::PowerctlConfig config_;
  std::shared_ptr<predict::NodeFacts> facts1_ = std::make_shared<predict::NodeFacts>();
  std::shared_ptr<predict::NodeFacts> facts2_ = std::make_shared<predict::NodeFacts>();
  PreparedNodeCache cache_;
};

TEST_F(PreparedNodeCacheTest, ReusesPreparedNodesWhileNothingChanged) {
  auto view = service_->View();
  auto first = cache_.Prepare(Sources(), &view, config_, 2);
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0]->node, "n1");
  EXPECT_EQ(first[0]->reading.cpu_cores_used.value, 4.0);
  EXPECT_EQ(cache_.prepared_count(), 2u);
  auto again = cache_.Prepare(Sources(), &view, config_, 2);
  EXPECT_EQ(again[0].get(), first[0].get());
  EXPECT_EQ(again[1].get(), first[1].get());
  EXPECT_EQ(cache_.prepared_count(), 2u);
}

TEST_F(PreparedNodeCacheTest, ANewObjectForANodeIsPreparedAgainAlone) {
  auto view = service_->View();
  auto first = cache_.Prepare(Sources(), &view, config_, 2);
  auto changed = std::make_shared<predict::NodeFacts>(*facts1_);
  changed->annotations["powerctl.io/idle-watts"] = "not a number";
  facts1_ = changed;  // the cache published a new object for n1
  auto second = cache_.Prepare(Sources(), &view, config_, 2);
  EXPECT_NE(second[0].get(), first[0].get());
  EXPECT_FALSE(second[0]->error.empty());  // the new annotation is what was prepared
  EXPECT_EQ(second[1].get(), first[1].get());
  EXPECT_EQ(cache_.prepared_count(), 3u);
}

TEST_F(PreparedNodeCacheTest, NewTelemetryOrAStaleReadingPreparesAgain) {
  auto view = service_->View();
  auto first = cache_.Prepare(Sources(), &view, config_, 2);
  // Readings go stale as time passes, even without a new snapshot.
  clock_.Advance(seconds(121));
  auto later = service_->View();
  auto stale = cache_.Prepare(Sources(), &later, config_, 2);
  EXPECT_NE(stale[0].get(), first[0].get());
  EXPECT_FALSE(stale[0]->reading.cpu_cores_used.ok());
  EXPECT_FALSE(stale[0]->error.empty());
}

TEST_F(PreparedNodeCacheTest, NodesWithoutAnOwnerAreNeverCached) {
  auto view = service_->View();
  std::vector<NodeSource> sources = {NodeSource{facts1_.get(), 8.0, nullptr}};
  auto a = cache_.Prepare(sources, &view, config_, 1);
  auto b = cache_.Prepare(sources, &view, config_, 1);
  EXPECT_NE(a[0].get(), b[0].get());
  EXPECT_EQ(cache_.size(), 0u);
}

TEST_F(PreparedNodeCacheTest, WithoutTelemetryTheReasonIsSaid) {
  auto prepared = cache_.Prepare(Sources(), nullptr, config_, 2);
  EXPECT_EQ(prepared[0]->error, "no CPU usage: no telemetry configured");
  EXPECT_EQ(prepared[0]->reading.cpu_capacity, 8.0);
}

TEST_F(PreparedNodeCacheTest, EntriesOfDepartedNodesAreDropped) {
  auto view = service_->View();
  std::vector<std::shared_ptr<predict::NodeFacts>> many;
  std::vector<NodeSource> sources;
  for (int i = 0; i < 1100; ++i) {
    many.push_back(std::make_shared<predict::NodeFacts>());
    many.back()->name = "gone-" + std::to_string(i);
    sources.push_back(NodeSource{many.back().get(), 8.0, many.back()});
  }
  (void)cache_.Prepare(sources, &view, config_, 1100);
  EXPECT_EQ(cache_.size(), 1100u);
  // The cluster now has two nodes: once over the slack, the others are dropped.
  (void)cache_.Prepare(Sources(), &view, config_, 2);
  EXPECT_EQ(cache_.size(), 2u);
}

}  // namespace
}  // namespace powerctl::scoring
