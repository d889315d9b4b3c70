// The load-balancing table's text (what nft is given, character for character) and the
// validation that keeps anything else out of it.
#include "core/lb/nft_ruleset.h"

#include <gtest/gtest.h>

namespace powerctl::lb {
namespace {

BalancedService RulesetWeb() {
  BalancedService s;
  s.namespace_name = "default";
  s.name = "web";
  s.cluster_ip = "10.96.0.10";
  s.port = 80;
  s.endpoints = {{"10.0.1.2", 8080, 60}, {"10.0.2.2", 8080, 30}, {"10.0.3.2", 8080, 10}};
  return s;
}

constexpr const char* kHeader =
    "add table ip powerctl-lb\n"
    "delete table ip powerctl-lb\n"
    "table ip powerctl-lb {\n";
constexpr const char* kBaseChains =
    "\tchain prerouting {\n"
    "\t\ttype nat hook prerouting priority -101; policy accept;\n"
    "\t\tjump services\n"
    "\t}\n"
    "\tchain output {\n"
    "\t\ttype nat hook output priority -101; policy accept;\n"
    "\t\tjump services\n"
    "\t}\n"
    "}\n";

std::string InvalidMessage(const BalancedService& s) {
  auto r = RenderNftRuleset({s});
  EXPECT_FALSE(r.ok());
  if (r.ok()) return "";
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidInput);
  EXPECT_FALSE(ValidateService(s).ok());
  return r.error().message;
}

TEST(NftRulesetTest, WeightsBecomeContiguousNumgenRanges) {
  BalancedService dns = RulesetWeb();
  dns.namespace_name = "kube-system";
  dns.name = "dns";
  dns.cluster_ip = "10.96.0.11";
  dns.port = 53;
  dns.protocol = "UDP";
  dns.endpoints = {{"10.0.1.3", 53, 1}, {"10.0.2.3", 5353, 2}};
  auto r = RenderNftRuleset({RulesetWeb(), dns});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*r,
            std::string(kHeader) +
                "\tchain services {\n"
                "\t\tip saddr != { 10.0.1.2, 10.0.2.2, 10.0.3.2 } "
                "ip daddr 10.96.0.10 tcp dport 80 dnat ip to numgen random mod 100 map { "
                "0-59 : 10.0.1.2 . 8080, 60-89 : 10.0.2.2 . 8080, 90-99 : 10.0.3.2 . 8080 } "
                "comment \"default/web:80/TCP\"\n"
                "\t\tip saddr != { 10.0.1.3, 10.0.2.3 } ip daddr 10.96.0.11 udp dport 53 dnat ip "
                "to numgen random mod 3 map { "
                "0 : 10.0.1.3 . 53, 1-2 : 10.0.2.3 . 5353 } comment \"kube-system/dns:53/UDP\"\n"
                "\t}\n" +
                kBaseChains);
}

TEST(NftRulesetTest, TrafficFromTheEndpointsIsLeftToKubeProxy) {
  // kube-proxy masquerades an endpoint reaching itself through its Service (hairpin); these
  // rules do not, so they skip connections from the endpoints, each address listed once.
  BalancedService s = RulesetWeb();
  s.endpoints = {{"10.0.1.2", 8080, 1}, {"10.0.1.2", 9090, 1}, {"10.0.10.2", 8080, 1}};
  auto r = RenderNftRuleset({s});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_NE(r->find("\t\tip saddr != { 10.0.1.2, 10.0.10.2 } ip daddr 10.96.0.10 tcp dport 80 "
                    "dnat ip to numgen random mod 3 map { 0 : 10.0.1.2 . 8080, 1 : 10.0.1.2 . "
                    "9090, 2 : 10.0.10.2 . 8080 }"),
            std::string::npos)
      << *r;
}

TEST(NftRulesetTest, NoServicesOrNoEndpointsGiveAnEmptyServicesChain) {
  BalancedService empty = RulesetWeb();
  empty.endpoints.clear();  // no ready endpoints: kube-proxy keeps answering for it
  for (const auto& list : {std::vector<BalancedService>{}, std::vector<BalancedService>{empty}}) {
    auto r = RenderNftRuleset(list);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(*r, std::string(kHeader) + "\tchain services {\n\t}\n" + kBaseChains);
  }
}

TEST(NftRulesetTest, SameInputSameText) {
  auto a = RenderNftRuleset({RulesetWeb()});
  auto b = RenderNftRuleset({RulesetWeb()});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, *b);
}

TEST(NftRulesetTest, LongNamesAreCutToNftsCommentLimit) {
  BalancedService s = RulesetWeb();
  s.namespace_name = std::string(63, 'n');
  s.name = std::string(63, 's');
  auto r = RenderNftRuleset({s});
  ASSERT_TRUE(r.ok()) << r.error().message;
  const auto begin = r->find("comment \"") + 9;
  const auto end = r->find('"', begin);
  EXPECT_EQ(end - begin, 128u);
}

TEST(NftRulesetTest, RemovalSucceedsWithOrWithoutTheTable) {
  EXPECT_EQ(RenderNftRemoval(), "add table ip powerctl-lb\ndelete table ip powerctl-lb\n");
}

TEST(NftRulesetTest, RejectsNamesThatAreNotKubernetesNames) {
  BalancedService s = RulesetWeb();
  s.name = "web\" accept; #";
  EXPECT_NE(InvalidMessage(s).find("name:"), std::string::npos);
  s = RulesetWeb();
  s.namespace_name = "";
  EXPECT_NE(InvalidMessage(s).find("namespace:"), std::string::npos);
}

TEST(NftRulesetTest, RejectsAddressesThatAreNotIpv4DottedQuads) {
  for (const char* bad : {"", "10.96.0", "10.96.0.256", "010.96.0.10", "fd00::10", "10.96.0.10 ",
                          "10.96.0.10; flush ruleset", "web.default"}) {
    BalancedService s = RulesetWeb();
    s.cluster_ip = bad;
    EXPECT_NE(InvalidMessage(s).find("cluster IP"), std::string::npos) << bad;
    s = RulesetWeb();
    s.endpoints[1].ip = bad;
    EXPECT_NE(InvalidMessage(s).find("endpoint 1:"), std::string::npos) << bad;
  }
}

TEST(NftRulesetTest, RejectsPortsProtocolsAndWeightsOutOfRange) {
  BalancedService s = RulesetWeb();
  s.port = 0;
  EXPECT_NE(InvalidMessage(s).find("port 0 is not in 1..65535"), std::string::npos);
  s = RulesetWeb();
  s.endpoints[0].port = 65536;
  EXPECT_NE(InvalidMessage(s).find("endpoint 0: port 65536"), std::string::npos);
  s = RulesetWeb();
  s.protocol = "SCTP";
  EXPECT_NE(InvalidMessage(s).find("protocol \"SCTP\""), std::string::npos);
  s = RulesetWeb();
  s.protocol = "tcp";  // the Service spec spells it in capitals
  EXPECT_FALSE(ValidateService(s).ok());
  for (int weight : {0, -1, 101}) {
    s = RulesetWeb();
    s.endpoints[2].weight = weight;
    EXPECT_NE(InvalidMessage(s).find("endpoint 2: weight"), std::string::npos) << weight;
  }
  s = RulesetWeb();
  s.endpoints[2].weight = 100;
  EXPECT_TRUE(ValidateService(s).ok());
}

TEST(NftRulesetTest, RejectsDuplicates) {
  BalancedService s = RulesetWeb();
  s.endpoints[2].ip = "10.0.1.2";
  EXPECT_NE(InvalidMessage(s).find("10.0.1.2:8080 is listed twice"), std::string::npos);

  BalancedService other = RulesetWeb();
  other.name = "web2";
  auto r = RenderNftRuleset({RulesetWeb(), other});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("default/web2"), std::string::npos);
  other.protocol = "UDP";  // same address and port, other protocol: two rules
  EXPECT_TRUE(RenderNftRuleset({RulesetWeb(), other}).ok());
}

}  // namespace
}  // namespace powerctl::lb
