// Checks on a CertificateRequest, and the names (CN, DNS and IP SANs) the server certificate
// it describes must carry.

#include "core/manifests/tls_internal.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <optional>

namespace powerctl::manifests::detail {
namespace {

constexpr int kMaxValidityDays = 36500;
constexpr int kMaxCommonNameLength = 64;  // ub-common-name in RFC 5280

// inet_pton rather than OpenSSL's parser: strict, and the same bytes the SAN holds.
std::optional<std::string> IpBytes(std::string_view text) {
  const std::string s(text);
  unsigned char buf[16];
  if (inet_pton(AF_INET, s.c_str(), buf) == 1) return std::string(buf, buf + 4);
  if (inet_pton(AF_INET6, s.c_str(), buf) == 1) return std::string(buf, buf + 16);
  return std::nullopt;
}

// RFC 1123 host name, optionally with one leading "*." wildcard label.
bool IsDnsName(std::string_view name) {
  if (name.starts_with("*.")) name.remove_prefix(2);
  if (name.empty() || name.size() > 253) return false;
  std::size_t start = 0;
  while (start <= name.size()) {
    const std::size_t end = std::min(name.find('.', start), name.size());
    const std::string_view label = name.substr(start, end - start);
    if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-') {
      return false;
    }
    for (char c : label) {
      if (std::isalnum(static_cast<unsigned char>(c)) == 0 && c != '-') return false;
    }
    start = end + 1;
  }
  return true;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) ==
           std::tolower(static_cast<unsigned char>(y));
  });
}

}  // namespace

Result<ServerNames> ResolveServerNames(const CertificateRequest& request) {
  ServerNames names;
  auto add_dns = [&](const std::string& dns) {
    if (std::none_of(names.dns_names.begin(), names.dns_names.end(),
                     [&](const std::string& n) { return EqualsIgnoreCase(n, dns); })) {
      names.dns_names.push_back(dns);
    }
  };
  auto add_ip = [&](const std::string& text, const std::string& bytes) {
    if (std::none_of(names.ips.begin(), names.ips.end(),
                     [&](const auto& ip) { return ip.second == bytes; })) {
      names.ips.emplace_back(text, bytes);
    }
  };
  for (const std::string& dns : request.server_dns_names) {
    if (!IsDnsName(dns)) {
      return MakeError(ErrorCode::kInvalidInput,
                       "server_dns_names: \"" + dns + "\" is not a valid DNS name");
    }
    add_dns(dns);
  }
  for (const std::string& ip : request.server_ip_addresses) {
    std::optional<std::string> bytes = IpBytes(ip);
    if (!bytes) {
      return MakeError(ErrorCode::kInvalidInput,
                       "server_ip_addresses: \"" + ip + "\" is not an IPv4 or IPv6 address");
    }
    add_ip(ip, *bytes);
  }
  names.common_name = request.server_common_name;
  if (names.common_name.empty()) {
    names.common_name = !names.dns_names.empty() ? names.dns_names.front()
                        : !names.ips.empty()     ? names.ips.front().first
                                                 : "";
  }
  if (names.common_name.empty()) {
    return MakeError(ErrorCode::kInvalidInput,
                     "server_common_name is empty and no server DNS name or IP is given");
  }
  // Go ignores the CN when matching host names, so a CN that names the host must be a SAN.
  if (std::optional<std::string> bytes = IpBytes(names.common_name)) {
    add_ip(names.common_name, *bytes);
  } else if (IsDnsName(names.common_name)) {
    add_dns(names.common_name);
  }
  return names;
}

Status ValidateRequest(const CertificateRequest& request, const ServerNames& names) {
  const std::pair<std::string_view, const std::string*> cns[] = {
      {"ca_common_name", &request.ca_common_name},
      {"server_common_name", &names.common_name},
      {"client_common_name", &request.client_common_name}};
  for (const auto& [field, cn] : cns) {
    if (cn->empty() || cn->size() > kMaxCommonNameLength) {
      return MakeError(ErrorCode::kInvalidInput,
                       std::string(field) + ": must be 1 to 64 characters (X.509 limit), got " +
                           std::to_string(cn->size()));
    }
  }
  if (request.ca_validity_days < 1 || request.ca_validity_days > kMaxValidityDays) {
    return MakeError(ErrorCode::kInvalidInput, "ca_validity_days: must be 1 to 36500");
  }
  if (request.leaf_validity_days < 1 || request.leaf_validity_days > request.ca_validity_days) {
    // A leaf outliving its CA would stop verifying on the CA's expiry anyway.
    return MakeError(ErrorCode::kInvalidInput,
                     "leaf_validity_days: must be 1 to ca_validity_days (" +
                         std::to_string(request.ca_validity_days) + ")");
  }
  return OkStatus();
}

}  // namespace powerctl::manifests::detail
