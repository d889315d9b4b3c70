#pragma once
// The IPVS boundary: read the kernel's virtual servers, change real-server weights. Debian's
// ipvsadm tool in production (the kernel's generic-netlink IPVS interface has no stable C
// library; ipvsadm is what kube-proxy's own documentation debugs with, and its save/restore
// text is a documented, long-stable format); a fake in unit tests (tests/unit/fake_ipvs_admin.h).

#include "core/common/result.h"
#include "core/lb/ipvs_rules.h"

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace powerctl::lb {

class IpvsAdmin {
 public:
  virtual ~IpvsAdmin() = default;
  // Every virtual server with its real servers, as the kernel has them now.
  virtual Result<std::vector<IpvsVirtualServer>> List() = 0;
  // Sets each real server's weight (keeping its forwarding method and options). Not atomic:
  // on failure some changes may have been made; the caller lists again to find out.
  virtual Status SetWeights(const std::vector<IpvsWeightChange>& changes) = 0;
};

struct IpvsadmOptions {
  std::string program = "ipvsadm";           // looked up in PATH unless it contains '/'
  std::chrono::milliseconds timeout{10000};  // per run; the process group is killed after it
  std::size_t max_output_bytes = 64u << 20;  // stdout of `ipvsadm -S -n`
};

// List runs `ipvsadm -S -n`; SetWeights runs `ipvsadm -R` with the `-e` lines on stdin, once per
// call. Neither goes through a shell. An error (ErrorCode::kApi; kNotFound when the program
// is missing; kForbidden for "Permission denied"/"Operation not permitted") quotes the end of
// ipvsadm's stderr. ipvsadm -R keeps going after a failed line and its exit status follows the
// last line only, so anything on stderr counts as a failure too. Thread-safe.
std::unique_ptr<IpvsAdmin> MakeIpvsadmAdmin(IpvsadmOptions options = {});

// Whether this network namespace's kernel has IPVS: /proc/net/ip_vs exists once the ip_vs
// module is loaded (kube-proxy's IPVS mode loads it). `proc_file` is for tests.
bool KernelHasIpvs(const std::string& proc_file = "/proc/net/ip_vs");

}  // namespace powerctl::lb
