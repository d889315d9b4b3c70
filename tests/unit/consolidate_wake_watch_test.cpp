// consolidate wake --watch: what /metrics says after a pass, and the loop that a stop request
// ends while it waits for the next pass.
#include "core/common/http_client.h"
#include "core/consolidate/wake_metrics.h"
#include "core/consolidate/wake_watch.h"
#include "tests/unit/fake_api_server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <future>
#include <thread>

namespace powerctl::consolidate {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

NodeWakeOutcome Outcome(const std::string& node, std::vector<std::string> pods, bool hook_ran,
                        bool hook_ok, bool brought_back) {
  NodeWakeOutcome n;
  n.wake.node = node;
  n.wake.pods = std::move(pods);
  n.hook.ran = hook_ran;
  n.hook.ok = hook_ok;
  if (hook_ran && !hook_ok) n.hook.detail = "exit status 4";
  n.brought_back = brought_back;
  if (hook_ok && !brought_back) n.error = "conflict";
  return n;
}

TEST(ConsolidateWakeMetrics, APassPublishesPendingPodsDrainedNodesCandidatesAndWakes) {
  server::MetricsRegistry registry;
  WakeMetrics metrics(registry);
  // Before any pass the counters are there, at zero.
  EXPECT_THAT(registry.Render(),
              HasSubstr("powerctl_consolidate_wakes_total{result=\"hook_failed\"} 0"));

  WakeReport report;
  report.nodes = {Outcome("cheap", {"shop/a", "shop/b"}, true, true, true),
                  Outcome("dear", {"shop/c"}, true, false, false),
                  Outcome("odd", {"shop/d"}, true, true, false)};
  report.no_room = {"shop/huge"};
  report.drained_nodes = 5;
  metrics.RecordPass(report, std::chrono::system_clock::time_point(std::chrono::seconds(1000)));
  std::string text = registry.Render();
  EXPECT_THAT(text, HasSubstr("\npowerctl_consolidate_pending_pods 5\n"));
  EXPECT_THAT(text, HasSubstr("\npowerctl_consolidate_drained_nodes 5\n"));
  EXPECT_THAT(text, HasSubstr("powerctl_consolidate_wake_candidate_pods{node=\"cheap\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("powerctl_consolidate_wake_candidate_pods{node=\"dear\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("powerctl_consolidate_wakes_total{result=\"woken\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("powerctl_consolidate_wakes_total{result=\"hook_failed\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("powerctl_consolidate_wakes_total{result=\"not_brought_back\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("\npowerctl_consolidate_last_pass_timestamp_seconds 1000\n"));

  // The next pass replaces the candidates; without a hook (or in a dry run) nothing counts as
  // a wake.
  report.nodes = {Outcome("dear", {"shop/c"}, false, false, false)};
  report.no_room.clear();
  report.drained_nodes = 4;
  metrics.RecordPass(report, std::chrono::system_clock::time_point(std::chrono::seconds(1030)));
  text = registry.Render();
  EXPECT_THAT(text, Not(HasSubstr("node=\"cheap\"")));
  EXPECT_THAT(text, HasSubstr("powerctl_consolidate_wake_candidate_pods{node=\"dear\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("\npowerctl_consolidate_pending_pods 1\n"));
  EXPECT_THAT(text, HasSubstr("\npowerctl_consolidate_drained_nodes 4\n"));
  EXPECT_THAT(text, HasSubstr("powerctl_consolidate_wakes_total{result=\"hook_failed\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("\npowerctl_consolidate_last_pass_timestamp_seconds 1030\n"));

  metrics.RecordFailedPass();
  EXPECT_THAT(registry.Render(), HasSubstr("\npowerctl_consolidate_pass_errors_total 1\n"));
}

TEST(ConsolidateWakeWatch, AStopRequestEndsTheWaitForTheNextPassAtOnce) {
  kube::fake::FakeApiServer api;
  auto client = api.MakeClient();
  std::stop_source stop;
  std::promise<void> first_pass;
  int passes = 0;
  WakeWatchOptions options;
  options.interval = std::chrono::hours(1);
  options.handle_signals = false;
  options.stop = stop.get_token();
  options.on_pass = [&](const Result<WakeReport>& report) {
    EXPECT_TRUE(report.ok()) << report.error().message;
    if (++passes == 1) first_pass.set_value();
  };
  std::thread stopper([&] {
    first_pass.get_future().wait();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the loop is waiting by now
    stop.request_stop();
  });
  const auto started = std::chrono::steady_clock::now();
  auto stopped = RunWakeWatch(*client, options);
  stopper.join();
  ASSERT_TRUE(stopped.ok()) << stopped.error().message;
  EXPECT_EQ(*stopped, "stop requested");
  EXPECT_EQ(passes, 1);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(10));
}

TEST(ConsolidateWakeWatch, TheOpsPortServesTheMetricsOfThePassAndReadiness) {
  kube::fake::FakeApiServer api;
  auto client = api.MakeClient();
  std::stop_source stop;
  WakeWatchOptions options;
  options.interval = std::chrono::hours(1);
  options.handle_signals = false;
  options.stop = stop.get_token();
  options.ops = server::HttpServerOptions{};
  options.ops->threads = 1;
  std::string url;
  options.on_listening = [&url](const std::string& u) { url = u; };
  std::unique_ptr<HttpClient> http = MakeCurlHttpClient();
  Result<HttpClientResponse> metrics = MakeError(ErrorCode::kInternal, "not read");
  Result<HttpClientResponse> ready = MakeError(ErrorCode::kInternal, "not read");
  options.on_pass = [&](const Result<WakeReport>&) {
    metrics = http->Do({.url = url + "/metrics"});
    ready = http->Do({.url = url + "/readyz"});
    stop.request_stop();
  };
  auto stopped = RunWakeWatch(*client, options);
  ASSERT_TRUE(stopped.ok()) << stopped.error().message;
  ASSERT_TRUE(metrics.ok()) << metrics.error().message;
  EXPECT_EQ(metrics->status, 200);
  EXPECT_THAT(metrics->body, HasSubstr("\npowerctl_consolidate_pending_pods 0\n"));
  EXPECT_THAT(metrics->body, HasSubstr("\npowerctl_consolidate_drained_nodes 0\n"));
  EXPECT_THAT(metrics->body, HasSubstr("powerctl_consolidate_last_pass_timestamp_seconds "));
  ASSERT_TRUE(ready.ok()) << ready.error().message;
  EXPECT_EQ(ready->status, 200) << ready->body;
}

TEST(ConsolidateWakeWatch, ABadHookOrIntervalIsRefusedBeforeAnyPass) {
  kube::fake::FakeApiServer api;
  auto client = api.MakeClient();
  WakeWatchOptions options;
  options.handle_signals = false;
  options.interval = std::chrono::milliseconds(10);
  EXPECT_EQ(RunWakeWatch(*client, options).error().code, ErrorCode::kInvalidInput);
  options.interval = std::chrono::seconds(10);
  options.request.on_wake.command.assign(kMaxHookCommandBytes + 1, 'x');
  EXPECT_EQ(RunWakeWatch(*client, options).error().code, ErrorCode::kInvalidInput);
  EXPECT_TRUE(api.requests().empty());
}

}  // namespace
}  // namespace powerctl::consolidate
