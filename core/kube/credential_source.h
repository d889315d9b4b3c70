#pragma once
// The credential for the next request to the API server, from a ClusterConnection: an
// exec plugin's (cached until shortly before it expires), a token file's (re-read when
// the file changes, as projected service-account tokens rotate) or the static token and
// client certificate. Internal to the curl transport; separate so it can be unit-tested.

#include "core/common/result.h"
#include "core/kube/connection.h"

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>

namespace powerctl::kube {

struct CurrentCredential {
  std::string token;  // bearer token, "" for none
  std::string cert_pem;
  std::string key_pem;
};

class CredentialSource {
 public:
  CredentialSource(ClusterConnection connection, std::map<std::string, std::string> environment);

  // Thread-safe. Errors: those of RunExecPlugin, kIo for an unreadable token file.
  Result<CurrentCredential> Get();
  // After a 401 with `rejected_token`: forgets what can be fetched again. True when a retry
  // can succeed (the exec plugin will run again, or the token file now holds another token).
  bool Invalidate(const std::string& rejected_token);

 private:
  Status RefreshTokenFile(bool force);

  std::mutex mu_;
  const ClusterConnection connection_;
  const std::map<std::string, std::string> environment_;
  std::optional<ExecCredential> exec_;
  std::string file_token_;
  std::tuple<long, long, long, unsigned long> file_stamp_{};  // mtime s/ns, size, inode
};

}  // namespace powerctl::kube
