#pragma once
// Internal to the TLS key material code (core/manifests/tls_*.cpp): RAII wrappers for OpenSSL
// objects, the KeyMaterial fields as files, and the helpers that generating, verifying and
// file handling share. Not part of the public API; use core/manifests/tls.h.
//
//   tls_pem.cpp       OpenSSL error text; PEM text <-> certificates and keys
//   tls_request.cpp   CertificateRequest checks and the names the server cert must carry
//   tls_generate.cpp  GenerateKeyMaterial
//   tls_verify.cpp    VerifyKeyMaterial, InspectCertificate
//   tls_files.cpp     LoadKeyMaterial, WriteKeyMaterial(Files), ReadPemFile
//   tls_cert_dir.cpp  ObtainCertDir

#include "core/common/result.h"
#include "core/manifests/tls.h"

#include <openssl/asn1.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace powerctl::manifests::detail {

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

inline constexpr std::size_t kMaxPemBytes = 1 << 20;  // real PEMs are a few KiB; bounds the reads

// A PEM field of KeyMaterial and the file it lives in, for error messages.
struct Part {
  std::string_view file, field;
};
inline constexpr Part kCaCert{kCaCertFile, "ca_cert"}, kCaKey{kCaKeyFile, "ca_key"};
inline constexpr Part kServerCert{kServerCertFile, "server_cert"},
    kServerKey{kServerKeyFile, "server_key"};
inline constexpr Part kClientCert{kClientCertFile, "client_cert"},
    kClientKey{kClientKeyFile, "client_key"};

inline std::string Label(const Part& p) {
  return p.field.empty() ? std::string(p.file)
                         : std::string(p.file) + " (" + std::string(p.field) + ")";
}

// Drains OpenSSL's thread-local error queue so the message says why, and the next call does
// not see stale entries. The queue holds reason strings only, never input bytes.
std::string OpenSslErrors();

// OpenSslError(code, what): "<what>: <OpenSSL's reasons>", draining the queue.
Error OpenSslError(ErrorCode code, const std::string& what);

// PEM text -> OpenSSL objects. kInvalidInput naming `part` if the text is empty, too large
// or not a PEM certificate / unencrypted private key.
Result<X509Ptr> ParseCert(std::string_view pem, const Part& part);
Result<PkeyPtr> ParseKey(std::string_view pem, const Part& part);

// OpenSSL objects -> PEM text.
Result<std::string> CertPem(X509* cert);
// PKCS#8 ("BEGIN PRIVATE KEY") is what Go's tls.X509KeyPair and most tools accept for any
// key type; unencrypted because the file mode protects it.
Result<std::string> KeyPem(EVP_PKEY* key);

// A PEM file's text, at most kMaxPemBytes. kNotFound when it does not exist, kIo when it
// cannot be read.
Result<std::string> ReadPemFile(const std::filesystem::path& path);

// The server's CN and the SANs it must carry, validated and de-duplicated.
struct ServerNames {
  std::string common_name;
  std::vector<std::string> dns_names;
  std::vector<std::pair<std::string, std::string>> ips;  // text, bytes
};

// Validates the requested DNS names and IPs and derives the CN; a CN that is a DNS name or
// IP is added to the SANs. kInvalidInput naming the bad field.
Result<ServerNames> ResolveServerNames(const CertificateRequest& request);

// Checks the common names and validity periods of a request. kInvalidInput naming the field.
Status ValidateRequest(const CertificateRequest& request, const ServerNames& names);

}  // namespace powerctl::manifests::detail
