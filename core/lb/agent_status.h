#pragma once
// The lb-agent's GET /status document (kind LbAgentStatus), as `doctor` reads it from each
// agent pod through the API server's pod proxy. The body comes from a pod on a node, so it is
// untrusted: bounded parse, every field type-checked, displayed text made one printable line.

#include "core/common/result.h"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace powerctl::lb {

inline constexpr char kAgentStatusApiVersion[] = "powerctl.io/v1alpha1";
inline constexpr char kAgentStatusKind[] = "LbAgentStatus";

struct AgentServiceStatus {
  std::string namespace_;
  std::string name;
  std::string state;   // "balanced", "skipped", "failed" (other values are kept as sent)
  std::string reason;  // why skipped or failed; may be empty
  std::size_t ports = 0;
  std::size_t endpoints = 0;  // over all ports
};

struct AgentStatusSummary {
  std::string node;
  std::string mode;  // "nftables", "ipvs"
  bool synced = false;
  std::string last_sync;   // RFC 3339 as sent; "" when null (no sync finished)
  std::string last_error;  // "" when the last programming succeeded
  std::vector<AgentServiceStatus> services;

  std::size_t CountState(const std::string& state) const;
};

// The document already parsed (e.g. by kube::Client, which bounds it). kInvalidInput naming
// the field when it is not an LbAgentStatus of the expected shape. Unknown fields are ignored,
// so a newer agent's additions do not break an older doctor.
Result<AgentStatusSummary> AgentStatusFromJson(const nlohmann::json& document);

// The same from the body text: ParseJsonBounded first (depth and size checked before parsing).
Result<AgentStatusSummary> ParseAgentStatus(const std::string& body);

}  // namespace powerctl::lb
