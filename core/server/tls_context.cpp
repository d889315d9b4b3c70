// The server's TLS context: TLS 1.2 or newer, ECDHE with AEAD ciphers only, no renegotiation,
// and with a client CA, client certificates required and verified at the handshake.
#include "core/server/http_server_internal.h"

#include <boost/asio/ssl.hpp>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <sys/stat.h>

#include <filesystem>
#include <system_error>

namespace powerctl::server::internal {
namespace ssl = boost::asio::ssl;

namespace {

Status CheckReadable(const std::string& what, const std::string& path) {
  std::error_code ec;
  if (path.empty()) return MakeError(ErrorCode::kInvalidInput, what + ": no file given");
  if (!std::filesystem::is_regular_file(path, ec))
    return MakeError(ErrorCode::kNotFound, what + " " + path + ": no such file");
  return OkStatus();
}

}  // namespace

Result<std::shared_ptr<ssl::context>> MakeServerTlsContext(const TlsOptions& tls) {
  POWERCTL_CHECK_OK(CheckReadable("TLS certificate", tls.cert_file));
  POWERCTL_CHECK_OK(CheckReadable("TLS key", tls.key_file));
  if (!tls.client_ca_file.empty())
    POWERCTL_CHECK_OK(CheckReadable("client CA", tls.client_ca_file));

  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_server);
  SSL_CTX* native = ctx->native_handle();
  ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                   ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 |
                   ssl::context::single_dh_use);
  SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION);
  SSL_CTX_set_options(native, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  SSL_CTX_set_cipher_list(native, "ECDHE+AESGCM:ECDHE+CHACHA20");
  boost::system::error_code ec;
  ctx->use_certificate_chain_file(tls.cert_file, ec);
  if (ec)
    return MakeError(
        ErrorCode::kInvalidInput,
        "TLS certificate " + tls.cert_file + ": not a PEM certificate (" + ec.message() + ")");
  ctx->use_private_key_file(tls.key_file, ssl::context::pem, ec);
  bool mismatch = ec && ec.message().find("mismatch") != std::string::npos;
  if (ec && !mismatch)
    return MakeError(ErrorCode::kInvalidInput,
                     "TLS key " + tls.key_file + ": not a PEM private key (" + ec.message() + ")");
  if (mismatch || SSL_CTX_check_private_key(native) != 1)
    return MakeError(ErrorCode::kInvalidInput,
                     "TLS key " + tls.key_file + " does not match certificate " + tls.cert_file);
  if (!tls.client_ca_file.empty()) {
    ctx->load_verify_file(tls.client_ca_file, ec);
    STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(tls.client_ca_file.c_str());
    if (ec || names == nullptr)
      return MakeError(ErrorCode::kInvalidInput,
                       "client CA " + tls.client_ca_file + ": no PEM certificate in it");
    SSL_CTX_set_client_CA_list(native, names);
    ctx->set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
    // Session resumption with client verification needs a session id context.
    static constexpr unsigned char kSessionContext[] = "powerctl-extender";
    SSL_CTX_set_session_id_context(native, kSessionContext, sizeof(kSessionContext) - 1);
  }
  return ctx;
}

namespace {

// What identifies the files' contents without reading them: a Secret volume update swaps a
// symlink (new inode), an editor or cert-manager rewrites the file (new mtime or size).
std::string FilesStamp(const TlsOptions& tls) {
  std::string stamp;
  for (const std::string* path : {&tls.cert_file, &tls.key_file, &tls.client_ca_file}) {
    struct stat st {};
    if (path->empty() || ::stat(path->c_str(), &st) != 0) {
      stamp += "-;";
      continue;
    }
    stamp += std::to_string(st.st_ino) + ":" + std::to_string(st.st_size) + ":" +
             std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec) + ";";
  }
  return stamp;
}

std::string FileList(const TlsOptions& tls) {
  std::string files = tls.cert_file + ", " + tls.key_file;
  if (!tls.client_ca_file.empty()) files += ", " + tls.client_ca_file;
  return files;
}

}  // namespace

Result<std::unique_ptr<TlsContextSource>> TlsContextSource::Create(
    TlsOptions options, std::function<void(bool, const std::string&)> on_reload) {
  std::string stamp = FilesStamp(options);
  POWERCTL_TRY(context, MakeServerTlsContext(options));
  return std::unique_ptr<TlsContextSource>(new TlsContextSource(
      std::move(options), std::move(context), std::move(stamp), std::move(on_reload)));
}

TlsContextSource::TlsContextSource(TlsOptions options, Context context, std::string stamp,
                                   std::function<void(bool, const std::string&)> on_reload)
    : options_(std::move(options)),
      on_reload_(std::move(on_reload)),
      context_(std::move(context)),
      stamp_(std::move(stamp)),
      next_check_(std::chrono::steady_clock::now() + options_.reload_interval) {}

TlsContextSource::Context TlsContextSource::Current() {
  std::lock_guard lock(mu_);
  if (options_.reload_interval.count() <= 0) return context_;
  auto now = std::chrono::steady_clock::now();
  if (now < next_check_) return context_;
  next_check_ = now + options_.reload_interval;
  std::string stamp = FilesStamp(options_);
  if (stamp == stamp_) return context_;
  // Remembered even when loading fails: a half-written pair is tried again when the other
  // file changes, not on every connection.
  stamp_ = stamp;
  auto loaded = MakeServerTlsContext(options_);
  if (!loaded.ok()) {
    if (on_reload_)
      on_reload_(false, "TLS files changed but do not load, keeping the previous ones: " +
                            loaded.error().message);
    return context_;
  }
  context_ = std::move(*loaded);
  if (on_reload_) on_reload_(true, "TLS files reloaded: " + FileList(options_));
  return context_;
}

std::string VerifiedPeerCommonName(void* ssl_handle) {
  SSL* ssl = static_cast<SSL*>(ssl_handle);
  if (ssl == nullptr || SSL_get_verify_result(ssl) != X509_V_OK) return "";
  X509* cert = SSL_get0_peer_certificate(ssl);
  if (cert == nullptr) return "";
  X509_NAME* subject = X509_get_subject_name(cert);
  int index = X509_NAME_get_index_by_NID(subject, NID_commonName, -1);
  if (index < 0) return "";
  ASN1_STRING* data = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, index));
  unsigned char* utf8 = nullptr;
  int length = ASN1_STRING_to_UTF8(&utf8, data);
  if (length < 0) return "";
  std::string cn(reinterpret_cast<char*>(utf8), static_cast<std::size_t>(length));
  OPENSSL_free(utf8);
  return cn;
}

}  // namespace powerctl::server::internal
