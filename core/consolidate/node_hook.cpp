#include "core/consolidate/node_hook.h"

#include "core/common/duration.h"
#include "core/common/json_fields.h"
#include "core/common/names.h"
#include "core/common/subprocess.h"

#include <fmt/format.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/wait.h>

#include <algorithm>

namespace powerctl::consolidate {
namespace {

using json = nlohmann::json;

// The last non-empty line of `text`, at most 200 bytes of it.
std::string LastLine(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  const std::size_t start = text.rfind('\n');
  std::string line = start == std::string::npos ? text : text.substr(start + 1);
  if (line.size() > 200) line = line.substr(0, 200) + "...";
  return line;
}

}  // namespace

Status ValidateHook(const HookRequest& request, const std::string& flag,
                    const std::string& timeout_flag) {
  if (request.command.size() > kMaxHookCommandBytes) {
    return MakeError(ErrorCode::kInvalidInput,
                     fmt::format("{}: the command is {} bytes, more than {}", flag,
                                 request.command.size(), kMaxHookCommandBytes));
  }
  if (!request.command.empty() &&
      (request.timeout < std::chrono::seconds(1) || request.timeout > kMaxHookTimeout)) {
    return MakeError(ErrorCode::kInvalidInput, timeout_flag + ": must be between 1s and 1h");
  }
  return OkStatus();
}

bool IsIpLiteral(const std::string& text) {
  if (text.empty() || text.size() > INET6_ADDRSTRLEN) return false;
  unsigned char buffer[sizeof(struct in6_addr)];
  return ::inet_pton(AF_INET, text.c_str(), buffer) == 1 ||
         ::inet_pton(AF_INET6, text.c_str(), buffer) == 1;
}

NodeAddressList ValidNodeAddresses(const json& node) {
  NodeAddressList out;
  std::vector<std::string> internal, others;
  const json* addresses = FindField(node, {"status", "addresses"});
  if (addresses == nullptr || !addresses->is_array()) return out;
  for (const json& a : *addresses) {
    const std::string address = StringField(a, {"address"});
    const std::string type = StringField(a, {"type"});
    const bool ip_type = type == "InternalIP" || type == "ExternalIP";
    const bool name_type = type == "Hostname" || type == "InternalDNS" || type == "ExternalDNS";
    const bool valid = (ip_type && IsIpLiteral(address)) ||
                       (name_type && !address.empty() && ValidateDnsSubdomain(address).empty());
    if (!valid) {
      ++out.dropped;
      continue;
    }
    (type == "InternalIP" ? internal : others).push_back(address);
  }
  if (!internal.empty()) out.internal_ip = internal.front();
  for (auto* list : {&internal, &others})
    for (const std::string& a : *list)
      if (std::find(out.addresses.begin(), out.addresses.end(), a) == out.addresses.end())
        out.addresses.push_back(a);
  return out;
}

std::vector<std::string> NodeAddresses(const json& node) {
  return ValidNodeAddresses(node).addresses;
}

HookOutcome RunNodeHook(const HookRequest& request, const std::string& event, const json& node,
                        double expected_watts_saved) {
  HookOutcome outcome;
  const std::string name = StringField(node, {"metadata", "name"});
  const NodeAddressList valid = ValidNodeAddresses(node);
  const std::vector<std::string>& addresses = valid.addresses;
  outcome.addresses_dropped = valid.dropped;
  std::map<std::string, std::string> env = request.environment;
  env["POWERCTL_EVENT"] = event;
  env["POWERCTL_NODE"] = name;
  env["POWERCTL_NODE_INTERNAL_IP"] = valid.internal_ip;
  std::string joined;
  for (const std::string& a : addresses) joined += (joined.empty() ? "" : " ") + a;
  env["POWERCTL_NODE_ADDRESSES"] = joined;
  env["POWERCTL_NODE_ADDRESSES_DROPPED"] = std::to_string(valid.dropped);
  env["POWERCTL_EXPECTED_WATTS_SAVED"] = fmt::format("{:.0f}", expected_watts_saved);

  SubprocessRequest run;
  run.program = "/bin/sh";
  run.argv = {"sh", "-c", request.command, "powerctl-on-" + event, name};
  run.argv.insert(run.argv.end(), addresses.begin(), addresses.end());
  run.env.emplace();
  for (const auto& [k, v] : env) run.env->push_back(k + "=" + v);
  run.timeout = request.timeout;
  run.max_stdout_bytes = 1 << 20;
  auto result = RunSubprocess(run);
  if (!result.ok()) {
    outcome.detail = result.error().message;
    return outcome;
  }
  outcome.ran = true;
  if (result->timed_out) {
    outcome.detail = "killed after " + FormatDuration(request.timeout);
  } else if (result->stdout_too_large) {
    outcome.detail = "killed: wrote more than 1 MiB to stdout";
  } else if (WIFEXITED(result->status) && WEXITSTATUS(result->status) == 0) {
    outcome.ok = true;
  } else if (WIFEXITED(result->status)) {
    outcome.detail = fmt::format("exit status {}", WEXITSTATUS(result->status));
  } else if (WIFSIGNALED(result->status)) {
    outcome.detail = fmt::format("killed by signal {}", WTERMSIG(result->status));
  } else {
    outcome.detail = "did not finish";
  }
  if (!outcome.ok) {
    if (std::string line = LastLine(result->err); !line.empty()) outcome.detail += ": " + line;
  }
  return outcome;
}

}  // namespace powerctl::consolidate
