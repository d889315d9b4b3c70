#pragma once
// Internal to connection resolution (core/kube/connection.cpp, kubeconfig_*.cpp): the merged
// kubeconfig and the helpers its parts share. Not part of the public API; use
// core/kube/connection.h.
//
//   kubeconfig_load.cpp     finding, reading and merging kubeconfig files
//   kubeconfig_stanzas.cpp  cluster and user stanzas -> ClusterConnection fields
//   connection.cpp          ResolveConnection: context selection, in-cluster fallback

#include "core/common/result.h"
#include "core/kube/connection.h"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace powerctl::kube::detail {

using Json = nlohmann::ordered_json;

inline constexpr std::size_t kMaxPemBytes = 1 << 20;

inline Error Invalid(std::string message) {
  return MakeError(ErrorCode::kInvalidInput, std::move(message));
}

inline std::string Env(const ConnectionRequest& request, const std::string& name) {
  auto it = request.environment.find(name);
  return it == request.environment.end() ? std::string() : it->second;
}

// ---------------------------------------------------------------------------------------------
// kubeconfig_load.cpp
// ---------------------------------------------------------------------------------------------

// ENOENT is kNotFound so that missing KUBECONFIG entries can be skipped, as kubectl does.
Result<std::string> ReadFileLimited(const std::string& path, std::size_t max_bytes);

// Reads a file that a kubeconfig names (certificate-authority, client-certificate, client-key,
// tokenFile). ReadFileLimited in production; the kubeconfig fuzzer passes one that reads
// nothing, so resolving a context touches no file beyond its input.
using FileReader = Result<std::string> (*)(const std::string& path, std::size_t max_bytes);

// Absent and null read as "", as Go leaves the field at its zero value.
Result<std::string> GetString(const Json& object, const char* key, const std::string& where);
Result<bool> GetBool(const Json& object, const char* key, const std::string& where);

// A cluster, user or context and the file that defined it (relative paths resolve there).
struct Stanza {
  Json body;
  std::string file;
};

struct Kubeconfig {
  std::vector<std::string> files;  // read, in precedence order
  std::map<std::string, Stanza> clusters;
  std::map<std::string, Stanza> users;
  std::map<std::string, Stanza> contexts;
  std::string current_context;
  std::string current_context_file;

  bool Empty() const {
    return clusters.empty() && users.empty() && contexts.empty() && current_context.empty();
  }
};

// Merges one file: the first file to define a name keeps it, like client-go's loader.
Status MergeFile(const std::string& path, std::string_view text, Kubeconfig& config);

// --kubeconfig alone; else every $KUBECONFIG entry (deduplicated); else ~/.kube/config.
std::vector<std::string> KubeconfigPaths(const ConnectionRequest& request);

// ---------------------------------------------------------------------------------------------
// kubeconfig_stanzas.cpp
// ---------------------------------------------------------------------------------------------

// Sets out's server and TLS fields from the cluster stanza `name`. kInvalidInput naming the
// cluster and file.
Status ApplyCluster(const std::string& name, const Stanza& stanza, ClusterConnection& out,
                    FileReader read = ReadFileLimited);

// Sets out.credentials from the user stanza `name`; rejects what powerctl does not support
// (auth providers, basic auth, impersonation). kInvalidInput naming the user and file.
Status ApplyUser(const std::string& name, const Stanza& stanza, ClusterConnection& out,
                 FileReader read = ReadFileLimited);

// ---------------------------------------------------------------------------------------------
// connection.cpp, exec_plugin.cpp
// ---------------------------------------------------------------------------------------------

// The context --context (request.context_flag) or current-context selects, with its cluster
// and user applied. kInvalidInput naming the context and the files.
Result<ClusterConnection> FromKubeconfig(const ConnectionRequest& request, const Kubeconfig& config,
                                         FileReader read = ReadFileLimited);

// Validates an exec plugin's stdout as the ExecCredential `exec` asks for. kInvalidInput
// "exec plugin <name>: ..." that never quotes the output (it holds the credential).
Result<ExecCredential> ParseExecCredential(const std::string& output, const ExecConfig& exec,
                                           const std::string& name);

}  // namespace powerctl::kube::detail
