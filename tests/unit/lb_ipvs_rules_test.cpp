// ParseIpvsSave on real `ipvsadm -S -n` output and on broken lines; RenderIpvsWeightEdits.
#include "core/lb/ipvs_rules.h"

#include <gtest/gtest.h>

namespace powerctl::lb {
namespace {

// kube-proxy in IPVS mode (the kubernetes Service with sessionAffinity, kube-dns over UDP and
// TCP, an application Service), as printed by `ipvsadm -S -n` on a node; addresses from public
// write-ups of kube-proxy's and kube-router's IPVS tables.
constexpr const char* kKubeProxy =
    "-A -t 10.254.0.1:443 -s rr -p 10800\n"
    "-a -t 10.254.0.1:443 -r 192.168.123.250:6443 -m -w 1\n"
    "-A -t 10.96.0.10:53 -s wrr\n"
    "-a -t 10.96.0.10:53 -r 10.244.0.2:53 -m -w 1\n"
    "-a -t 10.96.0.10:53 -r 10.244.0.3:53 -m -w 1\n"
    "-A -u 10.96.0.10:53 -s wrr\n"
    "-a -u 10.96.0.10:53 -r 10.244.0.2:53 -m -w 1\n"
    "-a -u 10.96.0.10:53 -r 10.244.0.3:53 -m -w 1\n"
    "-A -t 10.96.54.11:8080 -s wrr\n"
    "-a -t 10.96.54.11:8080 -r 10.244.1.2:8080 -m -w 60\n"
    "-a -t 10.96.54.11:8080 -r 10.244.1.3:8080 -m -w 30\n"
    "-a -t 10.96.54.11:8080 -r 10.244.2.2:8080 -m -w 0\n";

TEST(IpvsRulesTest, ParsesKubeProxyTable) {
  auto table = ParseIpvsSave(kKubeProxy);
  ASSERT_TRUE(table.ok()) << table.error().message;
  ASSERT_EQ(table->size(), 4u);
  const IpvsVirtualServer& api = (*table)[0];
  EXPECT_EQ(api.key.protocol, IpvsProtocol::kTcp);
  EXPECT_EQ(api.key.address, "10.254.0.1");
  EXPECT_EQ(api.key.port, 443);
  EXPECT_EQ(api.scheduler, "rr");
  ASSERT_EQ(api.real_servers.size(), 1u);
  EXPECT_EQ(api.real_servers[0].address, "192.168.123.250");
  EXPECT_EQ(api.real_servers[0].port, 6443);
  EXPECT_EQ(api.real_servers[0].forward, 'm');
  EXPECT_EQ(api.real_servers[0].weight, 1);
  EXPECT_EQ((*table)[2].key.protocol, IpvsProtocol::kUdp);
  EXPECT_EQ((*table)[2].scheduler, "wrr");
  const IpvsVirtualServer& app = (*table)[3];
  ASSERT_EQ(app.real_servers.size(), 3u);
  EXPECT_EQ(app.real_servers[0].weight, 60);
  EXPECT_EQ(app.real_servers[2].weight, 0);  // being drained
}

TEST(IpvsRulesTest, ParsesFwmarkIpv6SctpTunnelsAndPersistence) {
  // Docker swarm's ingress (fwmark services, real-server port 0), an IPv6 service, SCTP, a
  // gatewaying server, and ipvsadm 1.31's tunnel options after the weight.
  const char* text =
      "-A -f 268 -s rr\n"
      "-a -f 268 -r 192.168.200.35:0 -m -w 1\n"
      "-A -f 7 -6 -s wrr\n"
      "-a -f 7 -6 -r [fd00::7]:0 -g -w 2\n"
      "-A -t [fd00:10:96::a]:80 -s wrr -p 360 -M 64\n"
      "-a -t [fd00:10:96::a]:80 -r [fd00:10:244:1::5]:8080 -m -w 3\n"
      "-A --sctp-service 10.96.0.9:9 -s sh -b sh-port\n"
      "-a --sctp-service 10.96.0.9:9 -r 10.244.1.9:9 -m -w 1\n"
      "-A -t 10.0.0.1:80 -s wlc -p 300 -M 255.255.255.0 --pe sip -o\n"
      "-a -t 10.0.0.1:80 -r 10.0.1.1:80 -i -w 5 --tun-type gue --tun-port 6080 --tun-nocsum\n"
      "\n"
      "-a -t 10.0.0.1:80 -r 10.0.1.2:80 -g -w 7 -x 100 -y 10\n";
  auto table = ParseIpvsSave(text);
  ASSERT_TRUE(table.ok()) << table.error().message;
  ASSERT_EQ(table->size(), 5u);
  EXPECT_EQ((*table)[0].key.protocol, IpvsProtocol::kFwmark);
  EXPECT_EQ((*table)[0].key.fwmark, 268u);
  EXPECT_EQ((*table)[0].real_servers[0].port, 0);
  EXPECT_TRUE((*table)[1].key.ipv6);
  EXPECT_EQ((*table)[1].real_servers[0].forward, 'g');
  EXPECT_EQ((*table)[2].key.address, "fd00:10:96::a");
  EXPECT_TRUE((*table)[2].key.ipv6);
  EXPECT_EQ((*table)[2].real_servers[0].address, "fd00:10:244:1::5");
  EXPECT_EQ((*table)[3].key.protocol, IpvsProtocol::kSctp);
  const auto& tunnel = (*table)[4].real_servers;
  ASSERT_EQ(tunnel.size(), 2u);
  EXPECT_EQ(tunnel[0].forward, 'i');
  EXPECT_EQ(tunnel[0].options,
            (std::vector<std::string>{"--tun-type", "gue", "--tun-port", "6080", "--tun-nocsum"}));
  EXPECT_EQ(tunnel[1].options, (std::vector<std::string>{"-x", "100", "-y", "10"}));
}

TEST(IpvsRulesTest, EmptyOutputIsAnEmptyTable) {
  auto table = ParseIpvsSave("");
  ASSERT_TRUE(table.ok());
  EXPECT_TRUE(table->empty());
}

void ExpectError(const std::string& text, const std::string& expected) {
  auto table = ParseIpvsSave(text);
  ASSERT_FALSE(table.ok()) << text;
  EXPECT_EQ(table.error().code, ErrorCode::kApi);
  EXPECT_EQ(table.error().message, expected) << text;
}

TEST(IpvsRulesTest, MalformedLinesAreNamed) {
  // Without -n ipvsadm prints service names; we always ask for numbers.
  ExpectError(
      "-A -t 192.168.0.178:80 -s rr\n-a -t 192.168.0.178:80 -r 192.168.56.101:radan-http "
      "-m -w 1\n",
      "line 2: bad real server \"192.168.56.101:radan-http\"");
  ExpectError("-A -t localhost.localdomain:http -s rr\n",
              "line 1: bad service address \"localhost.localdomain:http\"");
  ExpectError("IP Virtual Server version 1.2.1 (size=4096)\n",
              "line 1: unknown command \"IP\" (expected -A or -a)");
  ExpectError("-A -t 10.0.0.1:80\n", "line 1: virtual service without a scheduler (-s)");
  ExpectError("-A -t 10.0.0.1:80 -s\n", "line 1: -s needs a value");
  ExpectError("-A -t 10.0.0.1:80 -s rr --frobnicate 1\n",
              "line 1: unknown option \"--frobnicate\"");
  ExpectError("-A -t 10.0.0.1:80 -s WRR;rm\n", "line 1: bad value \"WRR;rm\" for -s");
  ExpectError("-A -t 10.0.0.1:70000 -s rr\n", "line 1: bad service address \"10.0.0.1:70000\"");
  ExpectError("-A -t 10.0.0.256:80 -s rr\n", "line 1: bad service address \"10.0.0.256:80\"");
  ExpectError("-A -t [10.0.0.1]:80 -s rr\n", "line 1: bad service address \"[10.0.0.1]:80\"");
  ExpectError("-A -t fd00::1:80 -s rr\n", "line 1: bad service address \"fd00::1:80\"");
  ExpectError("-A -f 0 -s rr\n", "line 1: bad firewall mark \"0\"");
  ExpectError("-A -x 10.0.0.1:80 -s rr\n", "line 1: unknown service type \"-x\"");
  ExpectError("-a -t 10.0.0.1:80 -r 10.0.1.1:80 -m -w 1\n",
              "line 1: real server for 10.0.0.1:80/TCP, which has no -A line before it");
  const std::string vs = "-A -t 10.0.0.1:80 -s wrr\n";
  ExpectError(vs + "-a -t 10.0.0.1:80 -r 10.0.1.1:80 -m -w -1\n", "line 2: bad weight \"-1\"");
  ExpectError(vs + "-a -t 10.0.0.1:80 -r 10.0.1.1:80 -m -w 2147483648\n",
              "line 2: bad weight \"2147483648\"");
  ExpectError(vs + "-a -t 10.0.0.1:80 -r 10.0.1.1:80 -m\n", "line 2: real server line without -w");
  ExpectError(vs + "-a -t 10.0.0.1:80 -m -w 1\n", "line 2: real server line without -r");
  ExpectError(vs + "-a -t 10.0.0.1:80 -r 10.0.1.1:80 -w 1\n",
              "line 2: real server line without a forwarding method (-g/-i/-m)");
  ExpectError(vs + "-a -t 10.0.0.1:80 -r 10.0.1.1:80 -m -g -w 1\n",
              "line 2: two forwarding methods");
  ExpectError(vs + "-a -t 10.0.0.1:80 -r 10.0.1.1:80 -m -w 1\n"
                   "-a -t 10.0.0.1:80 -r 10.0.1.1:80 -m -w 2\n",
              "line 3: real server 10.0.1.1:80 listed twice for 10.0.0.1:80/TCP");
  ExpectError(vs + vs, "line 2: virtual server 10.0.0.1:80/TCP listed twice");
  ExpectError(vs + "-a -t 10.0.0.1:80 -r 10.0.1.1:80 -m -w 1\r\n", "line 2: control character");
  ExpectError(vs + "-A -t 10.0.0.2:80 -s \x1b[31m\n", "line 2: control character");
  ExpectError(vs + "-A -t 10.0.0.2:80 -s r\xc3\xa9\n", "line 2: bad value \"r??\" for -s");
}

TEST(IpvsRulesTest, LimitsAreEnforced) {
  const std::string two =
      "-A -t 10.0.0.1:80 -s wrr\n-a -t 10.0.0.1:80 -r 10.0.1.1:80 -m -w 1\n"
      "-A -t 10.0.0.2:80 -s wrr\n-a -t 10.0.0.2:80 -r 10.0.1.1:80 -m -w 1\n";
  IpvsParseLimits limits;
  limits.max_virtual_servers = 1;
  auto table = ParseIpvsSave(two, limits);
  ASSERT_FALSE(table.ok());
  EXPECT_EQ(table.error().message, "line 3: more than 1 virtual servers");
  limits = {};
  limits.max_real_servers = 1;
  table = ParseIpvsSave(two, limits);
  ASSERT_FALSE(table.ok());
  EXPECT_EQ(table.error().message, "line 4: more than 1 real servers");
  limits = {};
  limits.max_line_bytes = 30;
  table = ParseIpvsSave(two, limits);
  ASSERT_FALSE(table.ok());
  EXPECT_EQ(table.error().message, "line 2: over 30 bytes");
  limits = {};
  limits.max_bytes = 100;
  table = ParseIpvsSave(two, limits);
  ASSERT_FALSE(table.ok());
  EXPECT_EQ(table.error().message, "line 1: the table is over 100 bytes (132 bytes)");
}

TEST(IpvsRulesTest, RendersEditsKeepingForwardingAndOptions) {
  auto table = ParseIpvsSave(
      "-A -t 10.96.54.11:8080 -s wrr\n"
      "-a -t 10.96.54.11:8080 -r 10.244.1.2:8080 -m -w 1\n"
      "-A -u [fd00::a]:53 -s wrr\n"
      "-a -u [fd00::a]:53 -r [fd00::2]:53 -m -w 1\n"
      "-A -f 7 -6 -s wrr\n"
      "-a -f 7 -6 -r [fd00::7]:0 -g -w 1\n"
      "-A --sctp-service 10.96.0.9:9 -s wrr\n"
      "-a --sctp-service 10.96.0.9:9 -r 10.0.1.1:9 -i -w 1 --tun-type gue --tun-port 6080\n");
  ASSERT_TRUE(table.ok()) << table.error().message;
  std::vector<IpvsWeightChange> changes;
  int weight = 60;
  for (const auto& vs : *table) {
    IpvsWeightChange c{vs.key, vs.real_servers[0]};
    c.real_server.weight = weight;
    weight -= 10;
    changes.push_back(c);
  }
  EXPECT_EQ(
      RenderIpvsWeightEdits(changes),
      "-e -t 10.96.54.11:8080 -r 10.244.1.2:8080 -m -w 60\n"
      "-e -u [fd00::a]:53 -r [fd00::2]:53 -m -w 50\n"
      "-e -f 7 -6 -r [fd00::7]:0 -g -w 40\n"
      "-e --sctp-service 10.96.0.9:9 -r 10.0.1.1:9 -i -w 30 --tun-type gue --tun-port 6080\n");
  EXPECT_EQ(RenderIpvsWeightEdits({}), "");
}

TEST(IpvsRulesTest, LabelsAndCanonicalAddresses) {
  IpvsServiceKey key;
  key.address = "10.96.0.10";
  key.port = 80;
  EXPECT_EQ(IpvsServiceLabel(key), "10.96.0.10:80/TCP");
  key.protocol = IpvsProtocol::kUdp;
  key.address = "fd00::a";
  EXPECT_EQ(IpvsServiceLabel(key), "[fd00::a]:80/UDP");
  EXPECT_EQ(IpvsServiceSpec(key), "-u [fd00::a]:80");
  EXPECT_EQ(CanonicalIpAddress("fd00:0:0::A"), "fd00::a");
  EXPECT_EQ(CanonicalIpAddress("10.0.0.1"), "10.0.0.1");
  EXPECT_EQ(CanonicalIpAddress("010.0.0.1"), "");
  EXPECT_EQ(CanonicalIpAddress("10.0.0.1\n-C"), "");
  EXPECT_EQ(CanonicalIpAddress(""), "");
}

}  // namespace
}  // namespace powerctl::lb
