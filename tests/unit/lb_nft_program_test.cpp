// ProgramNftTable: check, then apply; every failure ends with the table removed.
#include "core/lb/nft_program.h"
#include "tests/unit/fake_nft_executor.h"

#include <gtest/gtest.h>

namespace powerctl::lb {
namespace {

const std::string kRemoval = RenderNftRemoval();

BalancedService Web() {
  BalancedService s;
  s.namespace_name = "default";
  s.name = "web";
  s.cluster_ip = "10.96.0.10";
  s.port = 80;
  s.endpoints = {{"10.0.1.2", 8080, 60}, {"10.0.2.2", 8080, 40}};
  return s;
}

TEST(NftProgramTest, ChecksThenApplies) {
  FakeNftExecutor nft;
  ASSERT_TRUE(ProgramNftTable(nft, {Web()}).ok());
  ASSERT_EQ(nft.calls.size(), 2u);
  EXPECT_EQ(nft.calls[0].mode, NftMode::kCheck);
  EXPECT_EQ(nft.calls[1].mode, NftMode::kApply);
  EXPECT_EQ(nft.calls[0].script, nft.calls[1].script);
  EXPECT_EQ(nft.calls[1].script, *RenderNftRuleset({Web()}));
}

TEST(NftProgramTest, NoServicesRemovesTheTable) {
  FakeNftExecutor nft;
  ASSERT_TRUE(ProgramNftTable(nft, {}).ok());
  ASSERT_EQ(nft.calls.size(), 1u);
  EXPECT_EQ(nft.calls[0].script, kRemoval);
  EXPECT_EQ(nft.calls[0].mode, NftMode::kApply);
}

TEST(NftProgramTest, InvalidInputRemovesTheTableWithoutTryingIt) {
  FakeNftExecutor nft;
  BalancedService bad = Web();
  bad.endpoints[1].ip = "10.0.2";
  auto s = ProgramNftTable(nft, {bad});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kInvalidInput);
  EXPECT_NE(s.error().message.find("endpoint 1"), std::string::npos);
  EXPECT_NE(s.error().message.find("table removed"), std::string::npos);
  ASSERT_EQ(nft.calls.size(), 1u);
  EXPECT_EQ(nft.calls[0].script, kRemoval);
}

TEST(NftProgramTest, FailedCheckOrApplyRemovesTheTableAndKeepsNftsError) {
  for (NftMode failing : {NftMode::kCheck, NftMode::kApply}) {
    FakeNftExecutor nft;
    nft.respond = [&](const std::string& script, NftMode mode) -> Status {
      if (script != kRemoval && mode == failing) {
        return MakeError(ErrorCode::kApi, "nftables: Error: Could not process rule");
      }
      return OkStatus();
    };
    auto s = ProgramNftTable(nft, {Web()});
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().code, ErrorCode::kApi);
    EXPECT_EQ(s.error().message.rfind("nftables: Error: Could not process rule", 0), 0u);
    EXPECT_NE(s.error().message.find("table removed"), std::string::npos);
    EXPECT_EQ(nft.calls.back().script, kRemoval);
    EXPECT_EQ(nft.calls.size(), failing == NftMode::kCheck ? 2u : 3u);
  }
}

TEST(NftProgramTest, AFailedRemovalIsReportedToo) {
  FakeNftExecutor nft;
  nft.respond = [](const std::string&, NftMode) -> Status {
    return MakeError(ErrorCode::kForbidden, "nftables: Operation not permitted");
  };
  auto s = ProgramNftTable(nft, {Web()});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("removing the table failed too"), std::string::npos);
}

}  // namespace
}  // namespace powerctl::lb
