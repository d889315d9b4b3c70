// RunScheduleServer: both ports, the ops routes, the verbs reaching the ExtenderHandler, the
// refusal of plain HTTP, and stopping through the stop token (signals are off in unit tests).
#include "core/extender/schedule_server.h"
#include "tests/unit/server_http_server_test_support.h"

#include <gtest/gtest.h>

#include <future>
#include <mutex>
#include <thread>

namespace powerctl::extender {
namespace {

using server::testing::Get;
using server::testing::Post;
using server::testing::RawClient;

class RecordingHandler : public ExtenderHandler {
 public:
  server::HttpResponse Filter(const server::HttpRequest& r) override { return Record("filter", r); }
  server::HttpResponse Prioritize(const server::HttpRequest& r) override {
    return Record("prioritize", r);
  }
  server::HttpResponse Preempt(const server::HttpRequest& r) override {
    return Record("preempt", r);
  }
  std::vector<std::string> calls;

 private:
  server::HttpResponse Record(const std::string& verb, const server::HttpRequest& r) {
    std::lock_guard lock(mu_);
    calls.push_back(verb + " " + r.body);
    return server::HttpResponse::Json(200, R"({"verb":")" + verb + R"("})");
  }
  std::mutex mu_;
};

// Runs the server on a thread; the destructor stops it and checks it returned OK.
class RunningServer {
 public:
  RunningServer(ScheduleServerOptions options, ExtenderHandler& handler,
                ScheduleServerHooks hooks = {}) {
    hooks.handle_signals = false;
    hooks.stop = stop_.get_token();
    hooks.on_listening = [this](const ScheduleServerEndpoints& e) { listening_.set_value(e); };
    thread_ = std::thread([this, options, &handler, hooks] {
      status_ = RunScheduleServer(options, handler, hooks);
      if (!status_.ok()) listening_.set_value({});
    });
    endpoints = listening_.get_future().get();
  }
  ~RunningServer() { (void)Stop(); }
  Status Stop() {
    stop_.request_stop();
    if (thread_.joinable()) thread_.join();
    return status_;
  }
  ScheduleServerEndpoints endpoints;

 private:
  std::stop_source stop_;
  std::promise<ScheduleServerEndpoints> listening_;
  std::thread thread_;
  Status status_ = OkStatus();
};

ScheduleServerOptions InsecureOptions() {
  ScheduleServerOptions o;
  o.allow_insecure = true;
  o.url_prefix = "/scheduler/";
  o.drain_timeout = std::chrono::milliseconds(500);
  return o;
}

std::optional<server::testing::RawResponse> Ask(int port, const std::string& request) {
  RawClient c;
  if (!c.Connect(port)) return std::nullopt;
  return c.Exchange(request);
}

TEST(ScheduleServerTest, ServesVerbsOnTheMainPortAndProbesOnTheOpsPort) {
  RecordingHandler handler;
  server::MetricsRegistry metrics;
  ScheduleServerHooks hooks;
  hooks.metrics = &metrics;
  hooks.ready = [] { return server::ReadyState{true, {{"prometheus", "connection refused"}}}; };
  RunningServer server(InsecureOptions(), handler, hooks);
  ASSERT_GT(server.endpoints.main_port, 0);
  ASSERT_GT(server.endpoints.ops_port, 0);
  EXPECT_NE(server.endpoints.main_port, server.endpoints.ops_port);
  int main_port = server.endpoints.main_port;
  int ops_port = server.endpoints.ops_port;

  for (std::string verb : {"filter", "prioritize", "preempt"}) {
    auto r = Ask(main_port, Post("/scheduler/" + verb, R"({"Pod":{}})"));
    ASSERT_TRUE(r) << verb;
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, R"({"verb":")" + verb + R"("})");
  }
  EXPECT_EQ(handler.calls,
            (std::vector<std::string>{R"(filter {"Pod":{}})", R"(prioritize {"Pod":{}})",
                                      R"(preempt {"Pod":{}})"}));
  EXPECT_EQ(Ask(main_port, Get("/scheduler/filter"))->status, 405);
  EXPECT_EQ(Ask(main_port, Post("/filter", "{}"))->status, 404);
  EXPECT_EQ(Ask(main_port, Get("/healthz"))->status, 404);  // probes live on the ops port

  auto health = Ask(ops_port, Get("/healthz"));
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(health->body, "ok\n");
  auto ready = Ask(ops_port, Get("/readyz"));
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->status, 200);
  EXPECT_EQ(ready->body,
            R"({"degraded":[{"name":"prometheus","reason":"connection refused"}],"ready":true})"
            "\n");
  auto scraped = Ask(ops_port, Get("/metrics"));
  ASSERT_TRUE(scraped);
  EXPECT_TRUE(scraped->HasHeader("Content-Type: text/plain; version=0.0.4"));
  EXPECT_NE(scraped->body.find("powerctl_http_requests_total{server=\"scheduler\",method=\"POST\","
                               "path=\"/scheduler/filter\",code=\"200\"} 1\n"),
            std::string::npos)
      << scraped->body;
  EXPECT_TRUE(server.Stop().ok());
}

TEST(ScheduleServerTest, VerbsRefuseOtherContentTypesWithAReason) {
  RecordingHandler handler;
  RunningServer server(InsecureOptions(), handler);
  int port = server.endpoints.main_port;
  auto form = Ask(port,
                  "POST /scheduler/filter HTTP/1.1\r\nHost: x\r\nContent-Type: "
                  "application/x-www-form-urlencoded\r\nContent-Length: 2\r\n\r\n{}");
  ASSERT_TRUE(form);
  EXPECT_EQ(form->status, 415);
  EXPECT_NE(form->body.find("application/x-www-form-urlencoded"), std::string::npos);
  // Parameters and letter case do not matter; a missing header is let through.
  auto charset = Ask(port,
                     "POST /scheduler/prioritize HTTP/1.1\r\nHost: x\r\nContent-Type: "
                     "Application/JSON; charset=utf-8\r\nContent-Length: 2\r\n\r\n{}");
  ASSERT_TRUE(charset);
  EXPECT_EQ(charset->status, 200);
  auto bare = Ask(port,
                  "POST /scheduler/preempt HTTP/1.1\r\nHost: x\r\nContent-Length: 2"
                  "\r\n\r\n{}");
  ASSERT_TRUE(bare);
  EXPECT_EQ(bare->status, 200);
  EXPECT_EQ(handler.calls, (std::vector<std::string>{"prioritize {}", "preempt {}"}));
}

TEST(ScheduleServerTest, ReadyzIs503WhenNotReady) {
  UnwiredExtenderHandler handler;
  ScheduleServerHooks hooks;
  hooks.ready = [] { return server::ReadyState{false, {{"model", "no endpoint answers"}}}; };
  RunningServer server(InsecureOptions(), handler, hooks);
  auto ready = Ask(server.endpoints.ops_port, Get("/readyz"));
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->status, 503);
  EXPECT_NE(ready->body.find("no endpoint answers"), std::string::npos);
  auto unwired = Ask(server.endpoints.main_port, Post("/scheduler/filter", "{}"));
  ASSERT_TRUE(unwired);
  EXPECT_EQ(unwired->status, 503);
}

TEST(ScheduleServerTest, ExtraOpsRoutesAndAnEmptyPrefix) {
  RecordingHandler handler;
  ScheduleServerHooks hooks;
  hooks.add_ops_routes = [](server::HttpServer& ops) {
    ops.Route("GET", "/v1/extra",
              [](const server::HttpRequest&) { return server::HttpResponse::Json(200, "{}"); });
  };
  ScheduleServerOptions options = InsecureOptions();
  options.url_prefix = "/";
  RunningServer server(options, handler, hooks);
  EXPECT_EQ(Ask(server.endpoints.ops_port, Get("/v1/extra"))->status, 200);
  EXPECT_EQ(Ask(server.endpoints.main_port, Post("/filter", "{}"))->status, 200);
}

TEST(ScheduleServerTest, RefusesPlainHttpUnlessAllowed) {
  UnwiredExtenderHandler handler;
  ScheduleServerOptions options;
  Status s = RunScheduleServer(options, handler, {});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kInvalidInput);
  EXPECT_NE(s.error().message.find("--insecure-http"), std::string::npos);
}

TEST(ScheduleServerTest, ReportsAPortInUse) {
  UnwiredExtenderHandler handler;
  RunningServer first(InsecureOptions(), handler);
  ScheduleServerOptions clash = InsecureOptions();
  clash.ops.port = first.endpoints.ops_port;
  Status s = RunScheduleServer(clash, handler, {});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kNetwork);
}

TEST(ScheduleServerTest, ParsesListenAddressesAndPrefixes) {
  auto v4 = server::ParseListenAddress("127.0.0.1:8443");
  ASSERT_TRUE(v4.ok());
  EXPECT_EQ(v4->host, "127.0.0.1");
  EXPECT_EQ(v4->port, 8443);
  auto any = server::ParseListenAddress(":0");
  ASSERT_TRUE(any.ok());
  EXPECT_EQ(any->host, "0.0.0.0");
  EXPECT_EQ(any->port, 0);
  auto v6 = server::ParseListenAddress("[::1]:80");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1");
  for (std::string bad : {"8443", "::1:80", "host:", "host:65536", "host:-1", "h:8x"}) {
    auto r = server::ParseListenAddress(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().message.find(bad), std::string::npos);
  }
  EXPECT_EQ(NormalizeUrlPrefix("/scheduler/"), "/scheduler");
  EXPECT_EQ(NormalizeUrlPrefix("scheduler"), "/scheduler");
  EXPECT_EQ(NormalizeUrlPrefix("/"), "");
  EXPECT_EQ(NormalizeUrlPrefix(""), "");
}

}  // namespace
}  // namespace powerctl::extender
