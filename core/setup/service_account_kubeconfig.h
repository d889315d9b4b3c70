#pragma once
// `powerctl kubeconfig`: a kubeconfig that acts as a ServiceAccount, with a token from the
// TokenRequest API (authentication.k8s.io/v1, Kubernetes 1.20 on) and the cluster's address and
// CA from the caller's own connection. It is how kube-scheduler and the extender, run as
// processes out of the cluster, get their identities without kubectl.

#include "core/common/result.h"
#include "core/kube/client.h"
#include "core/kube/connection.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <string>

namespace powerctl::setup {

// The API server refuses tokens shorter than 10 minutes; a year bounds how long a leaked
// kubeconfig stays usable.
inline constexpr std::chrono::seconds kMinTokenDuration{600};
inline constexpr std::chrono::seconds kMaxTokenDuration{8760 * 3600};

// kInvalidInput outside [kMinTokenDuration, kMaxTokenDuration], naming both bounds.
Status CheckTokenDuration(std::chrono::seconds duration);

// POST /api/v1/namespaces/NS/serviceaccounts/NAME/token and its body.
std::string TokenRequestPath(const std::string& namespace_, const std::string& name);
nlohmann::json TokenRequestBody(std::chrono::seconds duration);

struct ServiceAccountToken {
  std::string token;
  std::string expiration;  // status.expirationTimestamp (RFC 3339); the server may shorten it
};

// Asks the API server for a token. Errors: kInvalidInput for a name or namespace that is not
// a DNS label/subdomain or a duration out of bounds; kNotFound naming the ServiceAccount;
// kForbidden naming the rule to grant (create on serviceaccounts/token); kApi when the answer
// holds no token.
Result<ServiceAccountToken> RequestServiceAccountToken(kube::Client& client,
                                                       const std::string& namespace_,
                                                       const std::string& name,
                                                       std::chrono::seconds duration);

// The kubeconfig (YAML): one cluster (`cluster`'s server, CA data, tls-server-name,
// insecure-skip-tls-verify), one user with the token, one context NAME in namespace NS, set as
// current-context. Only the cluster fields of `cluster` are read, never its credentials.
std::string RenderServiceAccountKubeconfig(const kube::ClusterConnection& cluster,
                                           const std::string& namespace_, const std::string& name,
                                           const std::string& token);

}  // namespace powerctl::setup
