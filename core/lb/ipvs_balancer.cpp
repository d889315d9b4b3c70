// What kube-proxy does to the weights we set (kubernetes/kubernetes pkg/proxy/ipvs):
//  * its periodic and event-driven syncs (syncEndpoint) add missing real servers at weight 1
//    and remove stale ones, but leave the weight of an existing real server alone;
//  * on its first sync after it starts (proxier.initialSync, added by PR #111635 for issue
//    #108319, "weight stays 0 after restart") it sets every existing real server's weight back
//    to 1 (issue #131134 notes the loop resets any server whose VS has a weight other than 1);
//  * a removed endpoint's real server is set to weight 0 and deleted once its connections end
//    (graceful_termination.go); one that becomes ready again is re-added at weight 1.
// So our weights survive kube-proxy's resyncs but not its restarts. Every Program() reads the
// kernel's table and writes whatever differs from the wanted weight, so the agent's next sync
// re-applies them after a restart; a weight that differs from what we set last time is
// expected, never an error. A weight of 0 is kube-proxy draining a server: never raised.

#include "core/lb/ipvs_balancer.h"

#include <fmt/format.h>

#include <map>
#include <set>
#include <utility>

namespace powerctl::lb {
namespace {

struct RealServerKey {
  IpvsServiceKey service;
  std::string address;
  int port = 0;
  friend auto operator<=>(const RealServerKey&, const RealServerKey&) = default;
};

constexpr int kKubeProxyWeight = 1;  // the weight kube-proxy gives every real server

using Table = std::vector<IpvsVirtualServer>;

IpvsServiceKey KeyOf(const BalancedService& s) {
  IpvsServiceKey key;
  key.protocol = s.protocol == "UDP" ? IpvsProtocol::kUdp : IpvsProtocol::kTcp;
  key.address = CanonicalIpAddress(s.cluster_ip);
  key.port = s.port;
  return key;
}

const IpvsRealServer* Find(const std::map<IpvsServiceKey, const IpvsVirtualServer*>& index,
                           const RealServerKey& key) {
  const auto vs = index.find(key.service);
  if (vs == index.end()) return nullptr;
  for (const IpvsRealServer& rs : vs->second->real_servers) {
    if (rs.address == key.address && rs.port == key.port) return &rs;
  }
  return nullptr;
}

std::map<IpvsServiceKey, const IpvsVirtualServer*> Index(const Table& table) {
  std::map<IpvsServiceKey, const IpvsVirtualServer*> index;
  for (const IpvsVirtualServer& vs : table) index.emplace(vs.key, &vs);
  return index;
}

class IpvsBalancer final : public Balancer {
 public:
  explicit IpvsBalancer(std::unique_ptr<IpvsAdmin> admin) : admin_(std::move(admin)) {}
  const char* Mode() const override { return "ipvs"; }
  std::vector<SkippedPort> Skipped() const override { return skipped_; }
  Status Remove() override { return Restore(); }
  bool MayDrift() const override { return true; }  // kube-proxy's restart resets weights

  Status Program(const std::vector<BalancedService>& services) override {
    skipped_.clear();
    std::set<IpvsServiceKey> claimed;
    for (const BalancedService& s : services) {
      if (auto valid = ValidateService(s); !valid.ok()) return Undo(valid.error());
      if (!claimed.insert(KeyOf(s)).second) {
        return Undo(MakeError(ErrorCode::kInvalidInput,
                              fmt::format("load-balanced Service {}: another Service has {}",
                                          PortLabel(s), IpvsServiceLabel(KeyOf(s)))));
      }
    }
    auto table = admin_->List();
    if (!table.ok()) return Undo(table.error());
    const auto index = Index(*table);

    std::map<RealServerKey, int> wanted;
    std::vector<IpvsWeightChange> changes;
    for (const BalancedService& s : services) {
      const auto vs = index.find(KeyOf(s));
      if (vs == index.end()) {
        skipped_.push_back(
            {PortLabel(s), fmt::format("no IPVS virtual server for {}: is kube-proxy "
                                       "in IPVS mode?",
                                       IpvsServiceLabel(KeyOf(s)))});
        continue;
      }
      if (vs->second->scheduler != "wrr") {
        skipped_.push_back(
            {PortLabel(s), fmt::format("scheduler is {}, not wrr: weights would be ignored; set "
                                       "kube-proxy's ipvs.scheduler to wrr",
                                       vs->second->scheduler)});
        continue;
      }
      for (const auto& e : s.endpoints) {
        const RealServerKey key{vs->first, CanonicalIpAddress(e.ip), e.port};
        const IpvsRealServer* rs = Find(index, key);
        if (rs == nullptr || rs->weight == 0) continue;  // not there yet, or being drained
        wanted[key] = e.weight;
        if (rs->weight != e.weight) changes.push_back(Change(key, *rs, e.weight));
      }
    }
    for (const RealServerKey& key : ours_) {
      if (wanted.count(key) != 0) continue;
      const IpvsRealServer* rs = Find(index, key);
      if (rs != nullptr && rs->weight != 0 && rs->weight != kKubeProxyWeight) {
        changes.push_back(Change(key, *rs, kKubeProxyWeight));
      }
    }
    // Until the write is confirmed, everything we may have touched is ours to undo.
    for (const auto& [key, weight] : wanted) ours_.insert(key);
    if (auto applied = Apply(changes); !applied.ok()) return Undo(applied.error());
    ours_.clear();
    for (const auto& [key, weight] : wanted) {
      if (weight != kKubeProxyWeight) ours_.insert(key);
    }
    return OkStatus();
  }

 private:
  static IpvsWeightChange Change(const RealServerKey& key, const IpvsRealServer& rs, int weight) {
    IpvsWeightChange change{key.service, rs};
    change.real_server.weight = weight;
    return change;
  }

  // Writes the changes, then lists again: ipvsadm -R is not atomic and a line can fail
  // quietly, so the kernel's table is the only proof. A server that is gone or at 0 meanwhile
  // is kube-proxy's doing, not a failure.
  Status Apply(const std::vector<IpvsWeightChange>& changes) {
    if (changes.empty()) return OkStatus();
    if (auto set = admin_->SetWeights(changes); !set.ok()) {
      return WithContext(set.error(), "setting IPVS weights");
    }
    auto table = admin_->List();
    if (!table.ok()) return WithContext(table.error(), "checking IPVS weights");
    const auto index = Index(*table);
    for (const IpvsWeightChange& c : changes) {
      const RealServerKey key{c.service, c.real_server.address, c.real_server.port};
      const IpvsRealServer* rs = Find(index, key);
      if (rs != nullptr && rs->weight != 0 && rs->weight != c.real_server.weight) {
        return MakeError(ErrorCode::kApi,
                         fmt::format("setting IPVS weights: real server {}:{} of {} has weight "
                                     "{} afterwards, not {}",
                                     key.address, key.port, IpvsServiceLabel(key.service),
                                     rs->weight, c.real_server.weight));
      }
    }
    return OkStatus();
  }

  // Every weight we changed back to kube-proxy's 1. Kept for the next try if this fails.
  Status Restore() {
    if (ours_.empty()) return OkStatus();
    auto table = admin_->List();
    if (!table.ok()) return table.error();
    const auto index = Index(*table);
    std::vector<IpvsWeightChange> changes;
    for (const RealServerKey& key : ours_) {
      const IpvsRealServer* rs = Find(index, key);
      if (rs != nullptr && rs->weight != 0 && rs->weight != kKubeProxyWeight) {
        changes.push_back(Change(key, *rs, kKubeProxyWeight));
      }
    }
    POWERCTL_CHECK_OK(Apply(changes));
    ours_.clear();
    return OkStatus();
  }

  Error Undo(Error error) {
    skipped_.clear();
    if (auto restored = Restore(); !restored.ok()) {
      error.message += "; restoring IPVS weights to 1 failed too: " + restored.error().message;
    } else {
      error.message += " (IPVS weights powerctl set are back to 1: kube-proxy carries the traffic)";
    }
    return error;
  }

  std::unique_ptr<IpvsAdmin> admin_;
  std::set<RealServerKey> ours_;  // real servers whose weight we set, not yet restored
  std::vector<SkippedPort> skipped_;
};

}  // namespace

std::unique_ptr<Balancer> MakeIpvsBalancer(std::unique_ptr<IpvsAdmin> admin) {
  return std::make_unique<IpvsBalancer>(std::move(admin));
}

}  // namespace powerctl::lb
