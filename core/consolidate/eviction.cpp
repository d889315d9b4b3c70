#include "core/consolidate/eviction.h"

#include "core/common/json_fields.h"
#include "core/kube/client.h"

#include <fmt/format.h>

#include <algorithm>

namespace powerctl::consolidate {

using json = nlohmann::json;

std::string EvictionApiVersion(const kube::ServerVersion& server) {
  const bool v1 = server.major > 1 || (server.major == 1 && server.minor >= 22);
  return v1 ? "policy/v1" : "policy/v1beta1";
}

json EvictionObject(const json& pod, const std::string& api_version, bool dry_run) {
  json eviction = {{"apiVersion", api_version},
                   {"kind", "Eviction"},
                   {"metadata",
                    {{"name", StringField(pod, {"metadata", "name"})},
                     {"namespace", StringField(pod, {"metadata", "namespace"})}}}};
  if (dry_run) eviction["deleteOptions"] = {{"dryRun", json::array({"All"})}};
  return eviction;
}

std::string CoveringBudgets(const json& pod, const std::vector<DisruptionBudget>& budgets) {
  std::string out;
  for (const DisruptionBudget& b : budgets) {
    if (!b.Covers(pod)) continue;
    if (!out.empty()) out += ", ";
    out += fmt::format("PodDisruptionBudget {}/{} (allows {} disruption(s))", b.namespace_, b.name,
                       b.disruptions_allowed);
  }
  return out;
}

Status EvictPod(kube::Client& client, const json& pod, const EvictRequest& request,
                const Clock& clock) {
  const std::string ns = StringField(pod, {"metadata", "namespace"});
  const std::string name = StringField(pod, {"metadata", "name"});
  const std::string path = "/api/v1/namespaces/" + ns + "/pods/" + name + "/eviction";
  const json body = EvictionObject(pod, request.api_version, request.dry_run);
  std::chrono::milliseconds backoff = request.first_backoff;
  while (true) {
    // The client retries a 429 a few times quickly itself; what is still refused comes back
    // as kApi with the status named, and is waited out here on the drain's own deadline.
    auto created = client.Create(path, body, request.dry_run);
    if (created.ok()) return OkStatus();
    const Error& error = created.error();
    if (error.code == ErrorCode::kNotFound) return OkStatus();  // gone already
    if (error.message.find("(HTTP 429,") == std::string::npos) return error;
    if (clock.now() + backoff > request.deadline) {
      std::string blocking =
          request.budgets != nullptr ? CoveringBudgets(pod, *request.budgets) : std::string();
      if (blocking.empty()) blocking = "no PodDisruptionBudget powerctl read covers it";
      return MakeError(ErrorCode::kConflict,
                       fmt::format("evicting pod {}/{}: still refused at the deadline: {}; {}", ns,
                                   name, error.message, blocking));
    }
    if (request.waiting) {
      request.waiting(fmt::format("pod {}/{}: eviction refused ({}), retrying in {}s", ns, name,
                                  error.message, (backoff.count() + 999) / 1000));
    }
    clock.sleep(backoff);
    backoff = std::min(backoff * 2, request.max_backoff);
  }
}

}  // namespace powerctl::consolidate
