// GenerateKeyMaterial: a private CA and the leaf certificates it signs.

#include "core/manifests/tls.h"
#include "core/manifests/tls_internal.h"

#include <openssl/err.h>
#include <openssl/objects.h>

#include <ctime>
#include <utility>

namespace powerctl::manifests {
namespace {

using detail::BnPtr;
using detail::CertPem;
using detail::ExtPtr;
using detail::GeneralNamePtr;
using detail::GeneralNamesPtr;
using detail::Ia5Ptr;
using detail::kCaCert;
using detail::kCaKey;
using detail::KeyPem;
using detail::Label;
using detail::OctetPtr;
using detail::OpenSslError;
using detail::ParseCert;
using detail::ParseKey;
using detail::PkeyCtxPtr;
using detail::PkeyPtr;
using detail::ResolveServerNames;
using detail::ServerNames;
using detail::ValidateRequest;
using detail::X509Ptr;

constexpr long kClockSkewSeconds = 5 * 60;  // nodes whose clocks lag still accept the certs

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
  // A brought CA may expire before the leaf would: a peer rejects the chain from then on anyway.
  if (issuer != nullptr &&
      ASN1_TIME_compare(X509_get0_notAfter(cert.get()), X509_get0_notAfter(issuer)) > 0 &&
      X509_set1_notAfter(cert.get(), X509_get0_notAfter(issuer)) != 1) {
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

// Issues the server and client certificates, with new keys, signed by `ca`, into m's leaf fields.
Status IssueLeaves(const CertificateRequest& request, const ServerNames& names, X509* ca,
                   EVP_PKEY* ca_key, std::time_t now, KeyMaterial& m) {
  POWERCTL_TRY(sans, BuildSans(names));
  POWERCTL_TRY(server_key, GenerateKey());
  POWERCTL_TRY(client_key, GenerateKey());
  POWERCTL_TRY(server, IssueCert({CertKind::kServer, names.common_name, request.leaf_validity_days,
                                  sans.get()},
                                 server_key.get(), ca, ca_key, now));
  POWERCTL_TRY(
      client, IssueCert({CertKind::kClient, request.client_common_name, request.leaf_validity_days},
                        client_key.get(), ca, ca_key, now));
  std::pair<std::string*, Result<std::string>> outputs[] = {
      {&m.server_cert, CertPem(server.get())},
      {&m.server_key, KeyPem(server_key.get())},
      {&m.client_cert, CertPem(client.get())},
      {&m.client_key, KeyPem(client_key.get())}};
  for (auto& [field, pem] : outputs) {
    if (!pem.ok()) return pem.error();
    *field = std::move(pem).value();
  }
  return OkStatus();
}

}  // namespace

Result<KeyMaterial> GenerateKeyMaterial(const CertificateRequest& request) {
  POWERCTL_TRY(names, ResolveServerNames(request));
  POWERCTL_CHECK_OK(ValidateRequest(request, names));
  ERR_clear_error();
  const std::time_t now = std::time(nullptr);
  POWERCTL_TRY(ca_key, GenerateKey());
  POWERCTL_TRY(ca, IssueCert({CertKind::kCa, request.ca_common_name, request.ca_validity_days},
                             ca_key.get(), nullptr, ca_key.get(), now));
  KeyMaterial m;
  POWERCTL_TRY(ca_pem, CertPem(ca.get()));
  POWERCTL_TRY(ca_key_pem, KeyPem(ca_key.get()));
  m.ca_cert = std::move(ca_pem);
  m.ca_key = std::move(ca_key_pem);
  POWERCTL_CHECK_OK(IssueLeaves(request, names, ca.get(), ca_key.get(), now, m));
  return m;
}

Result<KeyMaterial> IssueWithCa(const CertificateRequest& request, std::string_view ca_cert,
                                std::string_view ca_key) {
  POWERCTL_TRY(names, ResolveServerNames(request));
  POWERCTL_CHECK_OK(ValidateRequest(request, names));
  ERR_clear_error();
  POWERCTL_TRY(ca, ParseCert(ca_cert, kCaCert));
  POWERCTL_TRY(key, ParseKey(ca_key, kCaKey));
  EVP_PKEY* public_key = X509_get0_pubkey(ca.get());
  if (public_key == nullptr || EVP_PKEY_eq(public_key, key.get()) != 1) {
    ERR_clear_error();
    return MakeError(ErrorCode::kInvalidInput,
                     Label(kCaKey) + ": is not the private key of " + Label(kCaCert));
  }
  if (X509_check_ca(ca.get()) == 0) {
    ERR_clear_error();
    return MakeError(ErrorCode::kInvalidInput,
                     Label(kCaCert) + ": is not a CA certificate (basicConstraints CA:TRUE)");
  }
  if (X509_cmp_current_time(X509_get0_notAfter(ca.get())) <= 0) {
    return MakeError(ErrorCode::kInvalidInput, Label(kCaCert) + ": has expired");
  }
  KeyMaterial m;
  m.ca_cert = std::string(ca_cert);
  m.ca_key = std::string(ca_key);
  POWERCTL_CHECK_OK(IssueLeaves(request, names, ca.get(), key.get(), std::time(nullptr), m));
  return m;
}

}  // namespace powerctl::manifests
