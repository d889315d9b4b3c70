#pragma once
// The commands `consolidate` runs for an admin's power tooling: --on-drained after a node is
// drained (switch it off), --on-wake when Pending pods need it back (switch it on). A command
// line run by /bin/sh -c, so it can be a script or an ipmitool/Redfish call with variables:
//   $1, POWERCTL_NODE        the node's name
//   $2.., POWERCTL_ADDRESSES its addresses (status.addresses, InternalIP first), space-separated
//   POWERCTL_EVENT           "drained" or "wake"
// The rest of the environment is powerctl's. Bounded in time; its output is kept (the tail)
// for the report.

#include "core/common/result.h"

#include <chrono>
#include <string>
#include <vector>

namespace powerctl::consolidate {

inline constexpr std::size_t kMaxHookCommandBytes = 4096;
inline constexpr std::chrono::seconds kMaxHookTimeout{3600};

struct NodeHook {
  std::string command;  // empty: none
  std::chrono::seconds timeout{300};
};

// kInvalidInput naming the flag for a command longer than kMaxHookCommandBytes or a timeout
// outside 1 s..kMaxHookTimeout.
Status ValidateHook(const NodeHook& hook, const std::string& flag);

struct HookRun {
  bool ok = false;
  std::string summary;  // "exit status 3: <last line of stderr>", "timed out after 300s"
};

// Runs the hook for one node. kIo when /bin/sh cannot be started.
Result<HookRun> RunNodeHook(const NodeHook& hook, const std::string& event, const std::string& node,
                            const std::vector<std::string>& addresses);

}  // namespace powerctl::consolidate
