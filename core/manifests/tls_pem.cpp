// OpenSSL error text, and conversion between PEM text and OpenSSL certificates and keys.

#include "core/manifests/tls_internal.h"

#include <openssl/err.h>
#include <openssl/pem.h>

#include <array>

namespace powerctl::manifests::detail {
namespace {

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

// BIO_get_mem_data is a macro with a C-style cast; this is its function form.
Result<std::string> BioText(BIO* bio) {
  char* data = nullptr;
  const long size = BIO_ctrl(bio, BIO_CTRL_INFO, 0, &data);
  if (size <= 0 || data == nullptr) return OpenSslError(ErrorCode::kInternal, "reading PEM buffer");
  return std::string(data, static_cast<std::size_t>(size));
}

}  // namespace

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

Result<std::string> CertPem(X509* cert) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_X509(bio.get(), cert) != 1) {
    return OpenSslError(ErrorCode::kInternal, "encoding certificate");
  }
  return BioText(bio.get());
}

Result<std::string> KeyPem(EVP_PKEY* key) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio ||
      PEM_write_bio_PKCS8PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    return OpenSslError(ErrorCode::kInternal, "encoding private key");
  }
  return BioText(bio.get());
}

}  // namespace powerctl::manifests::detail
