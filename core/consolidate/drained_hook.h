#pragma once
// The --on-drained hook: a shell command run once per drained node, so that whatever switches
// nodes off (an IPMI or Redfish call, a cloud API) can act. It runs as
//   /bin/sh -c CMD powerctl-on-drained NODE [ADDRESS...]
// ($1 is the node's name, $2... its addresses, InternalIP first) with the environment
// POWERCTL_NODE, POWERCTL_NODE_INTERNAL_IP (the first InternalIP, or ""),
// POWERCTL_NODE_ADDRESSES (every address, space-separated) and
// POWERCTL_EXPECTED_WATTS_SAVED added to the caller's. Bounded in time and output.

#include "core/common/result.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace powerctl::consolidate {

inline constexpr std::chrono::seconds kMaxHookTimeout{3600};

struct HookRequest {
  std::string command;  // the shell text
  std::chrono::milliseconds timeout{60'000};
  std::map<std::string, std::string> environment;  // the hook's, before POWERCTL_* are added
};

struct HookOutcome {
  bool ran = false;
  bool ok = false;
  std::string detail;  // "exit status 3: <stderr's last line>", "killed after 1m", ...
};

// The node's addresses (status.addresses), InternalIP first, each once.
std::vector<std::string> NodeAddresses(const nlohmann::json& node);

HookOutcome RunDrainedHook(const HookRequest& request, const nlohmann::json& node,
                           double expected_watts_saved);

}  // namespace powerctl::consolidate
