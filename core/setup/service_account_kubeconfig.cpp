#include "core/setup/service_account_kubeconfig.h"

#include "core/common/duration.h"
#include "core/common/encoding.h"
#include "core/common/json_fields.h"
#include "core/common/names.h"
#include "core/common/yaml.h"

#include <fmt/format.h>

namespace powerctl::setup {

using ordered_json = nlohmann::ordered_json;

Status CheckTokenDuration(std::chrono::seconds duration) {
  if (duration >= kMinTokenDuration && duration <= kMaxTokenDuration) return OkStatus();
  return MakeError(ErrorCode::kInvalidInput,
                   fmt::format("--duration {} is out of range: a token lasts from {} to {}",
                               FormatDuration(duration), FormatDuration(kMinTokenDuration),
                               FormatDuration(kMaxTokenDuration)));
}

std::string TokenRequestPath(const std::string& namespace_, const std::string& name) {
  return "/api/v1/namespaces/" + namespace_ + "/serviceaccounts/" + name + "/token";
}

nlohmann::json TokenRequestBody(std::chrono::seconds duration) {
  return {{"apiVersion", "authentication.k8s.io/v1"},
          {"kind", "TokenRequest"},
          {"spec", {{"expirationSeconds", duration.count()}}}};
}

Result<ServiceAccountToken> RequestServiceAccountToken(kube::Client& client,
                                                       const std::string& namespace_,
                                                       const std::string& name,
                                                       std::chrono::seconds duration) {
  // The names become path segments, so they are checked before any request is made.
  if (std::string why = ValidateDnsSubdomain(name); !why.empty()) {
    return MakeError(ErrorCode::kInvalidInput, "ServiceAccount name \"" + name + "\": " + why);
  }
  if (std::string why = ValidateDnsLabel(namespace_); !why.empty()) {
    return MakeError(ErrorCode::kInvalidInput, "namespace \"" + namespace_ + "\": " + why);
  }
  POWERCTL_CHECK_OK(CheckTokenDuration(duration));
  auto answer = client.Create(TokenRequestPath(namespace_, name), TokenRequestBody(duration));
  if (!answer.ok()) {
    const Error& e = answer.error();
    if (e.code == ErrorCode::kNotFound) {
      return MakeError(ErrorCode::kNotFound,
                       fmt::format("ServiceAccount \"{}\" not found in namespace \"{}\" ({}); "
                                   "`powerctl apply rbac` creates powerctl's ServiceAccounts",
                                   name, namespace_, e.message));
    }
    return WithContext(e, fmt::format("token for ServiceAccount {}/{}", namespace_, name));
  }
  ServiceAccountToken token;
  token.token = StringField(*answer, {"status", "token"});
  token.expiration = StringField(*answer, {"status", "expirationTimestamp"});
  if (token.token.empty()) {
    return MakeError(ErrorCode::kApi, fmt::format("the API server's TokenRequest answer for "
                                                  "ServiceAccount {}/{} holds no token",
                                                  namespace_, name));
  }
  return token;
}

std::string RenderServiceAccountKubeconfig(const kube::ClusterConnection& cluster,
                                           const std::string& namespace_, const std::string& name,
                                           const std::string& token) {
  ordered_json server = {{"server", cluster.server}};
  if (!cluster.ca_pem.empty()) {
    server["certificate-authority-data"] = Base64Encode(cluster.ca_pem);
  }
  if (!cluster.tls_server_name.empty()) server["tls-server-name"] = cluster.tls_server_name;
  if (cluster.insecure_skip_tls_verify) server["insecure-skip-tls-verify"] = true;
  ordered_json config = {
      {"apiVersion", "v1"},
      {"kind", "Config"},
      {"clusters", ordered_json::array({{{"name", "cluster"}, {"cluster", server}}})},
      {"users", ordered_json::array({{{"name", name}, {"user", {{"token", token}}}}})},
      {"contexts",
       ordered_json::array(
           {{{"name", name},
             {"context", {{"cluster", "cluster"}, {"user", name}, {"namespace", namespace_}}}}})},
      {"current-context", name},
  };
  return EmitYaml(config);
}

}  // namespace powerctl::setup
