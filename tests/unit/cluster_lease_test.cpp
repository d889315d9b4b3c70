// Leader election on a Lease: the pure decision, and rounds against the in-memory API server
// (create, renew, wait, take over an expired Lease, lose a race with 409, release).
#include "core/cluster/lease.h"
#include "tests/unit/fake_api_server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

namespace powerctl::cluster {
namespace {

using json = nlohmann::json;
using std::chrono::seconds;
using SteadyTime = std::chrono::steady_clock::time_point;

constexpr const char* kPath =
    "/apis/coordination.k8s.io/v1/namespaces/ops/leases/powerctl-extender";

LeaseObservation Observed(const std::string& holder, SteadyTime since, int duration = 15) {
  LeaseObservation o;
  o.record.holder = holder;
  o.record.duration_seconds = duration;
  o.since = since;
  return o;
}

TEST(DecideLease, FreeOwnHeldAndExpired) {
  SteadyTime t0{std::chrono::hours(1)};
  EXPECT_EQ(DecideLease(Observed("", t0), "me", t0, seconds(15)), LeaseAction::kAcquire);
  EXPECT_EQ(DecideLease(Observed("me", t0), "me", t0 + seconds(60), seconds(15)),
            LeaseAction::kRenew);
  EXPECT_EQ(DecideLease(Observed("other", t0), "me", t0 + seconds(14), seconds(15)),
            LeaseAction::kWait);
  EXPECT_EQ(DecideLease(Observed("other", t0), "me", t0 + seconds(15), seconds(15)),
            LeaseAction::kAcquire);
  // The Lease's own duration counts, not ours; without one, ours does.
  EXPECT_EQ(DecideLease(Observed("other", t0, 30), "me", t0 + seconds(20), seconds(15)),
            LeaseAction::kWait);
  EXPECT_EQ(DecideLease(Observed("other", t0, 0), "me", t0 + seconds(15), seconds(15)),
            LeaseAction::kAcquire);
}

TEST(LeaseJson, RoundTripsAndFormatsMicroTime) {
  LeaseRecord r{"a_1", 15, "2024-05-01T12:00:00.000001Z", "2024-05-01T12:00:05.000000Z", 3, "42"};
  json object = LeaseToJson("ops", "l", r);
  EXPECT_EQ(object["metadata"]["resourceVersion"], "42");
  LeaseRecord back = LeaseRecordFromJson(object);
  EXPECT_EQ(back.holder, "a_1");
  EXPECT_EQ(back.duration_seconds, 15);
  EXPECT_EQ(back.transitions, 3);
  EXPECT_EQ(back.renew_time, r.renew_time);
  EXPECT_FALSE(LeaseToJson("ops", "l", LeaseRecord{})["spec"].contains("holderIdentity"));
  auto t = std::chrono::system_clock::time_point(std::chrono::microseconds(1714564800123456));
  EXPECT_EQ(FormatMicroTime(t), "2024-05-01T12:00:00.123456Z");
}

class LeaseElectorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server.Put({{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "ops"}}}});
  }

  LeaseElectorOptions Options(const std::string& identity) {
    LeaseElectorOptions o;
    o.namespace_ = "ops";
    o.identity = identity;
    o.clock = clock.clock();
    o.wall_now = [this] { return wall; };
    return o;
  }

  json Spec() const { return server.Object(kPath)["spec"]; }

  kube::fake::FakeApiServer server;
  kube::fake::FakeClock clock;
  std::chrono::system_clock::time_point wall{std::chrono::seconds(1714564800)};
  std::unique_ptr<kube::Client> client_a = server.MakeClient();
  std::unique_ptr<kube::Client> client_b = server.MakeClient();
};

TEST_F(LeaseElectorTest, CreatesAMissingLeaseAndRenewsIt) {
  LeaseElector a(*client_a, Options("a"));
  EXPECT_TRUE(a.Step());
  EXPECT_EQ(Spec()["holderIdentity"], "a");
  EXPECT_EQ(Spec()["leaseDurationSeconds"], 15);
  EXPECT_EQ(Spec()["leaseTransitions"], 0);
  EXPECT_EQ(Spec()["renewTime"], "2024-05-01T12:00:00.000000Z");
  std::string version = server.Object(kPath)["metadata"]["resourceVersion"];

  clock.now += seconds(5);
  wall += seconds(5);
  server.ClearRequests();
  EXPECT_TRUE(a.Step());
  auto puts = server.RequestsTo("PUT", kPath);
  ASSERT_EQ(puts.size(), 1u);
  // The update is conditional on the version read.
  EXPECT_EQ(json::parse(puts[0].body)["metadata"]["resourceVersion"], version);
  EXPECT_EQ(Spec()["renewTime"], "2024-05-01T12:00:05.000000Z");
  EXPECT_EQ(Spec()["acquireTime"], "2024-05-01T12:00:00.000000Z");
}

TEST_F(LeaseElectorTest, WaitsWhileTheHolderRenewsAndTakesOverWhenItStops) {
  LeaseElector a(*client_a, Options("a"));
  LeaseElector b(*client_b, Options("b"));
  ASSERT_TRUE(a.Step());
  server.ClearRequests();
  EXPECT_FALSE(b.Step());
  EXPECT_TRUE(server.MutatingRequests().empty());  // b only looked

  // a renews every 5 s: b keeps seeing a new record and never takes over.
  for (int i = 0; i < 6; ++i) {
    clock.now += seconds(5);
    wall += seconds(5);
    EXPECT_TRUE(a.Step());
    EXPECT_FALSE(b.Step());
  }
  // a stops renewing (crashed): 15 s after b last saw the record change, b takes over.
  clock.now += seconds(14);
  EXPECT_FALSE(b.Step());
  clock.now += seconds(1);
  EXPECT_TRUE(b.Step());
  EXPECT_EQ(Spec()["holderIdentity"], "b");
  EXPECT_EQ(Spec()["leaseTransitions"], 1);
  // a comes back: its renewal sees b's record and it stops leading.
  EXPECT_FALSE(a.Step());
  EXPECT_FALSE(a.leader());
  EXPECT_EQ(Spec()["holderIdentity"], "b");
}

TEST_F(LeaseElectorTest, LosingTheRaceFor409IsNotLeading) {
  LeaseElector a(*client_a, Options("a"));
  ASSERT_TRUE(a.Step());
  // Someone else's write lands between a's GET and PUT.
  server.FailRequests(kPath, 409, "PUT");
  EXPECT_FALSE(a.Step());
  EXPECT_FALSE(a.leader());
  EXPECT_THAT(a.last_error(), ::testing::HasSubstr("409"));
  // And a Lease created by another replica between GET (404) and POST.
  server.ClearFailures();
  server.Remove(kPath);
  LeaseElector b(*client_b, Options("b"));
  server.FailRequests("/apis/coordination.k8s.io/v1/namespaces/ops/leases", 409, "POST");
  EXPECT_FALSE(b.Step());
}

TEST_F(LeaseElectorTest, ALeaderKeepsLeadingThroughErrorsUntilTheRenewDeadline) {
  LeaseElector a(*client_a, Options("a"));
  ASSERT_TRUE(a.Step());
  server.FailRequests(kPath, 500);
  clock.now += seconds(5);
  EXPECT_TRUE(a.Step());  // 5 s since the last renewal: within the 10 s deadline
  clock.now += seconds(5);
  EXPECT_FALSE(a.Step());  // 10 s: another replica may take over at 15 s, so stop now
  server.ClearFailures();
  EXPECT_TRUE(a.Step());  // still the holder: renewing makes it lead again
}

TEST_F(LeaseElectorTest, ReleaseLetsASuccessorTakeOverAtOnce) {
  LeaseElector a(*client_a, Options("a"));
  LeaseElector b(*client_b, Options("b"));
  ASSERT_TRUE(a.Step());
  EXPECT_FALSE(b.Step());
  a.Release();
  EXPECT_FALSE(a.leader());
  EXPECT_FALSE(Spec().contains("holderIdentity"));
  EXPECT_EQ(Spec()["leaseDurationSeconds"], 1);
  EXPECT_TRUE(b.Step());  // no waiting for expiry
  EXPECT_EQ(Spec()["holderIdentity"], "b");
  // Releasing a Lease held by another replica changes nothing.
  server.ClearRequests();
  a.Release();
  EXPECT_TRUE(server.MutatingRequests().empty());
}

TEST_F(LeaseElectorTest, LeaderElectionRunsRoundsAndReleasesOnStop) {
  // The fake server is single-threaded: only the election's thread uses it until Stop().
  LeaseElectorOptions options = Options("a");
  options.clock = Clock{};
  options.timing.renew_interval = std::chrono::milliseconds(10);
  std::vector<bool> changes;
  std::mutex mu;
  LeaderElection election(server.MakeClient(), options, [&](bool leader) {
    std::lock_guard lock(mu);
    changes.push_back(leader);
  });
  election.Start();
  for (int i = 0; i < 500 && !election.IsLeader(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(election.IsLeader());
  election.Stop();
  EXPECT_FALSE(election.IsLeader());
  EXPECT_FALSE(Spec().contains("holderIdentity"));
  std::lock_guard lock(mu);
  EXPECT_EQ(changes, (std::vector<bool>{true, false}));
}

TEST(DefaultLeaseIdentity, HostnameAndPid) {
  EXPECT_THAT(DefaultLeaseIdentity(), ::testing::MatchesRegex(".+_[0-9]+"));
}

}  // namespace
}  // namespace powerctl::cluster
