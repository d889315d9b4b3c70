// ServiceWatch against the in-memory watch server: which Services it keeps and which changes
// wake the agent.
#include "core/lb/service_watch.h"
#include "tests/unit/fake_watch_server.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <thread>

namespace powerctl::lb {
namespace {

using json = nlohmann::json;
using kube::fake::FakeWatchServer;
using std::chrono::milliseconds;

json Service(const std::string& name, const char* annotation) {
  json service = {{"apiVersion", "v1"},
                  {"kind", "Service"},
                  {"metadata", {{"name", name}, {"namespace", "shop"}}},
                  {"spec", {{"clusterIP", "10.96.0.10"}, {"ports", {{{"port", 80}}}}}}};
  if (annotation != nullptr) {
    service["metadata"]["annotations"] = {{"powerctl.io/load-balancing", annotation}};
  }
  return service;
}

json Slice(const std::string& service, const std::string& address) {
  return {{"apiVersion", "discovery.k8s.io/v1"},
          {"kind", "EndpointSlice"},
          {"metadata",
           {{"name", service + "-1"},
            {"namespace", "shop"},
            {"labels", {{"kubernetes.io/service-name", service}}}}},
          {"endpoints", {{{"addresses", {address}}}}}};
}

bool Eventually(const std::function<bool()>& condition) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(milliseconds(5));
  }
  return condition();
}

class ServiceWatchTest : public ::testing::Test {
 protected:
  // A started watch once it knows the annotated Services "web" and "api".
  std::unique_ptr<ServiceWatch> WatchingWebAndApi() {
    server_.Put(Service("web", "power-aware"));
    server_.Put(Service("api", "power-aware"));
    auto watch = MakeWatch();
    watch->Start();
    EXPECT_TRUE(Eventually([&] { return watch->Services().size() == 2; }));
    return watch;
  }

  std::unique_ptr<ServiceWatch> MakeWatch() {
    ServiceWatchOptions options;
    options.restart_after = milliseconds(10);
    options.client.max_attempts = 2;
    options.client.initial_backoff = milliseconds(1);
    options.client.max_backoff = milliseconds(5);
    options.on_change = [this] { ++changes_; };
    return std::make_unique<ServiceWatch>(
        [this]() -> Result<std::unique_ptr<kube::HttpTransport>> { return server_.Transport(); },
        options);
  }

  // Waits for the change count to move past `before`, then for quiet.
  bool ChangedSince(int before) {
    return Eventually([&] { return changes_.load() > before; });
  }

  FakeWatchServer server_;
  std::atomic<int> changes_{0};
};

TEST_F(ServiceWatchTest, KeepsAnnotatedServicesAndWakesOnTheirChangesOnly) {
  server_.Put(Service("web", "power-aware"));
  server_.Put(Service("plain", nullptr));
  server_.Put(Slice("web", "10.1.0.1"));
  server_.Put(Slice("plain", "10.2.0.1"));
  auto watch = MakeWatch();
  EXPECT_FALSE(watch->listed());
  watch->Start();
  ASSERT_TRUE(Eventually([&] { return watch->listed(); }));
  ASSERT_TRUE(ChangedSince(0));  // the first list wakes the agent once for everything
  auto services = watch->Services();
  ASSERT_EQ(services.size(), 1u);
  EXPECT_EQ(services[0]["metadata"]["name"], "web");
  EXPECT_EQ(watch->error(), "");

  // Wait until both watches run (the slice watch wakes for web's slice in its list), then
  // count from a quiet point.
  ASSERT_TRUE(Eventually([&] {
    int before = changes_.load();
    std::this_thread::sleep_for(milliseconds(100));
    return changes_.load() == before;
  }));
  int before = changes_.load();
  server_.Put(Slice("plain", "10.2.0.2"));  // not an annotated Service's slice
  json status_only = Service("web", "power-aware");
  status_only["status"] = {{"loadBalancer", json::object()}};
  server_.Put(status_only);  // neither spec nor annotations changed
  std::this_thread::sleep_for(milliseconds(200));
  EXPECT_EQ(changes_.load(), before);

  server_.Put(Slice("web", "10.1.0.2"));
  ASSERT_TRUE(ChangedSince(before));

  before = changes_.load();
  server_.Put(Service("web", nullptr));  // the annotation is removed: the rules must go
  ASSERT_TRUE(ChangedSince(before));
  EXPECT_TRUE(Eventually([&] { return watch->Services().empty(); }));

  before = changes_.load();
  server_.Put(Service("plain", "power_aware"));  // any value is kept (and reported later)
  ASSERT_TRUE(ChangedSince(before));
  ASSERT_TRUE(Eventually([&] { return watch->Services().size() == 1; }));
  EXPECT_EQ(watch->Services()[0]["metadata"]["name"], "plain");

  before = changes_.load();
  server_.Delete("/api/v1/namespaces/shop/services/plain");
  ASSERT_TRUE(ChangedSince(before));
  EXPECT_TRUE(Eventually([&] { return watch->Services().empty(); }));
  watch->Stop();
}

TEST_F(ServiceWatchTest, ServicesDeletedWhileTheWatchWasDownAreDroppedAtTheRelist) {
  auto watch = WatchingWebAndApi();
  ASSERT_EQ(watch->Services().size(), 2u);
  server_.SetDown(true);
  server_.CloseWatches();
  ASSERT_TRUE(Eventually([&] { return !watch->error().empty(); }));
  server_.SetDown(false);
  server_.Delete("/api/v1/namespaces/shop/services/api");
  server_.Compact();  // the watch cannot resume: it lists again
  ASSERT_TRUE(Eventually([&] { return watch->Services().size() == 1; }));
  EXPECT_EQ(watch->Services()[0]["metadata"]["name"], "web");
  EXPECT_TRUE(Eventually([&] { return watch->error().empty(); }));
  watch->Stop();
}

TEST_F(ServiceWatchTest, AResumedWatchKeepsTheServicesItKnows) {
  auto watch = WatchingWebAndApi();
  ASSERT_EQ(watch->Services().size(), 2u);
  auto service_watches = [&] {
    int n = 0;
    for (const std::string& path : server_.Requests())
      n += path.rfind("GET /api/v1/services?", 0) == 0 && path.find("watch=1") != std::string::npos;
    return n;
  };
  const int before = service_watches();
  // The API server ends every watch after its timeoutSeconds; the watch resumes from its
  // version without listing (the resumed stream's start is seen before its request).
  for (int i = 0; i < 3; ++i) {
    const int started = service_watches();
    server_.CloseWatches();
    ASSERT_TRUE(Eventually([&] { return service_watches() > started; }));
    EXPECT_EQ(watch->Services().size(), 2u) << "after resume " << i + 1;
  }
  EXPECT_GT(service_watches(), before);
  server_.Delete("/api/v1/namespaces/shop/services/api");
  EXPECT_TRUE(Eventually([&] { return watch->Services().size() == 1; }));
  watch->Stop();
}

TEST_F(ServiceWatchTest, FallsBackToV1beta1SlicesOnA120Server) {
  server_.FailNext("/apis/discovery.k8s.io/v1/", 1000, 404);  // 1.20 serves only v1beta1
  server_.Put(Service("web", "power-aware"));
  json slice = Slice("web", "10.1.0.1");
  slice["apiVersion"] = "discovery.k8s.io/v1beta1";
  server_.Put(slice);
  auto watch = MakeWatch();
  watch->Start();
  ASSERT_TRUE(Eventually([&] { return watch->listed(); }));
  ASSERT_TRUE(Eventually([&] {
    int before = changes_.load();
    std::this_thread::sleep_for(milliseconds(100));
    return changes_.load() == before;
  }));
  const int before = changes_.load();
  slice["endpoints"] = {{{"addresses", {"10.1.0.2"}}}};
  server_.Put(slice);
  EXPECT_TRUE(ChangedSince(before));
  EXPECT_EQ(watch->error(), "");
  watch->Stop();
}

}  // namespace
}  // namespace powerctl::lb
