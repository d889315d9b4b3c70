// Fuzzes kubeconfig reading as ResolveConnection does it, without the filesystem: the input is
// one kubeconfig file (YAML or JSON) merged by MergeFile, then FromKubeconfig resolves the
// current-context and every defined context (as --context would), with a FileReader that
// reads nothing (a stanza naming a file gets "not found"). The same input is also read as an
// exec credential plugin's stdout (ParseExecCredential, for both API versions).
//
// Checks beyond "no crash, no exception": errors are kInvalidInput; a resolved connection has
// a server, the context it was asked for, a namespace, and a client certificate only together
// with its key; an exec config has a command, a known API version and interactive mode; an
// accepted ExecCredential has a token or a certificate and key.
//
// Run: tests/fuzz/run.sh kubeconfig_fuzzer

#include "core/kube/connection.h"
#include "core/kube/connection_internal.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace {

namespace kube = powerctl::kube;
using powerctl::ErrorCode;
using powerctl::Result;

[[noreturn]] void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "kubeconfig_fuzzer: %s\n  %s\n", what, detail.c_str());
  __builtin_trap();
}

Result<std::string> NoFiles(const std::string& path, std::size_t /*max_bytes*/) {
  return powerctl::MakeError(ErrorCode::kNotFound, "cannot read " + path + ": fuzzing");
}

void CheckResolved(const Result<kube::ClusterConnection>& resolved, const std::string& wanted) {
  if (!resolved.ok()) {
    if (resolved.error().code != ErrorCode::kInvalidInput) {
      Fail("a kubeconfig error is not kInvalidInput", resolved.error().message);
    }
    return;
  }
  const kube::ClusterConnection& c = *resolved;
  if (c.server.empty()) Fail("a connection without a server", c.description);
  if (c.context_name != wanted) Fail("resolved another context", c.context_name + " != " + wanted);
  if (c.namespace_.empty()) Fail("a connection without a namespace", c.description);
  if (c.insecure_skip_tls_verify && !c.ca_pem.empty()) Fail("insecure with a CA", c.description);
  const kube::Credentials& creds = c.credentials;
  if (creds.client_cert_pem.empty() != creds.client_key_pem.empty()) {
    Fail("a client certificate without its key (or the reverse)", c.description);
  }
  if (creds.exec) {
    const kube::ExecConfig& exec = *creds.exec;
    if (exec.command.empty()) Fail("an exec plugin without a command", c.description);
    if (exec.api_version != "client.authentication.k8s.io/v1" &&
        exec.api_version != "client.authentication.k8s.io/v1beta1") {
      Fail("an exec plugin with an unsupported apiVersion", exec.api_version);
    }
    if (exec.interactive_mode != "Never" && exec.interactive_mode != "IfAvailable" &&
        exec.interactive_mode != "Always") {
      Fail("an exec plugin with an unknown interactiveMode", exec.interactive_mode);
    }
  }
}

void FuzzExecCredential(const std::string& output) {
  for (const char* version :
       {"client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1"}) {
    kube::ExecConfig exec;
    exec.api_version = version;
    exec.command = "plugin";
    auto cred = kube::detail::ParseExecCredential(output, exec, "plugin");
    if (!cred.ok()) {
      if (cred.error().code != ErrorCode::kInvalidInput) {
        Fail("an exec credential error is not kInvalidInput", cred.error().message);
      }
      continue;
    }
    if (cred->token.empty() && (cred->client_cert_pem.empty() || cred->client_key_pem.empty())) {
      Fail("an ExecCredential without a token or a certificate and key was accepted", "");
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  FuzzExecCredential(text);

  kube::detail::Kubeconfig config;
  const auto merged = kube::detail::MergeFile("/fuzz/kubeconfig", text, config);
  if (!merged.ok()) {
    if (merged.error().code != ErrorCode::kInvalidInput) {
      Fail("a MergeFile error is not kInvalidInput", merged.error().message);
    }
    return 0;
  }
  kube::ConnectionRequest request;
  CheckResolved(kube::detail::FromKubeconfig(request, config, NoFiles), config.current_context);
  int contexts = 0;
  for (const auto& entry : config.contexts) {
    if (entry.first.empty()) continue;  // --context "" means "no flag"
    if (++contexts > 8) break;          // each costs the same; a few cover the paths
    request.context_flag = entry.first;
    CheckResolved(kube::detail::FromKubeconfig(request, config, NoFiles), entry.first);
  }
  return 0;
}
