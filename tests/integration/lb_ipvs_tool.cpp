// Drives core/lb's ipvs Balancer for tests/integration/test_lb_ipvs.py, in place of the
// lb-agent's watch loop (built only with the tests; not part of the powerctl binary).
//
//   lb_ipvs_tool program SERVICES.json   Program() with the Services in the file, then print
//                                        the skipped ports ("skipped SERVICE: REASON")
//   lb_ipvs_tool remove SERVICES.json    Program() then Remove(): a fresh process has nothing
//                                        to undo, so it first takes over the weights the file
//                                        describes, as the agent would have set them
//
// SERVICES.json: the format of lb_nft_tool ([{"namespace", "name", "cluster_ip", "port",
// "protocol", "endpoints": [{"ip", "port", "weight"}]}]). ipvsadm is taken from PATH.
// Exit 0 on success; otherwise "error: MESSAGE" on stderr and exit 1 (2 for usage).
#include "core/lb/ipvs_admin.h"
#include "core/lb/ipvs_balancer.h"
#include "tests/integration/lb_tool_services.h"

#include <iostream>
#include <string>
#include <vector>

namespace lb = powerctl::lb;

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() != 2 || (args[0] != "program" && args[0] != "remove")) {
    std::cerr << "usage: lb_ipvs_tool program FILE | remove FILE\n";
    return 2;
  }
  if (!lb::KernelHasIpvs()) return lb_tool::Fail("kernel has no IPVS (/proc/net/ip_vs missing)");
  try {
    auto balancer = lb::MakeIpvsBalancer(lb::MakeIpvsadmAdmin());
    auto s = balancer->Program(lb_tool::LoadServices(args[1]));
    if (!s.ok()) return lb_tool::Fail(s.error().message);
    for (const auto& skipped : balancer->Skipped()) {
      std::cout << "skipped " << skipped.service << ": " << skipped.reason << "\n";
    }
    if (args[0] == "remove") {
      s = balancer->Remove();
      if (!s.ok()) return lb_tool::Fail(s.error().message);
    }
  } catch (const std::exception& e) {
    return lb_tool::Fail(e.what());
  }
  return 0;
}
