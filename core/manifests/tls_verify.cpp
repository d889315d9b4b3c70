// VerifyKeyMaterial and InspectCertificate: reading certificates back and checking that the
// key material fits together the way a TLS peer will check it.

#include "core/manifests/tls.h"
#include "core/manifests/tls_internal.h"

#include <openssl/err.h>
#include <openssl/objects.h>

#include <arpa/inet.h>

#include <cstdint>
#include <ctime>
#include <optional>
#include <utility>

namespace powerctl::manifests {
namespace {

using detail::GeneralNamesPtr;
using detail::kCaCert;
using detail::kCaKey;
using detail::kClientCert;
using detail::kClientKey;
using detail::kServerCert;
using detail::kServerKey;
using detail::Label;
using detail::OpenSslError;
using detail::OpenSslErrors;
using detail::OpenSslFree;
using detail::ParseCert;
using detail::ParseKey;
using detail::Part;
using detail::ResolveServerNames;
using detail::ServerNames;
using detail::StoreCtxPtr;
using detail::StorePtr;

std::string IpText(const unsigned char* bytes, int length) {
  char buf[INET6_ADDRSTRLEN] = {};
  const int family = length == 4 ? AF_INET : length == 16 ? AF_INET6 : AF_UNSPEC;
  if (family == AF_UNSPEC || inet_ntop(family, bytes, buf, sizeof(buf)) == nullptr) {
    return "<malformed IP SAN>";
  }
  return buf;
}

// sk_GENERAL_NAME_value is a macro with a C-style cast; this is its function form.
const GENERAL_NAME* NameAt(const GENERAL_NAMES* names, int i) {
  return static_cast<const GENERAL_NAME*>(
      OPENSSL_sk_value(ossl_check_const_GENERAL_NAME_sk_type(names), i));
}

Result<CertificateInfo> Describe(X509* cert) {
  CertificateInfo info;
  X509_NAME* subject = X509_get_subject_name(cert);
  const int cn_index = X509_NAME_get_index_by_NID(subject, NID_commonName, -1);
  if (cn_index >= 0) {
    unsigned char* utf8 = nullptr;
    const int length = ASN1_STRING_to_UTF8(
        &utf8, X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, cn_index)));
    std::unique_ptr<unsigned char, OpenSslFree> owned(utf8);
    if (length < 0) return OpenSslError(ErrorCode::kInvalidInput, "decoding subject CN");
    info.subject_cn.assign(reinterpret_cast<const char*>(utf8), static_cast<std::size_t>(length));
  }
  GeneralNamesPtr sans(
      static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr)));
  const int count = sans ? sk_GENERAL_NAME_num(sans.get()) : 0;
  for (int i = 0; i < count; ++i) {
    const GENERAL_NAME* name = NameAt(sans.get(), i);
    if (name->type == GEN_DNS) {
      info.dns_names.emplace_back(
          reinterpret_cast<const char*>(ASN1_STRING_get0_data(name->d.dNSName)),
          static_cast<std::size_t>(ASN1_STRING_length(name->d.dNSName)));
    } else if (name->type == GEN_IPADD) {
      info.ip_addresses.push_back(
          IpText(ASN1_STRING_get0_data(name->d.iPAddress), ASN1_STRING_length(name->d.iPAddress)));
    }
  }
  std::tm not_after{};
  if (ASN1_TIME_to_tm(X509_get0_notAfter(cert), &not_after) != 1) {
    return OpenSslError(ErrorCode::kInvalidInput, "decoding notAfter");
  }
  info.not_after_unix = static_cast<std::int64_t>(timegm(&not_after));
  info.is_ca = (X509_get_extension_flags(cert) & EXFLAG_CA) != 0;
  ERR_clear_error();  // a missing SAN extension leaves no error worth reporting
  return info;
}

// Full path validation as a TLS peer would do it (signature, validity period, CA key usage,
// purpose). PARTIAL_CHAIN makes ca.crt a trust anchor even if it is an intermediate, which is
// how Go treats every certificate in its root pool. Returns "" on success.
std::string ChainProblem(X509* ca, X509* leaf, int purpose) {
  StorePtr store(X509_STORE_new());
  StoreCtxPtr ctx(X509_STORE_CTX_new());
  if (!store || !ctx || X509_STORE_add_cert(store.get(), ca) != 1 ||
      X509_STORE_CTX_init(ctx.get(), store.get(), leaf, nullptr) != 1 ||
      X509_STORE_CTX_set_purpose(ctx.get(), purpose) != 1) {
    return "cannot set up verification: " + OpenSslErrors();
  }
  X509_STORE_CTX_set_flags(ctx.get(), X509_V_FLAG_PARTIAL_CHAIN);
  if (X509_verify_cert(ctx.get()) == 1) return "";
  ERR_clear_error();
  return X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx.get()));
}

void CheckKeyPair(X509* cert, EVP_PKEY* key, const Part& cert_part, const Part& key_part,
                  std::vector<std::string>& problems) {
  EVP_PKEY* public_key = X509_get0_pubkey(cert);
  if (public_key == nullptr || EVP_PKEY_eq(public_key, key) != 1) {
    problems.push_back(Label(cert_part) + ": public key does not match the private key in " +
                       Label(key_part));
  }
  ERR_clear_error();
}

void CheckLeaf(X509* ca, X509* leaf, const Part& part, bool server,
               std::vector<std::string>& problems) {
  const std::size_t before = problems.size();
  EVP_PKEY* ca_public_key = X509_get0_pubkey(ca);
  if (X509_check_issued(ca, leaf) != X509_V_OK || ca_public_key == nullptr ||
      X509_verify(leaf, ca_public_key) != 1) {
    problems.push_back(Label(part) + ": not signed by the CA in " + Label(kCaCert));
  }
  const uint32_t flags = X509_get_extension_flags(leaf);
  if ((flags & EXFLAG_CA) != 0) {
    problems.push_back(Label(part) + ": is a CA certificate; expected basicConstraints CA:FALSE");
  }
  const uint32_t wanted = server ? XKU_SSL_SERVER : XKU_SSL_CLIENT;
  if ((flags & EXFLAG_XKUSAGE) == 0 || (X509_get_extended_key_usage(leaf) & wanted) == 0) {
    problems.push_back(Label(part) + ": extendedKeyUsage lacks " +
                       (server ? "serverAuth" : "clientAuth"));
  }
  // Only when the specific checks pass, so one fault is not reported twice.
  if (problems.size() == before) {
    const std::string chain =
        ChainProblem(ca, leaf, server ? X509_PURPOSE_SSL_SERVER : X509_PURPOSE_SSL_CLIENT);
    if (!chain.empty()) {
      problems.push_back(Label(part) + ": does not verify against " + Label(kCaCert) + " as a " +
                         (server ? "TLS server" : "TLS client") + " certificate: " + chain);
    }
  }
  ERR_clear_error();
}

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ", ") + item;
  return out.empty() ? "none" : out;
}

void CheckServerNames(X509* server, const ServerNames& names, std::vector<std::string>& problems) {
  const std::string label = Label(kServerCert);
  std::string have;
  if (Result<CertificateInfo> info = Describe(server); info.ok()) {
    have = " (SANs: DNS " + Join(info->dns_names) + "; IP " + Join(info->ip_addresses) + ")";
  }
  // The same matching a TLS client does, wildcards included; the CN never counts (as in Go).
  for (const std::string& dns : names.dns_names) {
    if (X509_check_host(server, dns.data(), dns.size(), X509_CHECK_FLAG_NEVER_CHECK_SUBJECT,
                        nullptr) != 1) {
      problems.push_back(label + ": subjectAltName does not cover DNS name \"" + dns + "\"" + have);
    }
  }
  for (const auto& [text, bytes] : names.ips) {
    if (X509_check_ip(server, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(),
                      0) != 1) {
      problems.push_back(label + ": subjectAltName does not cover IP address " + text + have);
    }
  }
  ERR_clear_error();
}

}  // namespace

Status VerifyKeyMaterial(const KeyMaterial& material, const CertificateRequest* request) {
  std::optional<ServerNames> names;
  if (request != nullptr) {
    POWERCTL_TRY(resolved, ResolveServerNames(*request));
    names = std::move(resolved);
  }
  ERR_clear_error();
  POWERCTL_TRY(ca, ParseCert(material.ca_cert, kCaCert));
  POWERCTL_TRY(ca_key, ParseKey(material.ca_key, kCaKey));
  POWERCTL_TRY(server, ParseCert(material.server_cert, kServerCert));
  POWERCTL_TRY(server_key, ParseKey(material.server_key, kServerKey));
  POWERCTL_TRY(client, ParseCert(material.client_cert, kClientCert));
  POWERCTL_TRY(client_key, ParseKey(material.client_key, kClientKey));

  std::vector<std::string> problems;
  CheckKeyPair(ca.get(), ca_key.get(), kCaCert, kCaKey, problems);
  CheckKeyPair(server.get(), server_key.get(), kServerCert, kServerKey, problems);
  CheckKeyPair(client.get(), client_key.get(), kClientCert, kClientKey, problems);
  const uint32_t ca_flags = X509_get_extension_flags(ca.get());
  if ((ca_flags & EXFLAG_BCONS) == 0 || (ca_flags & EXFLAG_CA) == 0) {
    problems.push_back(Label(kCaCert) + ": basicConstraints CA:TRUE is missing");
  }
  CheckLeaf(ca.get(), server.get(), kServerCert, /*server=*/true, problems);
  CheckLeaf(ca.get(), client.get(), kClientCert, /*server=*/false, problems);
  if (names) CheckServerNames(server.get(), *names, problems);
  if (problems.empty()) return OkStatus();
  std::string message = "TLS key material failed verification: ";
  for (std::size_t i = 0; i < problems.size(); ++i) message += (i ? "; " : "") + problems[i];
  return MakeError(ErrorCode::kCheckFailed, message);
}

Result<CertificateInfo> InspectCertificate(std::string_view pem) {
  ERR_clear_error();
  POWERCTL_TRY(cert, ParseCert(pem, Part{"certificate", ""}));
  return Describe(cert.get());
}

}  // namespace powerctl::manifests
