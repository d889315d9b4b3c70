// TelemetryService: sources behind caches, merged per node, staleness at read time.

#include "core/telemetry/telemetry_service.h"

#include "tests/unit/telemetry_test_support.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace powerctl::telemetry {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using telemetry_test::ManualClock;
using ::testing::HasSubstr;

// Counts the fetches running at once. A fetch waits a moment for another to join it, so
// two that could overlap do.
struct FetchProbe {
  void Enter() {
    std::unique_lock lock(mu);
    most = std::max(most, ++active);
    joined.notify_all();
    joined.wait_for(lock, milliseconds(200), [&] { return active > 1; });
  }
  void Exit() {
    std::lock_guard lock(mu);
    --active;
  }
  std::mutex mu;
  std::condition_variable joined;
  int active = 0;
  int most = 0;
};

class FakeCpu : public CpuSource {
 public:
  explicit FakeCpu(ManualClock& clock) : clock_(clock) {}
  Result<std::map<std::string, Reading>> Fetch(const std::vector<NodeInfo>& nodes) override {
    if (probe != nullptr) probe->Enter();
    ++calls;
    if (probe != nullptr) probe->Exit();
    if (fail) return MakeError(ErrorCode::kNetwork, "metrics-server is down");
    std::map<std::string, Reading> out;
    for (const NodeInfo& n : nodes) out[n.name] = CpuReading(2.0, clock_.Now(), "fake");
    out.insert(extra.begin(), extra.end());
    return out;
  }
  std::string Describe() const override { return "fake CPU"; }
  std::atomic<int> calls{0};
  std::atomic<bool> fail{false};
  FetchProbe* probe = nullptr;
  std::map<std::string, Reading> extra;  // readings of nodes the list did not name

 private:
  ManualClock& clock_;
};

class FakeTemps : public TemperatureSource {
 public:
  explicit FakeTemps(ManualClock& clock) : clock_(clock) {}
  Result<std::map<std::string, Temperatures>> Fetch(const std::vector<NodeInfo>& nodes) override {
    if (probe != nullptr) probe->Enter();
    ++calls;
    if (probe != nullptr) probe->Exit();
    {
      std::unique_lock lock(gate_mu);
      gate.wait_for(lock, seconds(10), [&] { return !held; });  // a slow source, until let go
    }
    if (fail) return MakeError(ErrorCode::kNetwork, "no BMC answers");
    std::map<std::string, Temperatures> out;
    for (const NodeInfo& n : nodes) {
      out[n.name] = Temperatures{TemperatureReading(20, clock_.Now(), "t"),
                                 TemperatureReading(40, clock_.Now(), "t"),
                                 MissingReading("no CPU2 sensor", "t")};
    }
    return out;
  }
  std::string Describe() const override { return "fake temperatures"; }
  void Hold() {
    std::lock_guard lock(gate_mu);
    held = true;
  }
  void LetGo() {
    {
      std::lock_guard lock(gate_mu);
      held = false;
    }
    gate.notify_all();
  }
  std::atomic<int> calls{0};
  std::atomic<bool> fail{false};
  FetchProbe* probe = nullptr;
  std::mutex gate_mu;
  std::condition_variable gate;
  bool held = false;

 private:
  ManualClock& clock_;
};

class TelemetryServiceTest : public ::testing::Test {
 protected:
  TelemetryServiceTest() : cpu_(clock_), temps_(clock_) { Build(seconds(5)); }

  void Build(milliseconds fetch_queue_limit) {
    TelemetryServiceOptions options;
    options.max_age = seconds(120);
    options.refresh_interval = seconds(15);
    options.fetch_queue_limit = fetch_queue_limit;
    options.time.clock = clock_.AsClock();
    service_ = std::make_unique<TelemetryService>(
        cpu_, temps_,
        [this]() -> Result<std::vector<NodeInfo>> {
          std::lock_guard lock(mu_);
          if (!list_error_.empty()) return MakeError(ErrorCode::kNetwork, list_error_);
          return nodes_;
        },
        options);
  }

  // Polls until `done` holds (background refreshes finish on their own thread).
  template <typename F>
  bool Eventually(F done) {
    for (int i = 0; i < 500; ++i) {
      if (done()) return true;
      std::this_thread::sleep_for(milliseconds(10));
    }
    return false;
  }

  ManualClock clock_;
  FakeCpu cpu_;
  FakeTemps temps_;
  std::mutex mu_;
  std::vector<NodeInfo> nodes_ = {{"a", {"10.0.0.1"}, {}, 16.0},
                                  {"b", {"10.0.0.2"}, {}, std::nullopt}};
  std::string list_error_;
  std::unique_ptr<TelemetryService> service_;
};

TEST_F(TelemetryServiceTest, WaitIfEmptyFetchesOnceAndMerges) {
  auto readings = service_->Readings(Wait::kIfEmpty);
  ASSERT_TRUE(readings.ok()) << readings.error().message;
  ASSERT_EQ(readings->size(), 2u);
  const NodeReading& a = readings->at("a");
  EXPECT_EQ(a.node, "a");
  EXPECT_EQ(a.cpu_cores_used.value, 2.0);
  EXPECT_EQ(a.cpu_capacity, 16.0);
  EXPECT_EQ(a.ambient.value, 20.0);
  EXPECT_EQ(a.cpu1.value, 40.0);
  EXPECT_EQ(a.cpu2.missing_reason, "no CPU2 sensor");
  EXPECT_FALSE(readings->at("b").cpu_capacity);
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(service_->Readings(Wait::kNever).ok());
  EXPECT_EQ(cpu_.calls, 1);
  EXPECT_EQ(temps_.calls, 1);
}

TEST_F(TelemetryServiceTest, NeverWaitBeforeTheFirstFetch) {
  auto readings = service_->Readings(Wait::kNever, {"a", "zz"});
  ASSERT_TRUE(readings.ok());
  EXPECT_THAT(readings->at("a").cpu_cores_used.missing_reason, HasSubstr("not fetched yet"));
  EXPECT_THAT(readings->at("zz").ambient.missing_reason, HasSubstr("not fetched yet"));
  // The fetches it started complete; a waiting call joins them.
  ASSERT_TRUE(service_->Readings(Wait::kIfEmpty).ok());
  auto later = service_->Readings(Wait::kNever, {"a", "zz"});
  ASSERT_TRUE(later.ok());
  EXPECT_TRUE(later->at("a").cpu_cores_used.ok());
  EXPECT_EQ(later->at("zz").cpu_cores_used.missing_reason,
            "the node was not in the last node list");
  EXPECT_EQ(cpu_.calls, 1);
}

TEST_F(TelemetryServiceTest, StaleReadingsSayTheRefreshFailed) {
  ASSERT_TRUE(service_->Readings(Wait::kIfEmpty).ok());
  cpu_.fail = true;
  clock_.Advance(seconds(121));
  auto stale = service_->Readings(Wait::kNever);  // serves the old snapshot, starts a refresh
  ASSERT_TRUE(stale.ok());
  EXPECT_THAT(stale->at("a").cpu_cores_used.missing_reason, HasSubstr("stale: measured 2m1s ago"));
  EXPECT_TRUE(Eventually([&] {
    auto r = service_->Readings(Wait::kNever);
    return r.ok() &&
           r->at("a").cpu_cores_used.missing_reason.str().find(
               "the last refresh failed: fake CPU: metrics-server is down") != std::string::npos;
  }));
  // Temperatures refreshed fine in the meantime.
  EXPECT_TRUE(Eventually([&] { return service_->Readings(Wait::kNever)->at("a").ambient.ok(); }));
}

TEST_F(TelemetryServiceTest, FailingSourceGivesEveryNodeTheReason) {
  temps_.fail = true;
  auto readings = service_->Readings(Wait::kIfEmpty);
  ASSERT_TRUE(readings.ok()) << readings.error().message;
  EXPECT_TRUE(readings->at("a").cpu_cores_used.ok());
  EXPECT_EQ(readings->at("b").cpu1.missing_reason,
            "temperatures unavailable: fake temperatures: no BMC answers");
}

TEST_F(TelemetryServiceTest, NodeListFailure) {
  list_error_ = "connection refused";
  auto readings = service_->Readings(Wait::kIfEmpty);
  ASSERT_FALSE(readings.ok());
  EXPECT_EQ(readings.error().message, "listing nodes: connection refused");
  auto some = service_->Readings(Wait::kIfEmpty, {"a"});
  ASSERT_TRUE(some.ok());
  EXPECT_THAT(some->at("a").cpu_cores_used.missing_reason,
              HasSubstr("listing nodes: connection refused"));
}

TEST_F(TelemetryServiceTest, WarmStartsBothFetches) {
  service_->Warm();
  EXPECT_TRUE(Eventually([&] { return cpu_.calls == 1 && temps_.calls == 1; }));
  ASSERT_TRUE(service_->Readings(Wait::kIfEmpty).ok());
  EXPECT_EQ(cpu_.calls, 1);
}

TEST_F(TelemetryServiceTest, ViewReadsWhatReadingsReadAndNamesItsSnapshots) {
  ASSERT_TRUE(service_->Readings(Wait::kIfEmpty).ok());
  TelemetryView first = service_->View();
  TelemetryView second = service_->View();
  EXPECT_EQ(first.Generation(), second.Generation());  // same snapshots, same generation
  NodeReading a = first.For("a");
  EXPECT_EQ(a.cpu_cores_used.value, 2.0);
  EXPECT_EQ(a.cpu_capacity, 16.0);
  EXPECT_EQ(a.ambient.value, 20.0);
  EXPECT_THAT(first.For("zz").cpu_cores_used.missing_reason,
              HasSubstr("not in the last node list"));
  // Every usable value was measured now: stale after max_age.
  EXPECT_EQ(first.StaleAt(a), clock_.Now() + seconds(120));

  // A refresh makes new snapshots: a new generation.
  clock_.Advance(seconds(16));
  (void)service_->View();  // due: starts the refresh
  ASSERT_TRUE(Eventually([&] { return cpu_.calls >= 2 && temps_.calls >= 2; }));
  ASSERT_TRUE(Eventually([&] { return service_->View().Generation() != first.Generation(); }));
}

TEST_F(TelemetryServiceTest, ViewJudgesStalenessAtItsOwnTime) {
  ASSERT_TRUE(service_->Readings(Wait::kIfEmpty).ok());
  cpu_.fail = true;
  temps_.fail = true;
  clock_.Advance(seconds(121));
  TelemetryView view = service_->View();
  NodeReading a = view.For("a");
  EXPECT_FALSE(a.cpu_cores_used.ok());
  EXPECT_THAT(a.cpu_cores_used.missing_reason, HasSubstr("stale"));
  EXPECT_EQ(view.StaleAt(a), SteadyTime::max());  // nothing usable left to go stale
}

// Both sources fall due together; their fetches (each holding the node list and a large
// response at 5,000 nodes) run one after the other.
TEST_F(TelemetryServiceTest, FetchesRunOneAtATime) {
  FetchProbe probe;
  cpu_.probe = &probe;
  temps_.probe = &probe;
  service_->Warm();
  ASSERT_TRUE(Eventually([&] { return cpu_.calls >= 1 && temps_.calls >= 1; }));
  ASSERT_TRUE(service_->Readings(Wait::kIfEmpty).ok());
  std::lock_guard lock(probe.mu);
  EXPECT_EQ(probe.most, 1);
}

// A slow source (ipmi_exporter scraping every node) holds up the other's fetch only for
// fetch_queue_limit; then the other runs beside it.
TEST_F(TelemetryServiceTest, ASlowSourceDelaysTheOtherOnlyForTheQueueLimit) {
  Build(milliseconds(50));
  temps_.Hold();
  service_->Warm();
  ASSERT_TRUE(Eventually([&] { return temps_.calls >= 1 && cpu_.calls >= 1; }));
  // The temperature fetch holds on (inside Fetch, so it has the turn); the CPU source falls
  // due again and is fetched beside it instead of waiting for it.
  clock_.Advance(seconds(16));
  (void)service_->View();
  EXPECT_TRUE(Eventually([&] { return cpu_.calls >= 2; }));
  EXPECT_EQ(temps_.calls, 1);
  temps_.LetGo();
  ASSERT_TRUE(Eventually([&] { return service_->View().For("a").ambient.ok(); }));
}

// A source may answer for a node the list did not name: the view reads it, but Readings()
// lists only the nodes of the list.
TEST_F(TelemetryServiceTest, ReadingsOfUnlistedNodesAreReadableButNotListed) {
  cpu_.extra["ghost"] = CpuReading(3.0, clock_.Now(), "fake");
  auto readings = service_->Readings(Wait::kIfEmpty);
  ASSERT_TRUE(readings.ok()) << readings.error().message;
  EXPECT_EQ(readings->size(), 2u);
  EXPECT_EQ(readings->count("ghost"), 0u);
  NodeReading ghost = service_->View().For("ghost");
  EXPECT_EQ(ghost.cpu_cores_used.value, 3.0);
  EXPECT_FALSE(ghost.cpu_capacity.has_value());
  EXPECT_THAT(ghost.ambient.missing_reason, HasSubstr("not in the last node list"));
  NodeReading missing = service_->View().For("nowhere");
  EXPECT_THAT(missing.cpu_cores_used.missing_reason, HasSubstr("not in the last node list"));
}

}  // namespace
}  // namespace powerctl::telemetry
