// Reading PodDisruptionBudgets from the API server: policy/v1, or policy/v1beta1 where the
// server has no v1 (before 1.21), whose empty selector selects nothing.
#include "core/consolidate/pod_rules.h"

#include <gtest/gtest.h>

#include "fake_transport.h"

namespace powerctl::consolidate {
namespace {

using json = nlohmann::json;

json PodList(json items) {
  return {{"kind", "PodDisruptionBudgetList"}, {"metadata", json::object()}, {"items", items}};
}

json Budget(const std::string& name, json selector) {
  return {{"metadata", {{"name", name}, {"namespace", "shop"}}},
          {"spec", {{"selector", std::move(selector)}}},
          {"status", {{"disruptionsAllowed", 1}}}};
}

json ShopPod() {
  return {{"metadata", {{"name", "p"}, {"namespace", "shop"}, {"labels", {{"app", "web"}}}}}};
}

TEST(ConsolidateDisruptionBudgets, ReadsPolicyV1) {
  auto transport = std::make_unique<kube::fake::FakeTransport>();
  kube::fake::FakeTransport* fake = transport.get();
  fake->responses.push_back(kube::fake::ApiReply(200, PodList({Budget("all", json::object())})));
  kube::Client client(std::move(transport), kube::ClientOptions{});
  auto budgets = ListDisruptionBudgets(client);
  ASSERT_TRUE(budgets.ok()) << budgets.error().message;
  ASSERT_EQ(budgets->size(), 1u);
  EXPECT_EQ((*budgets)[0].disruptions_allowed, 1);
  EXPECT_TRUE((*budgets)[0].Covers(ShopPod()));
  ASSERT_EQ(fake->requests.size(), 1u);
  EXPECT_EQ(fake->requests[0].path.rfind("/apis/policy/v1/poddisruptionbudgets", 0), 0u);
}

TEST(ConsolidateDisruptionBudgets, FallsBackToV1beta1WhereV1IsMissing) {
  auto transport = std::make_unique<kube::fake::FakeTransport>();
  kube::fake::FakeTransport* fake = transport.get();
  fake->responses.push_back(kube::fake::ApiReply(
      404, kube::fake::StatusBody(404, "NotFound", "the server could not find")));
  fake->responses.push_back(
      kube::fake::ApiReply(200, PodList({Budget("all", json::object()),
                                         Budget("web", {{"matchLabels", {{"app", "web"}}}})})));
  kube::Client client(std::move(transport), kube::ClientOptions{});
  auto budgets = ListDisruptionBudgets(client);
  ASSERT_TRUE(budgets.ok()) << budgets.error().message;
  ASSERT_EQ(budgets->size(), 2u);
  EXPECT_FALSE((*budgets)[0].Covers(ShopPod()));  // v1beta1: {} selects nothing
  EXPECT_TRUE((*budgets)[1].Covers(ShopPod()));
  ASSERT_EQ(fake->requests.size(), 2u);
  EXPECT_EQ(fake->requests[1].path.rfind("/apis/policy/v1beta1/poddisruptionbudgets", 0), 0u);
}

TEST(ConsolidateDisruptionBudgets, OtherErrorsAreReported) {
  auto transport = std::make_unique<kube::fake::FakeTransport>();
  transport->responses.push_back(
      kube::fake::ApiReply(403, kube::fake::StatusBody(403, "Forbidden", "cannot list")));
  kube::Client client(std::move(transport), kube::ClientOptions{});
  auto budgets = ListDisruptionBudgets(client);
  ASSERT_FALSE(budgets.ok());
  EXPECT_EQ(budgets.error().code, ErrorCode::kForbidden);
}

}  // namespace
}  // namespace powerctl::consolidate
