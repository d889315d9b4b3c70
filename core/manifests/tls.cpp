#include "core/manifests/tls.h"

#include <openssl/asn1.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <fstream>
#include <memory>
#include <optional>
#include <utility>

namespace powerctl::manifests {
namespace {

namespace fs = std::filesystem;

// unique_ptr deleter for OpenSSL's T_free functions, so every object is released on every
// early return.
template <auto kFree>
struct Free {
  template <typename T>
  void operator()(T* p) const {
    kFree(p);
  }
};
struct OpenSslFree {
  void operator()(unsigned char* p) const { OPENSSL_free(p); }
};
using BioPtr = std::unique_ptr<BIO, Free<BIO_free_all>>;
using BnPtr = std::unique_ptr<BIGNUM, Free<BN_free>>;
using ExtPtr = std::unique_ptr<X509_EXTENSION, Free<X509_EXTENSION_free>>;
using GeneralNamePtr = std::unique_ptr<GENERAL_NAME, Free<GENERAL_NAME_free>>;
using GeneralNamesPtr = std::unique_ptr<GENERAL_NAMES, Free<GENERAL_NAMES_free>>;
using Ia5Ptr = std::unique_ptr<ASN1_IA5STRING, Free<ASN1_IA5STRING_free>>;
using OctetPtr = std::unique_ptr<ASN1_OCTET_STRING, Free<ASN1_OCTET_STRING_free>>;
using PkeyCtxPtr = std::unique_ptr<EVP_PKEY_CTX, Free<EVP_PKEY_CTX_free>>;
using PkeyPtr = std::unique_ptr<EVP_PKEY, Free<EVP_PKEY_free>>;
using StoreCtxPtr = std::unique_ptr<X509_STORE_CTX, Free<X509_STORE_CTX_free>>;
using StorePtr = std::unique_ptr<X509_STORE, Free<X509_STORE_free>>;
using X509Ptr = std::unique_ptr<X509, Free<X509_free>>;

constexpr std::size_t kMaxPemBytes = 1 << 20;  // real PEMs are a few KiB; bounds the reads
constexpr long kClockSkewSeconds = 5 * 60;     // nodes whose clocks lag still accept the certs
constexpr int kMaxValidityDays = 36500;
constexpr int kMaxCommonNameLength = 64;  // ub-common-name in RFC 5280

// A PEM field of KeyMaterial and the file it lives in, for error messages.
struct Part {
  std::string_view file, field;
};
constexpr Part kCaCert{kCaCertFile, "ca_cert"}, kCaKey{kCaKeyFile, "ca_key"};
constexpr Part kServerCert{kServerCertFile, "server_cert"},
    kServerKey{kServerKeyFile, "server_key"};
constexpr Part kClientCert{kClientCertFile, "client_cert"},
    kClientKey{kClientKeyFile, "client_key"};

std::string Label(const Part& p) {
  return p.field.empty() ? std::string(p.file)
                         : std::string(p.file) + " (" + std::string(p.field) + ")";
}

// Drains OpenSSL's thread-local error queue so the message says why, and the next call does
// not see stale entries. The queue holds reason strings only, never input bytes.
std::string OpenSslErrors() {
  std::string out;
  const char* data = nullptr;
  int flags = 0;
  while (unsigned long code = ERR_get_error_all(nullptr, nullptr, nullptr, &data, &flags)) {
    std::array<char, 256> buf{};
    ERR_error_string_n(code, buf.data(), buf.size());
    out += (out.empty() ? "" : "; ") + std::string(buf.data());
    if (data != nullptr && *data != '\0' && (flags & ERR_TXT_STRING) != 0) {
      out += std::string(" (") + data + ")";
    }
  }
  return out.empty() ? "no detail from OpenSSL" : out;
}

Error OpenSslError(ErrorCode code, const std::string& what) {
  return MakeError(code, what + ": " + OpenSslErrors());
}

// Encrypted keys must fail instead of OpenSSL prompting for a passphrase on the terminal.
int NoPassphrase(char* /*buf*/, int /*size*/, int /*rwflag*/, void* /*u*/) {
  return -1;
}

Result<BioPtr> ReadBio(std::string_view pem, const Part& part) {
  if (pem.empty()) return MakeError(ErrorCode::kInvalidInput, Label(part) + ": is empty");
  if (pem.size() > kMaxPemBytes) {
    return MakeError(ErrorCode::kInvalidInput, Label(part) + ": larger than 1 MiB");
  }
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  if (!bio) return OpenSslError(ErrorCode::kInternal, Label(part) + ": BIO_new_mem_buf");
  return bio;
}

Result<X509Ptr> ParseCert(std::string_view pem, const Part& part) {
  POWERCTL_TRY(bio, ReadBio(pem, part));
  X509Ptr cert(PEM_read_bio_X509(bio.get(), nullptr, NoPassphrase, nullptr));
  if (!cert) return OpenSslError(ErrorCode::kInvalidInput, Label(part) + ": not a PEM certificate");
  return cert;
}

Result<PkeyPtr> ParseKey(std::string_view pem, const Part& part) {
  POWERCTL_TRY(bio, ReadBio(pem, part));
  PkeyPtr key(PEM_read_bio_PrivateKey(bio.get(), nullptr, NoPassphrase, nullptr));
  if (!key) return OpenSslError(ErrorCode::kInvalidInput, Label(part) + ": not a PEM private key");
  return key;
}

// BIO_get_mem_data is a macro with a C-style cast; this is its function form.
Result<std::string> BioText(BIO* bio) {
  char* data = nullptr;
  const long size = BIO_ctrl(bio, BIO_CTRL_INFO, 0, &data);
  if (size <= 0 || data == nullptr) return OpenSslError(ErrorCode::kInternal, "reading PEM buffer");
  return std::string(data, static_cast<std::size_t>(size));
}

Result<std::string> CertPem(X509* cert) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_X509(bio.get(), cert) != 1) {
    return OpenSslError(ErrorCode::kInternal, "encoding certificate");
  }
  return BioText(bio.get());
}

// PKCS#8 ("BEGIN PRIVATE KEY") is what Go's tls.X509KeyPair and most tools accept for any
// key type; unencrypted because the file mode protects it.
Result<std::string> KeyPem(EVP_PKEY* key) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio ||
      PEM_write_bio_PKCS8PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    return OpenSslError(ErrorCode::kInternal, "encoding private key");
  }
  return BioText(bio.get());
}

// inet_pton rather than OpenSSL's parser: strict, and the same bytes the SAN holds.
std::optional<std::string> IpBytes(std::string_view text) {
  const std::string s(text);
  unsigned char buf[16];
  if (inet_pton(AF_INET, s.c_str(), buf) == 1) return std::string(buf, buf + 4);
  if (inet_pton(AF_INET6, s.c_str(), buf) == 1) return std::string(buf, buf + 16);
  return std::nullopt;
}

std::string IpText(const unsigned char* bytes, int length) {
  char buf[INET6_ADDRSTRLEN] = {};
  const int family = length == 4 ? AF_INET : length == 16 ? AF_INET6 : AF_UNSPEC;
  if (family == AF_UNSPEC || inet_ntop(family, bytes, buf, sizeof(buf)) == nullptr) {
    return "<malformed IP SAN>";
  }
  return buf;
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

// The server's CN and the SANs it must carry, validated and de-duplicated.
struct ServerNames {
  std::string common_name;
  std::vector<std::string> dns_names;
  std::vector<std::pair<std::string, std::string>> ips;  // text, bytes
};

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

Result<GeneralNamesPtr> BuildSans(const ServerNames& names) {
  GeneralNamesPtr sans(GENERAL_NAMES_new());
  if (!sans) return OpenSslError(ErrorCode::kInternal, "allocating SANs");
  auto push = [&](int type, ASN1_STRING* value) -> Status {
    GeneralNamePtr gen(GENERAL_NAME_new());
    if (!gen) {
      ASN1_STRING_free(value);
      return OpenSslError(ErrorCode::kInternal, "allocating SAN");
    }
    GENERAL_NAME_set0_value(gen.get(), type, value);
    if (sk_GENERAL_NAME_push(sans.get(), gen.get()) == 0) {
      return OpenSslError(ErrorCode::kInternal, "adding SAN");
    }
    gen.release();  // now owned by the stack
    return OkStatus();
  };
  for (const std::string& dns : names.dns_names) {
    Ia5Ptr value(ASN1_IA5STRING_new());
    if (!value || ASN1_STRING_set(value.get(), dns.data(), static_cast<int>(dns.size())) != 1) {
      return OpenSslError(ErrorCode::kInternal, "encoding DNS SAN " + dns);
    }
    POWERCTL_CHECK_OK(push(GEN_DNS, value.release()));
  }
  for (const auto& [text, bytes] : names.ips) {
    OctetPtr value(ASN1_OCTET_STRING_new());
    if (!value ||
        ASN1_OCTET_STRING_set(value.get(), reinterpret_cast<const unsigned char*>(bytes.data()),
                              static_cast<int>(bytes.size())) != 1) {
      return OpenSslError(ErrorCode::kInternal, "encoding IP SAN " + text);
    }
    POWERCTL_CHECK_OK(push(GEN_IPADD, value.release()));
  }
  return sans;
}

// ECDSA P-256: fast to generate, small, and accepted by Go's crypto/tls on both ends.
Result<PkeyPtr> GenerateKey() {
  PkeyCtxPtr ctx(EVP_PKEY_CTX_new_from_name(nullptr, "EC", nullptr));
  EVP_PKEY* key = nullptr;
  if (!ctx || EVP_PKEY_keygen_init(ctx.get()) <= 0 ||
      EVP_PKEY_CTX_set_group_name(ctx.get(), "P-256") <= 0 ||
      EVP_PKEY_generate(ctx.get(), &key) <= 0) {
    return OpenSslError(ErrorCode::kInternal, "generating ECDSA P-256 key");
  }
  return PkeyPtr(key);
}

enum class CertKind { kCa, kServer, kClient };

struct CertSpec {
  CertKind kind;
  std::string common_name;
  int validity_days;
  const GENERAL_NAMES* sans = nullptr;  // server only
};

Status AddExtension(X509* cert, X509V3_CTX* ctx, int nid, const char* value) {
  ExtPtr ext(X509V3_EXT_conf_nid(nullptr, ctx, nid, value));
  if (!ext || X509_add_ext(cert, ext.get(), -1) != 1) {
    return OpenSslError(ErrorCode::kInternal, std::string("adding extension ") + OBJ_nid2sn(nid));
  }
  return OkStatus();
}

// Issues a certificate for subject_key signed by issuer_key; issuer == nullptr self-signs.
Result<X509Ptr> IssueCert(const CertSpec& spec, EVP_PKEY* subject_key, X509* issuer,
                          EVP_PKEY* issuer_key, std::time_t now) {
  const std::string what = "issuing certificate " + spec.common_name;
  X509Ptr cert(X509_new());
  BnPtr serial(BN_new());
  // 128 random bits with the top bit set: positive, non-zero, unpredictable, 17 DER octets.
  if (!cert || !serial || X509_set_version(cert.get(), X509_VERSION_3) != 1 ||
      BN_rand(serial.get(), 128, BN_RAND_TOP_ONE, BN_RAND_BOTTOM_ANY) != 1 ||
      BN_to_ASN1_INTEGER(serial.get(), X509_get_serialNumber(cert.get())) == nullptr) {
    return OpenSslError(ErrorCode::kInternal, what);
  }
  X509_NAME* subject = X509_get_subject_name(cert.get());
  if (X509_NAME_add_entry_by_NID(subject, NID_commonName, MBSTRING_UTF8,
                                 reinterpret_cast<const unsigned char*>(spec.common_name.c_str()),
                                 -1, -1, 0) != 1 ||
      X509_set_issuer_name(cert.get(), X509_get_subject_name(issuer ? issuer : cert.get())) != 1 ||
      X509_time_adj_ex(X509_getm_notBefore(cert.get()), 0, -kClockSkewSeconds, &now) == nullptr ||
      X509_time_adj_ex(X509_getm_notAfter(cert.get()), spec.validity_days, 0, &now) == nullptr ||
      X509_set_pubkey(cert.get(), subject_key) != 1) {
    return OpenSslError(ErrorCode::kInternal, what);
  }
  X509V3_CTX ctx{};
  X509V3_set_ctx(&ctx, issuer ? issuer : cert.get(), cert.get(), nullptr, nullptr, 0);
  X509* c = cert.get();
  if (spec.kind == CertKind::kCa) {
    POWERCTL_CHECK_OK(AddExtension(c, &ctx, NID_basic_constraints, "critical,CA:TRUE,pathlen:0"));
    POWERCTL_CHECK_OK(AddExtension(c, &ctx, NID_key_usage, "critical,keyCertSign,cRLSign"));
    POWERCTL_CHECK_OK(AddExtension(c, &ctx, NID_subject_key_identifier, "hash"));
  } else {
    POWERCTL_CHECK_OK(AddExtension(c, &ctx, NID_basic_constraints, "critical,CA:FALSE"));
    // An ECDSA key signs the handshake; keyEncipherment only applies to RSA key transport.
    POWERCTL_CHECK_OK(AddExtension(c, &ctx, NID_key_usage, "critical,digitalSignature"));
    POWERCTL_CHECK_OK(AddExtension(c, &ctx, NID_ext_key_usage,
                                   spec.kind == CertKind::kServer ? "serverAuth" : "clientAuth"));
    POWERCTL_CHECK_OK(AddExtension(c, &ctx, NID_subject_key_identifier, "hash"));
    POWERCTL_CHECK_OK(AddExtension(c, &ctx, NID_authority_key_identifier, "keyid:always"));
  }
  if (spec.sans != nullptr &&
      X509_add1_ext_i2d(c, NID_subject_alt_name, const_cast<GENERAL_NAMES*>(spec.sans), 0,
                        X509V3_ADD_DEFAULT) != 1) {
    return OpenSslError(ErrorCode::kInternal, what + ": adding subjectAltName");
  }
  if (X509_sign(c, issuer_key, EVP_sha256()) <= 0) return OpenSslError(ErrorCode::kInternal, what);
  return cert;
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

// Writes path with exactly `mode` on a fresh inode: any stale file is unlinked, O_EXCL means
// the inode is ours and carries `mode` from creation (a key is never readable by others, not
// even briefly), and fchmod undoes the umask so certificates really are 0644.
Status WriteNewFile(const fs::path& path, const std::string& content, mode_t mode) {
  const auto io_error = [&](const char* op) {
    return MakeError(ErrorCode::kIo, path.string() + ": " + op + ": " + std::strerror(errno));
  };
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) return io_error("unlink");
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) return io_error("open");
  struct Closer {
    int fd;
    ~Closer() {
      if (fd >= 0) ::close(fd);
    }
  } closer{fd};
  if (::fchmod(fd, mode) != 0) return io_error("fchmod");
  for (std::size_t done = 0; done < content.size();) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return io_error("write");
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) return io_error("fsync");
  closer.fd = -1;
  if (::close(fd) != 0) return io_error("close");
  return OkStatus();
}

Result<std::string> ReadSmallFile(const fs::path& path) {
  std::error_code ec;
  const bool exists = fs::exists(path, ec);
  if (ec) return MakeError(ErrorCode::kIo, path.string() + ": " + ec.message());
  if (!exists) return MakeError(ErrorCode::kNotFound, path.string() + ": no such file");
  const std::uintmax_t size = fs::file_size(path, ec);
  if (ec) return MakeError(ErrorCode::kIo, path.string() + ": " + ec.message());
  if (size > kMaxPemBytes) {
    return MakeError(ErrorCode::kInvalidInput, path.string() + ": larger than 1 MiB");
  }
  std::ifstream in(path, std::ios::binary);
  std::string text(static_cast<std::size_t>(size), '\0');
  if (!in || !in.read(text.data(), static_cast<std::streamsize>(text.size()))) {
    return MakeError(ErrorCode::kIo, path.string() + ": read failed");
  }
  return text;
}

}  // namespace

Result<KeyMaterial> GenerateKeyMaterial(const CertificateRequest& request) {
  POWERCTL_TRY(names, ResolveServerNames(request));
  POWERCTL_CHECK_OK(ValidateRequest(request, names));
  ERR_clear_error();
  POWERCTL_TRY(sans, BuildSans(names));
  const std::time_t now = std::time(nullptr);
  POWERCTL_TRY(ca_key, GenerateKey());
  POWERCTL_TRY(server_key, GenerateKey());
  POWERCTL_TRY(client_key, GenerateKey());
  POWERCTL_TRY(ca, IssueCert({CertKind::kCa, request.ca_common_name, request.ca_validity_days},
                             ca_key.get(), nullptr, ca_key.get(), now));
  POWERCTL_TRY(server, IssueCert({CertKind::kServer, names.common_name, request.leaf_validity_days,
                                  sans.get()},
                                 server_key.get(), ca.get(), ca_key.get(), now));
  POWERCTL_TRY(
      client, IssueCert({CertKind::kClient, request.client_common_name, request.leaf_validity_days},
                        client_key.get(), ca.get(), ca_key.get(), now));
  KeyMaterial m;
  std::pair<std::string*, Result<std::string>> outputs[] = {
      {&m.ca_cert, CertPem(ca.get())},         {&m.ca_key, KeyPem(ca_key.get())},
      {&m.server_cert, CertPem(server.get())}, {&m.server_key, KeyPem(server_key.get())},
      {&m.client_cert, CertPem(client.get())}, {&m.client_key, KeyPem(client_key.get())}};
  for (auto& [field, pem] : outputs) {
    if (!pem.ok()) return pem.error();
    *field = std::move(pem).value();
  }
  return m;
}

Result<KeyMaterial> LoadKeyMaterial(const fs::path& dir) {
  KeyMaterial m;
  const std::pair<std::string_view, std::string*> files[] = {
      {kCaCertFile, &m.ca_cert},         {kCaKeyFile, &m.ca_key},
      {kServerCertFile, &m.server_cert}, {kServerKeyFile, &m.server_key},
      {kClientCertFile, &m.client_cert}, {kClientKeyFile, &m.client_key}};
  for (const auto& [name, field] : files) {
    POWERCTL_TRY(text, ReadSmallFile(dir / name));
    *field = std::move(text);
  }
  return m;
}

Status WriteKeyMaterial(const fs::path& dir, const KeyMaterial& material) {
  const std::pair<Part, const std::string*> files[] = {
      {kCaCert, &material.ca_cert},         {kCaKey, &material.ca_key},
      {kServerCert, &material.server_cert}, {kServerKey, &material.server_key},
      {kClientCert, &material.client_cert}, {kClientKey, &material.client_key}};
  for (const auto& [part, content] : files) {
    if (content->empty()) return MakeError(ErrorCode::kInvalidInput, Label(part) + ": is empty");
  }
  std::error_code ec;
  const fs::file_status status = fs::symlink_status(dir, ec);
  if (!fs::exists(status)) {
    if (const fs::path parent = dir.parent_path(); !parent.empty()) {
      fs::create_directories(parent, ec);
      if (ec) return MakeError(ErrorCode::kIo, parent.string() + ": " + ec.message());
    }
    // chmod as well because the umask may have cleared bits of 0700.
    if ((::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) || ::chmod(dir.c_str(), 0700) != 0) {
      return MakeError(ErrorCode::kIo,
                       dir.string() + ": creating directory: " + std::strerror(errno));
    }
  } else if (!fs::is_directory(dir, ec)) {
    return MakeError(ErrorCode::kIo, dir.string() + ": not a directory");
  }
  // Stage every file first and rename only when all are written, so a failure leaves the old
  // set in place rather than a mix of old and new material.
  std::vector<std::pair<fs::path, fs::path>> staged;
  for (const auto& [part, content] : files) {
    const fs::path target = dir / part.file;
    const fs::path temp = dir / ("." + std::string(part.file) + ".tmp");
    const bool is_key = part.file.ends_with(".key");
    if (Status written = WriteNewFile(temp, *content, is_key ? 0600 : 0644); !written.ok()) {
      for (const auto& [t, unused] : staged) ::unlink(t.c_str());
      ::unlink(temp.c_str());
      return written.error();
    }
    staged.emplace_back(temp, target);
  }
  for (const auto& [temp, target] : staged) {
    if (::rename(temp.c_str(), target.c_str()) != 0) {
      return MakeError(ErrorCode::kIo, target.string() + ": rename: " + std::strerror(errno));
    }
  }
  // Make the renames durable too.
  if (const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
  return OkStatus();
}

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
