#pragma once
// The hooks for an admin's power tooling, shell commands run once per node: --on-drained after
// apply drained a node (switch it off: an IPMI or Redfish call, a cloud API), --on-wake when
// Pending pods need a drained node back (switch it on). A hook runs as
//   /bin/sh -c CMD powerctl-on-EVENT NODE [ADDRESS...]
// ($1 is the node's name, $2... its addresses, InternalIP first) with the environment
// POWERCTL_EVENT (drained or wake), POWERCTL_NODE, POWERCTL_NODE_INTERNAL_IP (the first
// InternalIP, or ""), POWERCTL_NODE_ADDRESSES (every address, space-separated),
// POWERCTL_NODE_ADDRESSES_DROPPED (how many were not valid) and POWERCTL_EXPECTED_WATTS_SAVED
// added to the caller's. Only valid addresses reach it (ValidNodeAddresses). Bounded in time
// and output.

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
  int addresses_dropped = 0;  // the node's addresses left out as not valid
  bool attempted() const { return ran || !detail.empty(); }
  bool failed() const { return attempted() && !ok; }
};

// kInvalidInput naming `flag` for a command longer than kMaxHookCommandBytes, or (when there
// is a command) a timeout outside 1s..kMaxHookTimeout named by `timeout_flag`.
Status ValidateHook(const HookRequest& request, const std::string& flag,
                    const std::string& timeout_flag);

// A node's addresses as a hook and the wake table may use them. The API server takes any text
// in status.addresses (whoever may patch a node's status writes it), and a hook hands them to
// tools such as curl, ssh and ipmitool: `attacker.example#`, `-oProxyCommand=...` or a newline
// must not get there. Kept: InternalIP and ExternalIP addresses that are IP literals, Hostname,
// InternalDNS and ExternalDNS ones that are RFC 1123 subdomains; InternalIP first, each once.
struct NodeAddressList {
  std::vector<std::string> addresses;
  std::string internal_ip;  // the first valid InternalIP, or ""
  int dropped = 0;          // addresses left out (another type, or not valid for theirs)
};
NodeAddressList ValidNodeAddresses(const nlohmann::json& node);

// ValidNodeAddresses(node).addresses.
std::vector<std::string> NodeAddresses(const nlohmann::json& node);

// An IPv4 or IPv6 literal, nothing around it (no port, zone or brackets).
bool IsIpLiteral(const std::string& text);

inline constexpr const char* kHookDrained = "drained";
inline constexpr const char* kHookWake = "wake";

// `event` is kHookDrained or kHookWake.
HookOutcome RunNodeHook(const HookRequest& request, const std::string& event,
                        const nlohmann::json& node, double expected_watts_saved);

}  // namespace powerctl::consolidate
