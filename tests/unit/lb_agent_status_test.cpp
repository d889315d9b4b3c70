#include "core/lb/agent_status.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace powerctl::lb {
namespace {

using ::testing::HasSubstr;

// The contract's example document.
constexpr char kStatus[] = R"({
  "apiVersion": "powerctl.io/v1alpha1", "kind": "LbAgentStatus", "node": "node-a",
  "mode": "nftables", "synced": true, "lastSync": "2026-11-25T15:00:00Z", "lastError": "",
  "services": [
    {"namespace": "shop", "name": "web", "state": "balanced", "reason": "",
     "ports": [
       {"port": 80, "protocol": "TCP", "endpoints": [
         {"address": "10.1.0.1", "port": 8080, "node": "node-a", "weight": 100, "basis": "predicted"},
         {"address": "10.1.0.2", "port": 8080, "node": "node-b", "weight": 26, "basis": "predicted"}]},
       {"port": 443, "protocol": "TCP", "endpoints": [
         {"address": "10.1.0.1", "port": 8443, "node": "node-a", "weight": 100, "basis": "predicted"}]}]},
    {"namespace": "shop", "name": "legacy", "state": "skipped", "reason": "IPv6 ClusterIP",
     "ports": []},
    {"namespace": "db", "name": "pg", "state": "failed", "reason": "no ready endpoints"}]
})";

TEST(LbAgentStatusTest, DecodesTheContractsDocument) {
  auto status = ParseAgentStatus(kStatus);
  ASSERT_TRUE(status.ok()) << status.error().message;

  EXPECT_EQ(status->node, "node-a");
  EXPECT_EQ(status->mode, "nftables");
  EXPECT_TRUE(status->synced);
  EXPECT_EQ(status->last_sync, "2026-11-25T15:00:00Z");
  EXPECT_EQ(status->last_error, "");
  ASSERT_EQ(status->services.size(), 3u);
  const AgentServiceStatus& web = status->services[0];
  EXPECT_EQ(web.namespace_, "shop");
  EXPECT_EQ(web.name, "web");
  EXPECT_EQ(web.state, "balanced");
  EXPECT_EQ(web.ports, 2u);
  EXPECT_EQ(web.endpoints, 3u);
  EXPECT_EQ(status->services[1].reason, "IPv6 ClusterIP");
  EXPECT_EQ(status->services[1].ports, 0u);
  EXPECT_EQ(status->services[2].ports, 0u);  // ports may be left out
  EXPECT_EQ(status->CountState("balanced"), 1u);
  EXPECT_EQ(status->CountState("skipped"), 1u);
  EXPECT_EQ(status->CountState("failed"), 1u);
}

TEST(LbAgentStatusTest, BeforeTheFirstSyncLastSyncIsNullAndThereAreNoServices) {
  auto status = ParseAgentStatus(
      R"({"apiVersion":"powerctl.io/v1alpha1","kind":"LbAgentStatus","node":"n",)"
      R"("mode":"nftables","synced":false,"lastSync":null,"lastError":"","services":[]})");
  ASSERT_TRUE(status.ok()) << status.error().message;

  EXPECT_FALSE(status->synced);
  EXPECT_EQ(status->last_sync, "");
  EXPECT_TRUE(status->services.empty());
}

TEST(LbAgentStatusTest, UnknownFieldsAndStatesAreKeptForANewerAgent) {
  auto status = ParseAgentStatus(
      R"({"apiVersion":"powerctl.io/v1alpha1","kind":"LbAgentStatus","node":"n","synced":true,)"
      R"("future":{"x":1},"services":[{"namespace":"a","name":"b","state":"draining"}]})");
  ASSERT_TRUE(status.ok()) << status.error().message;

  EXPECT_EQ(status->services[0].state, "draining");
  EXPECT_EQ(status->mode, "");
}

TEST(LbAgentStatusTest, ControlCharactersBecomeSpacesAndLongTextIsCut) {
  auto status = ParseAgentStatus(
      R"({"apiVersion":"powerctl.io/v1alpha1","kind":"LbAgentStatus","node":"n","synced":true,)"
      R"("lastError":"line one\nline two\u001b[31m red","services":[]})");
  ASSERT_TRUE(status.ok()) << status.error().message;
  EXPECT_EQ(status->last_error, "line one line two [31m red");

  std::string long_error(1000, 'x');
  status = ParseAgentStatus(
      R"({"apiVersion":"powerctl.io/v1alpha1","kind":"LbAgentStatus","node":"n","synced":true,)"
      R"("lastError":")" +
      long_error + R"("})");
  ASSERT_TRUE(status.ok()) << status.error().message;
  EXPECT_EQ(status->last_error, std::string(300, 'x') + "...");
}

TEST(LbAgentStatusTest, RefusesOtherDocumentsNamingWhatIsWrong) {
  struct Case {
    std::string body;
    std::string error;
  };
  const std::string head = R"({"apiVersion":"powerctl.io/v1alpha1","kind":"LbAgentStatus",)";
  const Case cases[] = {
      {"", "not valid JSON"},
      {"<html>502 Bad Gateway</html>", "not valid JSON"},
      {"[1,2]", "not a JSON object"},
      {R"({"apiVersion":"v1","kind":"Status"})", "not a powerctl.io/v1alpha1/LbAgentStatus"},
      {head + R"("synced":true})", "node is missing"},
      {head + R"("node":7,"synced":true})", "node is not a string"},
      // Found by agent_status_fuzzer (corpus regression-empty-node): doctor names agents by node.
      {head + R"("node":"","synced":true})", "node must not be empty"},
      {head + R"("node":"n"})", "synced is not true or false"},
      {head + R"("node":"n","synced":true,"lastSync":5})", "lastSync is not a string or null"},
      {head + R"("node":"n","synced":true,"services":{}})", "services is not a list"},
      {head + R"("node":"n","synced":true,"services":[3]})", "services[0] is not an object"},
      {head + R"("node":"n","synced":true,"services":[{"namespace":"a","name":"b"}]})",
       "services[0].state is missing"},
      {head + R"("node":"n","synced":true,"services":[{"namespace":"","name":"b","state":"x"}]})",
       "must not be empty"},
      {head + R"("node":"n","synced":true,"services":[{"namespace":"a","name":"b",)"
              R"("state":"balanced","ports":[1]}]})",
       "services[0].ports[0] is not an object"},
      {head + R"("node":"n","synced":true,"services":[{"namespace":"a","name":"b",)"
              R"("state":"balanced","ports":[{"endpoints":"x"}]}]})",
       "services[0].ports[0].endpoints is not a list"},
  };
  for (const Case& c : cases) {
    auto status = ParseAgentStatus(c.body);
    ASSERT_FALSE(status.ok()) << c.body;
    EXPECT_EQ(status.error().code, ErrorCode::kInvalidInput) << c.body;
    EXPECT_THAT(status.error().message, HasSubstr("lb-agent status: ")) << c.body;
    EXPECT_THAT(status.error().message, HasSubstr(c.error)) << c.body;
  }
}

TEST(LbAgentStatusTest, ADeeplyNestedBodyIsRefusedBeforeParsing) {
  std::string body = std::string(100000, '[') + std::string(100000, ']');
  auto status = ParseAgentStatus(body);
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.error().message, HasSubstr("nested deeper than 16"));
}

}  // namespace
}  // namespace powerctl::lb
