// ParseIpvsSave: `ipvsadm -S -n` output, line by line, as untrusted input (see ipvs_rules.h).
#include "core/lb/ipvs_rules.h"

#include <climits>
#include <fmt/format.h>

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <utility>

namespace powerctl::lb {
namespace {

// A token as it may appear in a message: printable ASCII only, at most 48 characters, so a
// hostile line cannot put terminal escapes or megabytes into a log.
std::string Quote(std::string_view token) {
  std::string out = "\"";
  for (std::size_t i = 0; i < token.size() && i < 48; ++i) {
    const char c = token[i];
    out += (c >= 0x20 && c < 0x7f) ? c : '?';
  }
  return out + (token.size() > 48 ? "...\"" : "\"");
}

std::optional<std::uint64_t> ParseUnsigned(std::string_view s, std::uint64_t max) {
  if (s.empty() || s.size() > 10) return std::nullopt;
  std::uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<std::uint64_t>(c - '0');
  }
  if (v > max) return std::nullopt;
  return v;
}

// Lower-case names and flag lists (schedulers, persistence engines, tunnel types).
bool Word(std::string_view s, std::size_t max_len, bool allow_punct) {
  if (s.empty() || s.size() > max_len) return false;
  for (char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
                    (allow_punct && (c == '-' || c == ','));
    if (!ok) return false;
  }
  return true;
}

struct HostPort {
  std::string address;
  int port = 0;
  bool ipv6 = false;
};

// "10.0.0.1:80" or "[fd00::1]:80".
std::optional<HostPort> ParseHostPort(std::string_view s) {
  HostPort hp;
  std::string_view host;
  std::string_view port;
  if (!s.empty() && s.front() == '[') {
    const std::size_t close = s.find(']');
    if (close == std::string_view::npos || close + 1 >= s.size() || s[close + 1] != ':') {
      return std::nullopt;
    }
    host = s.substr(1, close - 1);
    port = s.substr(close + 2);
    hp.ipv6 = true;
  } else {
    const std::size_t colon = s.find(':');
    if (colon == std::string_view::npos || s.find(':', colon + 1) != std::string_view::npos) {
      return std::nullopt;
    }
    host = s.substr(0, colon);
    port = s.substr(colon + 1);
  }
  const std::string canonical = CanonicalIpAddress(host);
  if (canonical.empty() || (canonical.find(':') != std::string::npos) != hp.ipv6) {
    return std::nullopt;
  }
  const auto p = ParseUnsigned(port, 65535);
  if (!p) return std::nullopt;
  hp.address = canonical;
  hp.port = static_cast<int>(*p);
  return hp;
}

using Tokens = std::vector<std::string_view>;

class LineParser {
 public:
  LineParser(const Tokens& tokens, std::size_t line) : t_(tokens), line_(line) {}

  Error Fail(const std::string& what) const {
    return MakeError(ErrorCode::kApi, fmt::format("line {}: {}", line_, what));
  }
  bool Done() const { return i_ >= t_.size(); }
  std::string_view Next() { return t_[i_++]; }
  Result<std::string_view> Value(std::string_view option) {
    if (Done()) return Fail(fmt::format("{} needs a value", option));
    return Next();
  }

  // The service part after -A/-a: "-t ADDR:PORT", "-u ...", "--sctp-service ...", "-f MARK [-6]".
  Result<IpvsServiceKey> Service() {
    if (Done()) return Fail("no virtual service");
    const std::string_view kind = Next();
    IpvsServiceKey key;
    if (kind == "-f" || kind == "--fwmark-service") {
      POWERCTL_TRY(mark, Value(kind));
      const auto value = ParseUnsigned(mark, UINT32_MAX);
      if (!value || *value == 0) return Fail(fmt::format("bad firewall mark {}", Quote(mark)));
      key.protocol = IpvsProtocol::kFwmark;
      key.fwmark = static_cast<unsigned>(*value);
      if (!Done() && t_[i_] == "-6") {
        key.ipv6 = true;
        ++i_;
      }
      return key;
    }
    if (kind == "-t" || kind == "--tcp-service") {
      key.protocol = IpvsProtocol::kTcp;
    } else if (kind == "-u" || kind == "--udp-service") {
      key.protocol = IpvsProtocol::kUdp;
    } else if (kind == "--sctp-service") {
      key.protocol = IpvsProtocol::kSctp;
    } else {
      return Fail(fmt::format("unknown service type {}", Quote(kind)));
    }
    POWERCTL_TRY(text, Value(kind));
    const auto hp = ParseHostPort(text);
    if (!hp) return Fail(fmt::format("bad service address {}", Quote(text)));
    key.address = hp->address;
    key.port = hp->port;
    key.ipv6 = hp->ipv6;
    return key;
  }

 private:
  const Tokens& t_;
  std::size_t line_;
  std::size_t i_ = 1;  // after the command
};

Result<IpvsVirtualServer> ParseVirtualLine(LineParser& p) {
  IpvsVirtualServer vs;
  POWERCTL_TRY(key, p.Service());
  vs.key = key;
  while (!p.Done()) {
    const std::string_view opt = p.Next();
    if (opt == "-o" || opt == "--ops") continue;
    POWERCTL_TRY(value, p.Value(opt));
    bool ok = false;
    if (opt == "-s" || opt == "--scheduler") {
      ok = Word(value, 15, false);  // IP_VS_SCHEDNAME_MAXLEN is 16 with the NUL
      vs.scheduler = value;
    } else if (opt == "-p" || opt == "--persistent") {
      ok = ParseUnsigned(value, UINT32_MAX).has_value();
    } else if (opt == "-M" || opt == "--netmask") {
      ok = ParseUnsigned(value, 128).has_value() || CanonicalIpAddress(value).size() > 0;
    } else if (opt == "--pe" || opt == "-b" || opt == "--sched-flags") {
      ok = Word(value, 64, true);
    } else {
      return p.Fail(fmt::format("unknown option {}", Quote(opt)));
    }
    if (!ok) return p.Fail(fmt::format("bad value {} for {}", Quote(value), opt));
  }
  if (vs.scheduler.empty()) return p.Fail("virtual service without a scheduler (-s)");
  return vs;
}

Result<std::pair<IpvsServiceKey, IpvsRealServer>> ParseRealLine(LineParser& p) {
  POWERCTL_TRY(key, p.Service());
  IpvsRealServer rs;
  bool have_address = false;
  bool have_forward = false;
  bool have_weight = false;
  while (!p.Done()) {
    const std::string_view opt = p.Next();
    char forward = 0;
    if (opt == "-g" || opt == "--gatewaying") forward = 'g';
    if (opt == "-i" || opt == "--ipip") forward = 'i';
    if (opt == "-m" || opt == "--masquerading") forward = 'm';
    if (forward != 0) {
      if (have_forward) return p.Fail("two forwarding methods");
      rs.forward = forward;
      have_forward = true;
      continue;
    }
    if (opt == "--tun-nocsum" || opt == "--tun-csum" || opt == "--tun-remcsum") {
      rs.options.emplace_back(opt);
      continue;
    }
    POWERCTL_TRY(value, p.Value(opt));
    if (opt == "-r" || opt == "--real-server") {
      const auto hp = ParseHostPort(value);
      if (!hp || have_address) return p.Fail(fmt::format("bad real server {}", Quote(value)));
      rs.address = hp->address;
      rs.port = hp->port;
      have_address = true;
    } else if (opt == "-w" || opt == "--weight") {
      const auto w = ParseUnsigned(value, INT_MAX);
      if (!w || have_weight) return p.Fail(fmt::format("bad weight {}", Quote(value)));
      rs.weight = static_cast<int>(*w);
      have_weight = true;
    } else if (opt == "--tun-type" || opt == "--tun-port" || opt == "-x" || opt == "-y" ||
               opt == "--u-threshold" || opt == "--l-threshold") {
      const bool ok = opt == "--tun-type" ? Word(value, 8, false)
                                          : ParseUnsigned(value, UINT32_MAX).has_value();
      if (!ok) return p.Fail(fmt::format("bad value {} for {}", Quote(value), opt));
      rs.options.emplace_back(opt);
      rs.options.emplace_back(value);
    } else {
      return p.Fail(fmt::format("unknown option {}", Quote(opt)));
    }
  }
  if (!have_address) return p.Fail("real server line without -r");
  if (!have_weight) return p.Fail("real server line without -w");
  // ipvsadm always prints the method; without one an edit could not keep it.
  if (!have_forward) return p.Fail("real server line without a forwarding method (-g/-i/-m)");
  return std::make_pair(key, rs);
}

Tokens Split(std::string_view line) {
  Tokens out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    const std::size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    if (i > start) out.push_back(line.substr(start, i - start));
  }
  return out;
}
}  // namespace

Result<std::vector<IpvsVirtualServer>> ParseIpvsSave(std::string_view text,
                                                     const IpvsParseLimits& limits) {
  if (text.size() > limits.max_bytes) {
    return MakeError(ErrorCode::kApi, fmt::format("line 1: the table is over {} bytes "
                                                  "({} bytes)",
                                                  limits.max_bytes, text.size()));
  }
  std::vector<IpvsVirtualServer> out;
  std::map<IpvsServiceKey, std::size_t> index;
  std::vector<std::set<std::pair<std::string, int>>> seen;  // real servers per virtual server
  std::size_t real_servers = 0;
  std::size_t number = 0;
  while (!text.empty()) {
    ++number;
    const std::size_t eol = text.find('\n');
    const std::string_view line = text.substr(0, eol);
    text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
    const auto fail = [number](const std::string& what) {
      return MakeError(ErrorCode::kApi, fmt::format("line {}: {}", number, what));
    };
    if (line.size() > limits.max_line_bytes) {
      return fail(fmt::format("over {} bytes", limits.max_line_bytes));
    }
    for (char c : line) {
      if (static_cast<unsigned char>(c) < 0x20 && c != '\t') return fail("control character");
    }
    const Tokens tokens = Split(line);
    if (tokens.empty()) continue;
    LineParser p(tokens, number);
    if (tokens[0] == "-A") {
      POWERCTL_TRY(vs, ParseVirtualLine(p));
      if (out.size() >= limits.max_virtual_servers) {
        return fail(fmt::format("more than {} virtual servers", limits.max_virtual_servers));
      }
      if (!index.emplace(vs.key, out.size()).second) {
        return fail(fmt::format("virtual server {} listed twice", IpvsServiceLabel(vs.key)));
      }
      out.push_back(std::move(vs));
      seen.emplace_back();
    } else if (tokens[0] == "-a") {
      POWERCTL_TRY(parsed, ParseRealLine(p));
      auto& [key, rs] = parsed;
      const auto it = index.find(key);
      if (it == index.end()) {
        return fail(fmt::format("real server for {}, which has no -A line before it",
                                IpvsServiceLabel(key)));
      }
      if (++real_servers > limits.max_real_servers) {
        return fail(fmt::format("more than {} real servers", limits.max_real_servers));
      }
      if (!seen[it->second].emplace(rs.address, rs.port).second) {
        return fail(fmt::format("real server {} listed twice for {}",
                                IpvsHostPort(rs.address, rs.port), IpvsServiceLabel(key)));
      }
      out[it->second].real_servers.push_back(std::move(rs));
    } else {
      return fail(fmt::format("unknown command {} (expected -A or -a)", Quote(tokens[0])));
    }
  }
  return out;
}

}  // namespace powerctl::lb
