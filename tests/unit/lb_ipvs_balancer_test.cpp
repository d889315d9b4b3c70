// The ipvs Balancer against an in-memory IPVS table: weights set, only differences written,
// skipped ports, weights handed back to kube-proxy, and every failure undone.
#include "core/lb/ipvs_balancer.h"
#include "tests/unit/fake_ipvs_admin.h"

#include <gtest/gtest.h>

namespace powerctl::lb {
namespace {

IpvsVirtualServer Vs(const std::string& vip, int port, const std::string& scheduler,
                     const std::vector<std::pair<std::string, int>>& servers,
                     IpvsProtocol protocol = IpvsProtocol::kTcp) {
  IpvsVirtualServer vs;
  vs.key.protocol = protocol;
  vs.key.address = vip;
  vs.key.port = port;
  vs.scheduler = scheduler;
  for (const auto& [ip, weight] : servers) vs.real_servers.push_back({ip, 8080, 'm', weight, {}});
  return vs;
}

BalancedService Web(std::vector<int> weights = {60, 30, 10}) {
  BalancedService s;
  s.namespace_name = "default";
  s.name = "web";
  s.cluster_ip = "10.96.0.10";
  s.port = 80;
  for (std::size_t i = 0; i < weights.size(); ++i) {
    s.endpoints.push_back({"10.0." + std::to_string(i + 1) + ".2", 8080, weights[i]});
  }
  return s;
}

struct Fixture {
  FakeIpvsAdmin* admin = nullptr;
  std::unique_ptr<Balancer> balancer;
  Fixture() {
    auto fake = std::make_unique<FakeIpvsAdmin>();
    admin = fake.get();
    admin->table = {
        Vs("10.96.0.10", 80, "wrr", {{"10.0.1.2", 1}, {"10.0.2.2", 1}, {"10.0.3.2", 1}}),
        Vs("10.96.0.1", 443, "rr", {{"192.168.1.10", 1}})};
    balancer = MakeIpvsBalancer(std::move(fake));
  }
  int W(const std::string& ip) const { return admin->Weight("10.96.0.10", 80, ip, 8080); }
};

TEST(IpvsBalancerTest, SetsWeightsAndWritesOnlyDifferences) {
  Fixture f;
  EXPECT_STREQ(f.balancer->Mode(), "ipvs");
  ASSERT_TRUE(f.balancer->Program({Web()}).ok());
  EXPECT_EQ(f.W("10.0.1.2"), 60);
  EXPECT_EQ(f.W("10.0.2.2"), 30);
  EXPECT_EQ(f.W("10.0.3.2"), 10);
  ASSERT_EQ(f.admin->batches.size(), 1u);
  const auto& edit = f.admin->batches[0][0];
  EXPECT_EQ(edit.real_server.forward, 'm');  // the edit keeps kube-proxy's masquerading
  EXPECT_EQ(RenderIpvsWeightEdits({edit}), "-e -t 10.96.0.10:80 -r 10.0.1.2:8080 -m -w 60\n");
  EXPECT_TRUE(f.balancer->Skipped().empty());

  // Same weights again: read, nothing written.
  ASSERT_TRUE(f.balancer->Program({Web()}).ok());
  EXPECT_EQ(f.admin->batches.size(), 1u);

  // One weight changes: one line.
  ASSERT_TRUE(f.balancer->Program({Web({60, 30, 20})}).ok());
  ASSERT_EQ(f.admin->batches.size(), 2u);
  ASSERT_EQ(f.admin->batches[1].size(), 1u);
  EXPECT_EQ(f.admin->batches[1][0].real_server.address, "10.0.3.2");
  EXPECT_EQ(f.W("10.0.3.2"), 20);
}

TEST(IpvsBalancerTest, SkipsPortsWithoutVirtualServerOrWithoutWrr) {
  Fixture f;
  BalancedService api;
  api.namespace_name = "default";
  api.name = "kubernetes";
  api.cluster_ip = "10.96.0.1";
  api.port = 443;
  api.endpoints = {{"192.168.1.10", 8080, 50}};
  BalancedService dns = Web();
  dns.namespace_name = "kube-system";
  dns.name = "kube-dns";
  dns.port = 53;
  dns.protocol = "UDP";
  ASSERT_TRUE(f.balancer->Program({api, dns, Web()}).ok());
  const auto skipped = f.balancer->Skipped();
  ASSERT_EQ(skipped.size(), 2u);
  EXPECT_EQ(skipped[0].service, "default/kubernetes:443/TCP");
  EXPECT_EQ(skipped[0].reason,
            "scheduler is rr, not wrr: weights would be ignored; set kube-proxy's "
            "ipvs.scheduler to wrr");
  EXPECT_EQ(skipped[1].service, "kube-system/kube-dns:53/UDP");
  EXPECT_EQ(skipped[1].reason,
            "no IPVS virtual server for 10.96.0.10:53/UDP: is kube-proxy in IPVS mode?");
  EXPECT_EQ(f.admin->Weight("10.96.0.1", 443, "192.168.1.10", 8080), 1);  // rr left alone
  EXPECT_EQ(f.W("10.0.1.2"), 60);
  // The next call reports its own skips only.
  ASSERT_TRUE(f.balancer->Program({Web()}).ok());
  EXPECT_TRUE(f.balancer->Skipped().empty());
}

TEST(IpvsBalancerTest, LeavesUnmatchedAndDrainingServersAlone) {
  Fixture f;
  // A real server with no endpoint (kube-proxy has not removed it yet), one being drained at
  // weight 0, and an endpoint kube-proxy has not added yet.
  f.admin->table[0].real_servers.push_back({"10.0.9.9", 8080, 'm', 1, {}});
  f.admin->table[0].real_servers[1].weight = 0;
  BalancedService s = Web();
  s.endpoints.push_back({"10.0.4.2", 8080, 40});
  ASSERT_TRUE(f.balancer->Program({s}).ok());
  EXPECT_EQ(f.W("10.0.1.2"), 60);
  EXPECT_EQ(f.W("10.0.2.2"), 0);  // never raised: kube-proxy is draining it
  EXPECT_EQ(f.W("10.0.9.9"), 1);
  EXPECT_EQ(f.W("10.0.4.2"), -1);
  // kube-proxy adds the new endpoint at weight 1 at its next sync; our next call sets it.
  f.admin->table[0].real_servers.push_back({"10.0.4.2", 8080, 'm', 1, {}});
  ASSERT_TRUE(f.balancer->Program({s}).ok());
  EXPECT_EQ(f.W("10.0.4.2"), 40);
}

TEST(IpvsBalancerTest, KubeProxyRestartResettingWeightsIsReappliedNotAnError) {
  Fixture f;
  ASSERT_TRUE(f.balancer->Program({Web()}).ok());
  for (auto& rs : f.admin->table[0].real_servers) rs.weight = 1;  // kube-proxy's initial sync
  ASSERT_TRUE(f.balancer->Program({Web()}).ok());
  EXPECT_EQ(f.W("10.0.1.2"), 60);
  EXPECT_EQ(f.W("10.0.3.2"), 10);
}

TEST(IpvsBalancerTest, PortNoLongerWantedGoesBackToOne) {
  Fixture f;
  f.admin->table.push_back(Vs("10.96.0.20", 80, "wrr", {{"10.0.1.2", 1}}));
  BalancedService other = Web({70});
  other.name = "other";
  other.cluster_ip = "10.96.0.20";
  ASSERT_TRUE(f.balancer->Program({Web(), other}).ok());
  EXPECT_EQ(f.admin->Weight("10.96.0.20", 80, "10.0.1.2", 8080), 70);
  ASSERT_TRUE(f.balancer->Program({Web()}).ok());
  EXPECT_EQ(f.admin->Weight("10.96.0.20", 80, "10.0.1.2", 8080), 1);
  EXPECT_EQ(f.W("10.0.1.2"), 60);
  // An endpoint dropped from a Service we still balance goes back to 1 as well.
  ASSERT_TRUE(f.balancer->Program({Web({60, 30})}).ok());
  EXPECT_EQ(f.W("10.0.3.2"), 1);
  // The scheduler was switched to rr: the port is skipped and our weights handed back.
  f.admin->table[0].scheduler = "rr";
  ASSERT_TRUE(f.balancer->Program({Web({60, 30})}).ok());
  EXPECT_EQ(f.W("10.0.1.2"), 1);
  EXPECT_EQ(f.W("10.0.2.2"), 1);
  // No Services: everything undone, nothing left to write.
  f.admin->table[0].scheduler = "wrr";
  ASSERT_TRUE(f.balancer->Program({Web()}).ok());
  const std::size_t before = f.admin->batches.size();
  ASSERT_TRUE(f.balancer->Program({}).ok());
  EXPECT_EQ(f.W("10.0.1.2"), 1);
  EXPECT_EQ(f.W("10.0.3.2"), 1);
  EXPECT_EQ(f.admin->batches.size(), before + 1);
}

TEST(IpvsBalancerTest, SetWeightsFailureRestoresEverythingAndReports) {
  Fixture f;
  ASSERT_TRUE(f.balancer->Program({Web()}).ok());
  // ipvsadm -R applies one line of three, then fails.
  int calls = 0;
  f.admin->fail_set = [&](const std::vector<IpvsWeightChange>&) -> Status {
    if (++calls > 1) return OkStatus();  // the restore itself works
    return MakeError(ErrorCode::kApi, "ipvsadm -R exited with status 1: No such destination");
  };
  f.admin->apply_next_only = 1;
  auto s = f.balancer->Program({Web({10, 30, 60})});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kApi);
  EXPECT_EQ(s.error().message,
            "setting IPVS weights: ipvsadm -R exited with status 1: No such destination (IPVS "
            "weights powerctl set are back to 1: kube-proxy carries the traffic)");
  EXPECT_EQ(f.W("10.0.1.2"), 1);
  EXPECT_EQ(f.W("10.0.2.2"), 1);
  EXPECT_EQ(f.W("10.0.3.2"), 1);
  EXPECT_TRUE(f.balancer->Skipped().empty());
  // Nothing is left to undo.
  const std::size_t before = f.admin->batches.size();
  ASSERT_TRUE(f.balancer->Remove().ok());
  EXPECT_EQ(f.admin->batches.size(), before);
}

TEST(IpvsBalancerTest, QuietPartialFailureIsCaughtByReadingBack) {
  Fixture f;
  // ipvsadm -R exits 0 with nothing on stderr, yet only the first line took effect.
  f.admin->apply_next_only = 1;
  auto s = f.balancer->Program({Web()});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message,
            "setting IPVS weights: real server 10.0.2.2:8080 of 10.96.0.10:80/TCP has weight 1 "
            "afterwards, not 30 (IPVS weights powerctl set are back to 1: kube-proxy carries "
            "the traffic)");
  EXPECT_EQ(f.W("10.0.1.2"), 1);
  // kube-proxy removing a server while we write is not a failure.
  f.admin->fail_set = [&](const std::vector<IpvsWeightChange>&) -> Status {
    auto& servers = f.admin->table[0].real_servers;
    servers.erase(servers.begin());
    return OkStatus();
  };
  ASSERT_TRUE(f.balancer->Program({Web()}).ok());
  EXPECT_EQ(f.W("10.0.1.2"), -1);
  EXPECT_EQ(f.W("10.0.2.2"), 30);
}

TEST(IpvsBalancerTest, ListFailureIsReported) {
  Fixture f;
  ASSERT_TRUE(f.balancer->Program({Web()}).ok());
  int lists = 0;
  f.admin->fail_list = [&]() -> Status {
    if (++lists > 1) return OkStatus();
    return MakeError(ErrorCode::kNotFound, "cannot run ipvsadm: No such file or directory");
  };
  auto s = f.balancer->Program({Web({10, 30, 60})});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kNotFound);
  EXPECT_EQ(s.error().message,
            "cannot run ipvsadm: No such file or directory (IPVS weights powerctl set are back "
            "to 1: kube-proxy carries the traffic)");
  EXPECT_EQ(f.W("10.0.1.2"), 1);
}

TEST(IpvsBalancerTest, RestoreFailureIsReportedTooAndRetriedByRemove) {
  Fixture f;
  ASSERT_TRUE(f.balancer->Program({Web()}).ok());
  f.admin->fail_set = [](const std::vector<IpvsWeightChange>&) -> Status {
    return MakeError(ErrorCode::kForbidden, "ipvsadm -R reported an error: Permission denied");
  };
  auto s = f.balancer->Program({Web({10, 30, 60})});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message,
            "setting IPVS weights: ipvsadm -R reported an error: Permission denied; restoring "
            "IPVS weights to 1 failed too: setting IPVS weights: ipvsadm -R reported an error: "
            "Permission denied");
  EXPECT_EQ(f.W("10.0.1.2"), 60);  // still ours: Remove must try again
  EXPECT_FALSE(f.balancer->Remove().ok());
  f.admin->fail_set = nullptr;
  ASSERT_TRUE(f.balancer->Remove().ok());
  EXPECT_EQ(f.W("10.0.1.2"), 1);
  EXPECT_EQ(f.W("10.0.3.2"), 1);
}

TEST(IpvsBalancerTest, InvalidInputChangesNothingNewAndUndoes) {
  Fixture f;
  ASSERT_TRUE(f.balancer->Program({Web()}).ok());
  BalancedService bad = Web();
  bad.endpoints[1].weight = 0;
  auto s = f.balancer->Program({bad});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kInvalidInput);
  EXPECT_NE(s.error().message.find("weight 0 is not in 1..100"), std::string::npos)
      << s.error().message;
  EXPECT_EQ(f.W("10.0.1.2"), 1);
  // Two Services claiming one virtual server.
  BalancedService twin = Web();
  twin.name = "twin";
  s = f.balancer->Program({Web(), twin});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("another Service has 10.96.0.10:80/TCP"), std::string::npos)
      << s.error().message;
}

TEST(IpvsBalancerTest, RemoveRestoresAndIsIdempotent) {
  Fixture f;
  ASSERT_TRUE(f.balancer->Remove().ok());  // nothing done yet: no I/O at all
  EXPECT_EQ(f.admin->lists, 0);
  ASSERT_TRUE(f.balancer->Program({Web()}).ok());
  // kube-proxy starts draining one server meanwhile; it stays at 0.
  f.admin->table[0].real_servers[2].weight = 0;
  ASSERT_TRUE(f.balancer->Remove().ok());
  EXPECT_EQ(f.W("10.0.1.2"), 1);
  EXPECT_EQ(f.W("10.0.2.2"), 1);
  EXPECT_EQ(f.W("10.0.3.2"), 0);
  const std::size_t batches = f.admin->batches.size();
  ASSERT_TRUE(f.balancer->Remove().ok());
  EXPECT_EQ(f.admin->batches.size(), batches);
}

}  // namespace
}  // namespace powerctl::lb
