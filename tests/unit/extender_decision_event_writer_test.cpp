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

// A prioritize decision for team/web-1 (or `pod`) over `nodes` nodes (what the Event says is
// tested in extender_decision_batch_test.cpp).
Decision Prioritized(std::size_t nodes, const std::string& pod = "web-1",
                     const std::string& ns = "team") {
  Decision d;
  d.verb = scoring::kVerbPrioritize;
  d.pod_namespace = ns;
  d.pod_name = pod;
  d.pod_uid = "uid-" + pod;
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
      std::size_t max_queued = 1000, std::unique_ptr<kube::HttpTransport> transport = nullptr,
      std::chrono::milliseconds batch_interval = std::chrono::milliseconds(1000)) {
    DecisionEventWriterOptions options;
    options.instance = "replica-a";
    options.max_queued = max_queued;
    options.batch_interval = batch_interval;
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
  double Writes() {
    return registry.Counter("powerctl_extender_decision_event_writes_total", "", {}).Value({});
  }
  std::vector<json> Events(const std::string& ns = "team") {
    std::vector<json> out;
    for (const auto& r : server.requests()) {
      if (r.method == "POST" && r.path == "/api/v1/namespaces/" + ns + "/events") {
        out.push_back(json::parse(r.body));
      }
    }
    return out;
  }

  kube::fake::FakeApiServer server;
  server::MetricsRegistry registry;
};

// The decisions of the pods in an Event's batch, by pod name.
std::vector<std::string> PodsIn(const json& event) {
  std::vector<std::string> out;
  for (const json& d :
       json::parse(event["metadata"]["annotations"][kDecisionsAnnotation].get<std::string>())) {
    out.push_back(d["pod"]["name"]);
  }
  return out;
}

TEST_F(DecisionEventWriterTest, WritesQueuedDecisionsInTheBackground) {
  auto writer = Writer();
  writer->Start();
  writer->Submit(std::make_shared<const Decision>(Prioritized(3, "web-1")));
  writer->Submit(std::make_shared<const Decision>(Prioritized(4, "web-2")));
  writer->Stop();  // drains what is queued and the open batch
  std::vector<json> events = Events();
  ASSERT_GE(events.size(), 1u);
  std::vector<std::string> pods;
  for (const json& e : events) {
    EXPECT_EQ(e["reason"], kReasonPowerDecisions);
    for (const std::string& pod : PodsIn(e)) pods.push_back(pod);
  }
  EXPECT_EQ(pods, (std::vector<std::string>{"web-1", "web-2"}));
  EXPECT_EQ(Count("written"), 2);
  EXPECT_EQ(Writes(), static_cast<double>(events.size()));
  EXPECT_EQ(Count("failed"), 0);
}

TEST_F(DecisionEventWriterTest, ABurstOfDecisionsIsOneEventPerNamespace) {
  server.Put({{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "shop"}}}});
  auto writer = Writer();  // not started: Flush writes what is queued, in batches
  for (int i = 0; i < 30; ++i) {
    writer->Submit(std::make_shared<const Decision>(Prioritized(2, "web-" + std::to_string(i))));
  }
  writer->Submit(std::make_shared<const Decision>(Prioritized(2, "cart-0", "shop")));
  writer->Flush();
  ASSERT_EQ(Events("team").size(), 1u);
  EXPECT_EQ(PodsIn(Events("team")[0]).size(), 30u);
  EXPECT_EQ(Events("team")[0]["metadata"]["labels"].size(), 30u);
  ASSERT_EQ(Events("shop").size(), 1u);
  EXPECT_EQ(PodsIn(Events("shop")[0]), std::vector<std::string>{"cart-0"});
  EXPECT_EQ(Count("written"), 31);
  EXPECT_EQ(Writes(), 2);
}

TEST_F(DecisionEventWriterTest, AFullBatchIsWrittenAndANewOneBegun) {
  auto writer = Writer(1000);
  const std::size_t decisions = kMaxBatchDecisions + 5;
  for (std::size_t i = 0; i < decisions; ++i) {
    writer->Submit(std::make_shared<const Decision>(Prioritized(2, "web-" + std::to_string(i))));
  }
  writer->Flush();
  std::vector<json> events = Events();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(PodsIn(events[0]).size(), kMaxBatchDecisions);
  EXPECT_EQ(PodsIn(events[1]).size(), 5u);
  EXPECT_EQ(events[1]["involvedObject"]["name"], "web-" + std::to_string(kMaxBatchDecisions));
  // The second batch names its own pods.
  EXPECT_NE(events[1]["message"].get<std::string>().find("5 pods"), std::string::npos);
}

TEST_F(DecisionEventWriterTest, ALoneDecisionIsWrittenAfterTheBatchInterval) {
  auto writer = Writer(1000, nullptr, std::chrono::milliseconds(50));
  writer->Start();
  const auto begin = std::chrono::steady_clock::now();
  writer->Submit(std::make_shared<const Decision>(Prioritized(2)));
  while (Writes() == 0 && std::chrono::steady_clock::now() - begin < std::chrono::seconds(5)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const auto took = std::chrono::steady_clock::now() - begin;
  EXPECT_EQ(Writes(), 1);  // without Stop: the interval alone wrote it
  EXPECT_GE(took, std::chrono::milliseconds(50));
  EXPECT_LT(took, std::chrono::seconds(5));
  ASSERT_EQ(Events().size(), 1u);
  // A batch of one: an Event on that pod, with its decision's message.
  EXPECT_EQ(Events()[0]["involvedObject"]["name"], "web-1");
  EXPECT_EQ(Events()[0]["message"], DecisionEventMessage(Prioritized(2)));
  writer->Stop();
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
  writer->Submit(std::make_shared<const Decision>(Prioritized(2, "web-2")));
  writer->Flush();
  EXPECT_EQ(Count("failed"), 2);  // both decisions of the one Event
  EXPECT_EQ(Writes(), 0);
  EXPECT_EQ(Count("written"), 0);
  EXPECT_EQ(Events().size(), 1u);  // a 403 is not retried

  // Nor is a 500 (the Event may have been created), and later writes go on.
  server.ClearFailures();
  server.ClearRequests();
  server.FailRequests("/api/v1/namespaces/team/events", 500, "POST");
  writer->Submit(std::make_shared<const Decision>(Prioritized(2)));
  writer->Flush();
  EXPECT_EQ(Count("failed"), 3);
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
  ASSERT_EQ(Events().size(), 1u);
  EXPECT_EQ(PodsIn(Events()[0]).size(), 2u);
  // Decisions that get no record are not written at all, nor take a place in the queue: a
  // filter that passed every node, a preempt.
  Decision preempt = Prioritized(1);
  preempt.verb = scoring::kVerbPreempt;
  Decision passed = Prioritized(1);
  passed.verb = scoring::kVerbFilter;
  passed.nodes[0].passed = true;
  for (int i = 0; i < 3; ++i) {
    writer->Submit(std::make_shared<const Decision>(preempt));
    writer->Submit(std::make_shared<const Decision>(passed));
  }
  writer->Submit(std::make_shared<const Decision>(Prioritized(1)));
  EXPECT_EQ(Count("dropped"), 3);  // the queue had room for the last one
  writer->Flush();
  ASSERT_EQ(Events().size(), 2u);
  EXPECT_EQ(PodsIn(Events()[1]).size(), 1u);
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
  auto writer =
      Writer(1000, std::make_unique<HangingTransport>(&started), std::chrono::milliseconds(10));
  writer->Start();
  for (int i = 0; i < 3; ++i) {
    writer->Submit(std::make_shared<const Decision>(Prioritized(1, "web-" + std::to_string(i))));
  }
  while (started.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const auto begin = std::chrono::steady_clock::now();
  writer->Stop(std::chrono::milliseconds(50));
  const auto took = std::chrono::steady_clock::now() - begin;
  EXPECT_LT(took, std::chrono::seconds(2));
  EXPECT_GE(took, std::chrono::milliseconds(50));  // the drain time was given
  EXPECT_LE(started.load(), 3);                    // each Event in flight is cancelled
  EXPECT_EQ(Count("dropped"), 3);                  // with its decisions, and any queued behind
  EXPECT_EQ(Count("failed"), 0);
}

}  // namespace
}  // namespace powerctl::extender
