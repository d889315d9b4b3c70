#pragma once
// IPVS tables as `ipvsadm -S -n` prints them, and the `ipvsadm -R` lines that change real-server
// weights (pure: no I/O). The lb-agent's ipvs mode reads kube-proxy's virtual servers this way
// and edits only weights, so the save format is the whole contract with the tool. The text comes
// from another program reading kernel state that other programs write, so it is parsed as
// untrusted input: bounded, every line checked, errors naming the line.
//
// Save format (ipvsadm.c print_service_entry with FMT_RULE, ipvsadm 1.31):
//   -A -t 10.96.0.10:80 -s wrr [-p 10800 [-M 255.255.255.0] [--pe sip]] [-o] [-b flag-1]
//   -a -t 10.96.0.10:80 -r 10.244.1.5:8080 -m -w 1
//   -a -t 10.96.0.10:80 -r 10.244.1.6:8080 -i -w 1 --tun-type gue --tun-port 6080 --tun-nocsum
// with -u for UDP, --sctp-service for SCTP, -f MARK [-6] for firewall-mark services, and IPv6
// addresses in brackets ([fd00::10]:80).

#include "core/common/result.h"

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace powerctl::lb {

enum class IpvsProtocol { kTcp, kUdp, kSctp, kFwmark };

// Which virtual server: protocol + address + port, or a firewall mark (+ address family).
struct IpvsServiceKey {
  IpvsProtocol protocol = IpvsProtocol::kTcp;
  std::string address;  // canonical (inet_ntop) text, no brackets; empty for kFwmark
  int port = 0;         // 0 for kFwmark
  unsigned fwmark = 0;  // kFwmark only
  bool ipv6 = false;
  friend bool operator==(const IpvsServiceKey&, const IpvsServiceKey&) = default;
  friend auto operator<=>(const IpvsServiceKey&, const IpvsServiceKey&) = default;
};

struct IpvsRealServer {
  std::string address;  // canonical, no brackets
  int port = 0;
  // How packets reach it: 'm' masquerading (kube-proxy's), 'g' gatewaying, 'i' ipip/tunnel.
  // An edit must repeat it: ipvsadm -e without one switches the server to gatewaying.
  char forward = 'm';
  int weight = 0;
  // Tunnel and threshold options after the weight (--tun-type gue, --tun-port 6080, -x 100),
  // repeated verbatim in an edit for the same reason as `forward`.
  std::vector<std::string> options;
};

struct IpvsVirtualServer {
  IpvsServiceKey key;
  std::string scheduler;  // "rr", "wrr", ...
  std::vector<IpvsRealServer> real_servers;
};

// One real server's new weight. `real_server` carries its forwarding method and options as
// listed; its `weight` is the new one.
struct IpvsWeightChange {
  IpvsServiceKey service;
  IpvsRealServer real_server;
};

struct IpvsParseLimits {
  std::size_t max_bytes = 64u << 20;  // a 10,000-Service cluster saves to a few MiB
  std::size_t max_line_bytes = 1024;  // the longest legal line is ~200 bytes
  std::size_t max_virtual_servers = 200000;
  std::size_t max_real_servers = 2000000;
};

// Parses `ipvsadm -S -n` output. Blank lines are skipped. Errors (ErrorCode::kApi) start
// with "line N: " and name what is wrong: an unknown command or option, a malformed address,
// port or weight, a real server before its virtual server, a duplicate, a limit exceeded.
Result<std::vector<IpvsVirtualServer>> ParseIpvsSave(std::string_view text,
                                                     const IpvsParseLimits& limits = {});

// "-t 10.96.0.10:80", "-u [fd00::10]:53", "--sctp-service 10.96.0.9:9", "-f 7", "-f 7 -6".
std::string IpvsServiceSpec(const IpvsServiceKey& key);

// "10.0.0.1:80" or "[fd00::1]:80".
std::string IpvsHostPort(const std::string& address, int port);

// "10.96.0.10:80/TCP" (for messages).
std::string IpvsServiceLabel(const IpvsServiceKey& key);

// The `ipvsadm -R` input that sets each weight, one `-e` line per change, in the order given:
//   -e -t 10.96.0.10:80 -r 10.244.1.5:8080 -m -w 60
std::string RenderIpvsWeightEdits(const std::vector<IpvsWeightChange>& changes);

// The canonical text of an IPv4 or IPv6 address (inet_pton then inet_ntop), "" if it is
// neither. Endpoint addresses go through this before they are compared with ipvsadm's.
std::string CanonicalIpAddress(std::string_view text);

}  // namespace powerctl::lb
