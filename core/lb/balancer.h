#pragma once
// How the lb-agent makes the kernel follow the weights: one implementation per mode.
// nftables (nft_balancer.cpp): a table of powerctl's own, ahead of kube-proxy's rules.
// ipvs (ipvs_balancer.cpp): the weights of the real servers kube-proxy's IPVS mode made.
// Every implementation keeps the same promise: whatever fails, traffic keeps flowing as
// kube-proxy alone would carry it, and the error says what failed.

#include "core/common/result.h"
#include "core/lb/nft_executor.h"
#include "core/lb/nft_ruleset.h"

#include <memory>
#include <string>
#include <vector>

namespace powerctl::lb {

// A Service port the balancer left to kube-proxy, and why ("no IPVS virtual server for
// 10.96.0.10:80/TCP", "scheduler is rr, not wrr").
struct SkippedPort {
  std::string service;  // "namespace/name:port/protocol"
  std::string reason;
};

class Balancer {
 public:
  virtual ~Balancer() = default;
  virtual const char* Mode() const = 0;  // "nftables", "ipvs"
  // Makes the kernel balance `services` by their weights, replacing what the previous call did
  // (an empty list undoes everything). On failure nothing of powerctl's stays in effect and
  // the error says what failed; the caller reports it and tries again at the next sync.
  virtual Status Program(const std::vector<BalancedService>& services) = 0;
  // Undoes everything this balancer did (the agent's exit). Succeeds when nothing is left.
  virtual Status Remove() = 0;
  // Ports of the last Program() call that the balancer could not take, with the reason.
  virtual std::vector<SkippedPort> Skipped() const { return {}; }
  // True when the kernel can drift from what Program() set without the agent doing anything
  // (kube-proxy sets IPVS weights back to 1 when it restarts): the agent then calls Program()
  // at every sync, even with unchanged weights, and Program() writes only what differs. False
  // for a table of the agent's own, which only the agent changes.
  virtual bool MayDrift() const { return false; }
};

std::unique_ptr<Balancer> MakeNftBalancer(std::unique_ptr<NftExecutor> nft);

}  // namespace powerctl::lb
