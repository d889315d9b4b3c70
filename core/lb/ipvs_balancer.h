#pragma once
// The lb-agent's ipvs mode: instead of rules of its own, it sets the weights of the real servers
// kube-proxy's IPVS mode made (the WAO v1 approach), for virtual servers whose scheduler is wrr.
// It never adds or removes virtual or real servers; kube-proxy keeps owning them.

#include "core/lb/balancer.h"
#include "core/lb/ipvs_admin.h"

#include <memory>

namespace powerctl::lb {

// Program(services), for each Service port (cluster IP, port, TCP/UDP):
//  * kube-proxy's virtual server for it is absent, or its scheduler is not wrr: the port is
//    left alone and listed in Skipped() with the reason;
//  * otherwise each real server matching an endpoint (by ip:port) gets the endpoint's weight.
//    Real servers without an endpoint keep their weight; endpoints without a real server yet
//    are ignored (kube-proxy adds them at weight 1 at its next sync, the next call sets them);
//    real servers at weight 0 are being drained by kube-proxy and are left at 0.
// Weights it set earlier for ports no longer wanted go back to 1 (kube-proxy's own weight).
// Reads the table first and writes only weights that differ, then reads it again to confirm.
// Any failure: every weight it changed goes back to 1, and the error is returned (with the
// restore's error as well if that failed too). Remove() sets every weight it changed back to 1.
std::unique_ptr<Balancer> MakeIpvsBalancer(std::unique_ptr<IpvsAdmin> admin);

}  // namespace powerctl::lb
