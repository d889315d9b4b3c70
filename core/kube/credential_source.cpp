#include "core/kube/credential_source.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <fstream>
#include <sstream>
#include <system_error>
#include <utility>

namespace powerctl::kube {
namespace {

// Refresh exec credentials a little before they expire, so that a request sent just before
// the deadline does not arrive just after it.
constexpr auto kExpirySlack = std::chrono::seconds(30);

std::string TrimSpace(std::string s) {
  auto not_space = [](unsigned char c) { return !std::isspace(c); };
  s.erase(s.begin(), std::find_if(s.begin(), s.end(), not_space));
  s.erase(std::find_if(s.rbegin(), s.rend(), not_space).base(), s.end());
  return s;
}

}  // namespace

CredentialSource::CredentialSource(ClusterConnection connection,
                                   std::map<std::string, std::string> environment)
    : connection_(std::move(connection)), environment_(std::move(environment)) {}

Result<CurrentCredential> CredentialSource::Get() {
  std::lock_guard lock(mu_);
  const Credentials& creds = connection_.credentials;
  CurrentCredential out{creds.token, creds.client_cert_pem, creds.client_key_pem};
  if (creds.exec) {
    bool fresh =
        exec_.has_value() &&
        (!exec_->expires || std::chrono::system_clock::now() + kExpirySlack < *exec_->expires);
    if (!fresh) {
      Result<ExecCredential> ran = RunExecPlugin(*creds.exec, connection_, environment_);
      if (!ran.ok()) return ran.error();
      exec_ = std::move(ran).value();
    }
    // A plugin may return a token, a client certificate or both; what it leaves out
    // falls back to the kubeconfig's own fields.
    if (!exec_->token.empty()) out.token = exec_->token;
    if (!exec_->client_cert_pem.empty()) {
      out.cert_pem = exec_->client_cert_pem;
      out.key_pem = exec_->client_key_pem;
    }
  } else if (!creds.token_file.empty()) {
    Status read = RefreshTokenFile(false);
    if (!read.ok()) return read.error();
    out.token = file_token_;
  }
  return out;
}

bool CredentialSource::Invalidate(const std::string& rejected_token) {
  std::lock_guard lock(mu_);
  if (connection_.credentials.exec) {
    exec_.reset();
    return true;
  }
  if (!connection_.credentials.token_file.empty()) {
    return RefreshTokenFile(true).ok() && file_token_ != rejected_token;
  }
  return false;
}

// Rotation replaces the file (kubelet swaps a symlink), so a new mtime, size or inode
// means a new token; a stat per request is cheap next to the request itself.
Status CredentialSource::RefreshTokenFile(bool force) {
  const std::string& path = connection_.credentials.token_file;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    int err = errno;
    if (!file_token_.empty()) return OkStatus();  // keep the last token while the file is swapped
    return MakeError(ErrorCode::kIo, "cannot read token file " + path + ": " +
                                         std::error_code(err, std::generic_category()).message());
  }
  std::tuple<long, long, long, unsigned long> stamp{
      static_cast<long>(st.st_mtim.tv_sec), static_cast<long>(st.st_mtim.tv_nsec),
      static_cast<long>(st.st_size), static_cast<unsigned long>(st.st_ino)};
  if (!force && stamp == file_stamp_ && !file_token_.empty()) return OkStatus();
  std::ifstream in(path, std::ios::binary);
  std::stringstream contents;
  contents << in.rdbuf();
  if (!in) return MakeError(ErrorCode::kIo, "cannot read token file " + path);
  std::string token = TrimSpace(contents.str());
  if (token.empty()) return MakeError(ErrorCode::kInvalidInput, "token file " + path + " is empty");
  file_token_ = std::move(token);
  file_stamp_ = stamp;
  return OkStatus();
}

}  // namespace powerctl::kube
