#pragma once
// The hooks for an admin's power tooling, shell commands run once per node: --on-drained after
// apply drained a node (switch it off: an IPMI or Redfish call, a cloud API), --on-wake when
// Pending pods need a drained node back (switch it on). A hook runs as
//   /bin/sh -c CMD powerctl-on-EVENT NODE [ADDRESS...]
// ($1 is the node's name, $2... its addresses, InternalIP first) with the environment
// POWERCTL_EVENT (drained or wake), POWERCTL_NODE, POWERCTL_NODE_INTERNAL_IP (the first
// InternalIP, or ""), POWERCTL_NODE_ADDRESSES (every address, space-separated) and
// POWERCTL_EXPECTED_WATTS_SAVED added to the caller's. Bounded in time and output.

#include "core/common/result.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace powerctl::consolidate {

inline constexpr std::chrono::seconds kMaxHookTimeout{3600};
inline constexpr std::size_t kMaxHookCommandBytes = 4096;

struct HookRequest {
  std::string command;  // the shell text
  std::chrono::milliseconds timeout{60'000};
  std::map<std::string, std::string> environment;  // the hook's, before POWERCTL_* are added
};

struct HookOutcome {
  bool ran = false;
  bool ok = false;
  std::string detail;  // "exit status 3: <stderr's last line>", "killed after 1m", ...
  // Run, or tried and could not start; false without a hook or in a dry run.
  bool attempted() const { return ran || !detail.empty(); }
  bool failed() const { return attempted() && !ok; }
};

// kInvalidInput naming `flag` for a command longer than kMaxHookCommandBytes, or (when there
// is a command) a timeout outside 1s..kMaxHookTimeout named by `timeout_flag`.
Status ValidateHook(const HookRequest& request, const std::string& flag,
                    const std::string& timeout_flag);

// The node's addresses (status.addresses), InternalIP first, each once.
std::vector<std::string> NodeAddresses(const nlohmann::json& node);

inline constexpr const char* kHookDrained = "drained";
inline constexpr const char* kHookWake = "wake";

// `event` is kHookDrained or kHookWake.
HookOutcome RunNodeHook(const HookRequest& request, const std::string& event,
                        const nlohmann::json& node, double expected_watts_saved);

}  // namespace powerctl::consolidate
