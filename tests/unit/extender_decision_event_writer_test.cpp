#include "core/extender/decision_event_writer.h"
#include "tests/unit/fake_api_server.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

namespace powerctl::extender {
namespace {

using nlohmann::json;
using scoring::Decision;

// A prioritize decision for team/web-1 over `nodes` nodes (what the Event says is tested in
// extender_decision_events_test.cpp).
Decision Prioritized(std::size_t nodes) {
  Decision d;
  d.verb = scoring::kVerbPrioritize;
  d.pod_namespace = "team";
  d.pod_name = "web-1";
  for (std::size_t i = 0; i < nodes; ++i) {
    scoring::NodeDecision n;
    n.node = "node-" + std::to_string(i);
    n.score = static_cast<std::int64_t>(i);
    d.nodes.push_back(n);
  }
  return d;
}

class DecisionEventWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server.Put({{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "team"}}}});
  }
  std::unique_ptr<DecisionEventWriter> Writer(
      std::size_t max_queued = 1000, std::unique_ptr<kube::HttpTransport> transport = nullptr) {
    DecisionEventWriterOptions options;
    options.instance = "replica-a";
    options.max_queued = max_queued;
    kube::ClientOptions client;
    client.max_attempts = 2;
    client.sleep = [](std::chrono::milliseconds) {};
    return std::make_unique<DecisionEventWriter>(
        transport ? std::move(transport) : server.Transport(), client, registry, options);
  }
  double Count(const char* result) {
    return registry.Counter("powerctl_extender_decision_events_total", "", {"result"})
        .Value({result});
  }
  std::vector<json> Events() {
    std::vector<json> out;
    for (const auto& r : server.requests()) {
      if (r.method == "POST" && r.path == "/api/v1/namespaces/team/events") {
        out.push_back(json::parse(r.body));
      }
    }
    return out;
  }

  kube::fake::FakeApiServer server;
  server::MetricsRegistry registry;
};

TEST_F(DecisionEventWriterTest, WritesQueuedDecisionsInTheBackground) {
  auto writer = Writer();
  writer->Start();
  writer->Submit(std::make_shared<const Decision>(Prioritized(3)));
  writer->Submit(std::make_shared<const Decision>(Prioritized(4)));
  writer->Stop();  // drains what is queued
  std::vector<json> events = Events();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0]["reason"], kReasonPowerScored);
  EXPECT_NE(events[0]["metadata"]["name"], events[1]["metadata"]["name"]);
  EXPECT_EQ(Count("written"), 2);
  EXPECT_EQ(Count("failed"), 0);
}

TEST_F(DecisionEventWriterTest, TlsWarningsBecomeWarningEventsOnTheExtendersPod) {
  auto writer = Writer();
  TlsWarning warning{"10.0.0.5:41234", std::string(kTlsPeerRejectedCertificate),
                     "tlsv1 alert unknown ca; restart the scheduler", 3};
  DecisionEventSource source{"replica-a", "", std::chrono::system_clock::now()};
  writer->SubmitEvent("team",
                      TlsFailureEvent("team", "powerctl-extender-7d9f-x2", warning, source));
  writer->Submit(std::make_shared<const Decision>(Prioritized(1)));
  writer->Flush();
  std::vector<json> events = Events();
  ASSERT_EQ(events.size(), 2u);
  const json& e = events[0];
  EXPECT_EQ(e["type"], "Warning");
  EXPECT_EQ(e["reason"], kReasonTlsHandshakeFailed);
  EXPECT_EQ(e["involvedObject"]["kind"], "Pod");
  EXPECT_EQ(e["involvedObject"]["name"], "powerctl-extender-7d9f-x2");
  EXPECT_EQ(e["metadata"]["generateName"], "powerctl-extender-7d9f-x2.");
  EXPECT_EQ(e["count"], 3);
  EXPECT_NE(e["message"].get<std::string>().find("3 TLS handshakes failed"), std::string::npos);
  EXPECT_EQ(Count("written"), 2);

  // Bounded: a writer that cannot write keeps only a few.
  auto stuck = Writer();
  for (int i = 0; i < 40; ++i) {
    stuck->SubmitEvent("team", TlsFailureEvent("team", "p", warning, source));
  }
  EXPECT_EQ(Count("dropped"), 40 - 16);
}

TEST_F(DecisionEventWriterTest, FailuresAreCountedNotRetriedForever) {
  server.FailRequests("/api/v1/namespaces/team/events", 403, "POST", "forbidden");
  auto writer = Writer();
  writer->Submit(std::make_shared<const Decision>(Prioritized(2)));
  writer->Flush();
  EXPECT_EQ(Count("failed"), 1);
  EXPECT_EQ(Count("written"), 0);
  EXPECT_EQ(Events().size(), 1u);  // a 403 is not retried

  // Nor is a 500 (the Event may have been created), and later writes go on.
  server.ClearFailures();
  server.ClearRequests();
  server.FailRequests("/api/v1/namespaces/team/events", 500, "POST");
  writer->Submit(std::make_shared<const Decision>(Prioritized(2)));
  writer->Flush();
  EXPECT_EQ(Count("failed"), 2);
  EXPECT_EQ(Events().size(), 1u);
  server.ClearFailures();
  writer->Submit(std::make_shared<const Decision>(Prioritized(2)));
  writer->Flush();
  EXPECT_EQ(Count("written"), 1);
}

TEST_F(DecisionEventWriterTest, AFullQueueDropsNewDecisions) {
  auto writer = Writer(/*max_queued=*/2);  // not started: nothing leaves the queue
  for (int i = 0; i < 5; ++i) writer->Submit(std::make_shared<const Decision>(Prioritized(1)));
  EXPECT_EQ(Count("dropped"), 3);
  writer->Flush();
  EXPECT_EQ(Events().size(), 2u);
  // Decisions that get no Event are not written at all.
  Decision preempt = Prioritized(1);
  preempt.verb = scoring::kVerbPreempt;
  writer->Submit(std::make_shared<const Decision>(preempt));
  writer->Flush();
  EXPECT_EQ(Events().size(), 2u);
}

TEST_F(DecisionEventWriterTest, StopWithoutDrainDropsTheRestAndReturns) {
  auto writer = Writer();
  for (int i = 0; i < 50; ++i) writer->Submit(std::make_shared<const Decision>(Prioritized(1)));
  writer->Start();
  writer->Stop(std::chrono::milliseconds(0));
  EXPECT_EQ(Count("written") + Count("dropped"), 50);
  writer->Submit(std::make_shared<const Decision>(Prioritized(1)));  // after Stop: dropped
  EXPECT_EQ(Count("written") + Count("dropped"), 51);
}

// An API server that never answers: each request waits until it is cancelled.
class HangingTransport : public kube::HttpTransport {
 public:
  explicit HangingTransport(std::atomic<int>* started) : started_(started) {}
  Result<kube::HttpResponse> Send(const kube::HttpRequest& request) override {
    ++*started_;
    while (request.cancel == nullptr || !request.cancel->load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return kube::CancelledError(request.method + " " + request.path);
  }
  Result<long> Stream(const kube::HttpRequest&, const std::function<bool(std::string_view)>&,
                      std::string*) override {
    return MakeError(ErrorCode::kInternal, "no watches");
  }

 private:
  std::atomic<int>* started_;
};

TEST_F(DecisionEventWriterTest, StopReturnsPromptlyWhenTheApiServerHangs) {
  std::atomic<int> started{0};
  auto writer = Writer(1000, std::make_unique<HangingTransport>(&started));
  writer->Start();
  for (int i = 0; i < 3; ++i) writer->Submit(std::make_shared<const Decision>(Prioritized(1)));
  while (started.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const auto begin = std::chrono::steady_clock::now();
  writer->Stop(std::chrono::milliseconds(50));
  const auto took = std::chrono::steady_clock::now() - begin;
  EXPECT_LT(took, std::chrono::seconds(2));
  EXPECT_GE(took, std::chrono::milliseconds(50));  // the drain time was given
  EXPECT_EQ(started.load(), 1);                    // one in flight, cancelled
  EXPECT_EQ(Count("dropped"), 3);                  // it and the two queued behind it
  EXPECT_EQ(Count("failed"), 0);
}

}  // namespace
}  // namespace powerctl::extender
