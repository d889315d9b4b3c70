#include "core/lb/nft_ruleset.h"

#include "core/common/names.h"

#include <fmt/format.h>

#include <arpa/inet.h>

#include <set>
#include <string_view>
#include <tuple>

namespace powerctl::lb {
namespace {

// nft refuses longer comments.
constexpr std::size_t kMaxCommentBytes = 128;

bool ValidPort(int port) {
  return port >= 1 && port <= 65535;
}

Error Invalid(const BalancedService& s, const std::string& what) {
  return MakeError(ErrorCode::kInvalidInput,
                   fmt::format("load-balanced Service {}: {}", PortLabel(s), what));
}

// The nft payload keyword for the transport header's destination port.
std::string_view PortMatch(const std::string& protocol) {
  return protocol == "UDP" ? "udp dport" : "tcp dport";
}

// numgen value ranges, one per endpoint, contiguous from 0: weights 60/30/10 become
// 0-59, 60-89, 90-99 under `mod 100`.
std::string RenderRule(const BalancedService& s) {
  int total = 0;
  for (const auto& e : s.endpoints) total += e.weight;
  std::string map;
  int next = 0;
  for (const auto& e : s.endpoints) {
    if (!map.empty()) map += ", ";
    const int last = next + e.weight - 1;
    // A single value, not "5-5": nft rejects empty-width intervals in some versions.
    map += last == next ? fmt::format("{}", next) : fmt::format("{}-{}", next, last);
    map += fmt::format(" : {} . {}", CanonicalIpv4(e.ip), e.port);
    next = last + 1;
  }
  // Hairpin traffic (an endpoint calling its own Service) is left to kube-proxy, which
  // masquerades it when the endpoint picks itself; we do not, so connections from the endpoints
  // do not match here.
  std::set<std::string> sources;
  for (const auto& e : s.endpoints) sources.insert(CanonicalIpv4(e.ip));
  std::string excluded;
  for (const auto& ip : sources) excluded += (excluded.empty() ? "" : ", ") + ip;
  // Names are checked to be DNS labels, so the comment cannot contain a quote.
  std::string comment = PortLabel(s).substr(0, kMaxCommentBytes);
  return fmt::format(
      "\t\tip saddr != {{ {} }} ip daddr {} {} {} dnat ip to numgen random mod {} map {{ {} }} "
      "comment \"{}\"\n",
      excluded, CanonicalIpv4(s.cluster_ip), PortMatch(s.protocol), s.port, total, map, comment);
}

std::string TableHeader() {
  // "add" then "delete" makes the delete succeed whether or not the table exists; the
  // definition that follows is part of the same transaction, so the kernel switches from the
  // old table to the new one at once (no moment without rules, none with both).
  return fmt::format("add table ip {0}\ndelete table ip {0}\n", kNftTableName);
}

}  // namespace

std::string PortLabel(const BalancedService& s) {
  return fmt::format("{}/{}:{}/{}", s.namespace_name, s.name, s.port, s.protocol);
}

// Only a canonical address gets into the ruleset, so an address can never carry nft syntax.
std::string CanonicalIpv4(const std::string& text) {
  in_addr addr{};
  if (inet_pton(AF_INET, text.c_str(), &addr) != 1) return "";
  char buf[INET_ADDRSTRLEN] = {};
  if (inet_ntop(AF_INET, &addr, buf, sizeof buf) == nullptr) return "";
  return buf;
}

Status ValidateService(const BalancedService& s) {
  if (auto why = ValidateDnsLabel(s.namespace_name); !why.empty()) {
    return Invalid(s, "namespace: " + why);
  }
  if (auto why = ValidateDnsLabel(s.name); !why.empty()) return Invalid(s, "name: " + why);
  if (CanonicalIpv4(s.cluster_ip).empty()) {
    return Invalid(s, fmt::format("cluster IP \"{}\" is not an IPv4 address", s.cluster_ip));
  }
  if (!ValidPort(s.port)) return Invalid(s, fmt::format("port {} is not in 1..65535", s.port));
  if (s.protocol != "TCP" && s.protocol != "UDP") {
    return Invalid(s, fmt::format("protocol \"{}\" is not TCP or UDP", s.protocol));
  }
  std::set<std::pair<std::string, int>> seen;
  for (std::size_t i = 0; i < s.endpoints.size(); ++i) {
    const auto& e = s.endpoints[i];
    const std::string ip = CanonicalIpv4(e.ip);
    if (ip.empty()) {
      return Invalid(s, fmt::format("endpoint {}: \"{}\" is not an IPv4 address", i, e.ip));
    }
    if (!ValidPort(e.port)) {
      return Invalid(s, fmt::format("endpoint {}: port {} is not in 1..65535", i, e.port));
    }
    if (e.weight < 1 || e.weight > kMaxEndpointWeight) {
      return Invalid(s, fmt::format("endpoint {}: weight {} is not in 1..{}", i, e.weight,
                                    kMaxEndpointWeight));
    }
    if (!seen.emplace(ip, e.port).second) {
      return Invalid(s, fmt::format("endpoint {}: {}:{} is listed twice", i, ip, e.port));
    }
  }
  return OkStatus();
}

Result<std::string> RenderNftRuleset(const std::vector<BalancedService>& services) {
  std::set<std::tuple<std::string, int, std::string>> claimed;
  std::string rules;
  for (const auto& s : services) {
    POWERCTL_CHECK_OK(ValidateService(s));
    if (!claimed.emplace(CanonicalIpv4(s.cluster_ip), s.port, s.protocol).second) {
      return Invalid(s, "another Service in the list has the same address, port and protocol");
    }
    if (!s.endpoints.empty()) rules += RenderRule(s);
  }
  std::string out = TableHeader();
  out += fmt::format("table ip {} {{\n", kNftTableName);
  out += "\tchain services {\n" + rules + "\t}\n";
  // Two base chains because a chain has one hook; both jump to the same rules.
  for (const char* hook : {"prerouting", "output"}) {
    out += fmt::format(
        "\tchain {0} {{\n\t\ttype nat hook {0} priority {1}; policy accept;\n"
        "\t\tjump services\n\t}}\n",
        hook, kNftChainPriority);
  }
  out += "}\n";
  return out;
}

std::string RenderNftRemoval() {
  return TableHeader();
}

}  // namespace powerctl::lb
