#include "core/lb/ipvs_rules.h"

#include <fmt/format.h>

#include <arpa/inet.h>

namespace powerctl::lb {

std::string CanonicalIpAddress(std::string_view text) {
  if (text.empty() || text.size() >= INET6_ADDRSTRLEN) return "";
  const std::string s(text);
  char buf[INET6_ADDRSTRLEN] = {};
  in_addr v4{};
  if (inet_pton(AF_INET, s.c_str(), &v4) == 1) {
    return inet_ntop(AF_INET, &v4, buf, sizeof buf) != nullptr ? buf : "";
  }
  in6_addr v6{};
  if (inet_pton(AF_INET6, s.c_str(), &v6) == 1) {
    return inet_ntop(AF_INET6, &v6, buf, sizeof buf) != nullptr ? buf : "";
  }
  return "";
}

std::string IpvsHostPort(const std::string& address, int port) {
  return address.find(':') != std::string::npos ? fmt::format("[{}]:{}", address, port)
                                                : fmt::format("{}:{}", address, port);
}

std::string IpvsServiceSpec(const IpvsServiceKey& key) {
  switch (key.protocol) {
    case IpvsProtocol::kFwmark:
      return fmt::format("-f {}{}", key.fwmark, key.ipv6 ? " -6" : "");
    case IpvsProtocol::kUdp:
      return "-u " + IpvsHostPort(key.address, key.port);
    case IpvsProtocol::kSctp:
      return "--sctp-service " + IpvsHostPort(key.address, key.port);
    case IpvsProtocol::kTcp:
      break;
  }
  return "-t " + IpvsHostPort(key.address, key.port);
}

std::string IpvsServiceLabel(const IpvsServiceKey& key) {
  switch (key.protocol) {
    case IpvsProtocol::kFwmark:
      return fmt::format("fwmark {}{}", key.fwmark, key.ipv6 ? " (IPv6)" : "");
    case IpvsProtocol::kUdp:
      return IpvsHostPort(key.address, key.port) + "/UDP";
    case IpvsProtocol::kSctp:
      return IpvsHostPort(key.address, key.port) + "/SCTP";
    case IpvsProtocol::kTcp:
      break;
  }
  return IpvsHostPort(key.address, key.port) + "/TCP";
}

std::string RenderIpvsWeightEdits(const std::vector<IpvsWeightChange>& changes) {
  std::string out;
  for (const IpvsWeightChange& c : changes) {
    const IpvsRealServer& rs = c.real_server;
    out += fmt::format("-e {} -r {} -{} -w {}", IpvsServiceSpec(c.service),
                       IpvsHostPort(rs.address, rs.port), rs.forward, rs.weight);
    for (const std::string& option : rs.options) out += " " + option;
    out += "\n";
  }
  return out;
}

}  // namespace powerctl::lb
