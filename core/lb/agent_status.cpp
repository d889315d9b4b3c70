#include "core/lb/agent_status.h"

#include "core/common/json_bounds.h"

#include <fmt/format.h>

#include <algorithm>

namespace powerctl::lb {
namespace {

using json = nlohmann::json;

// The document is 7 levels deep (status, services, service, ports, port, endpoints,
// endpoint); a cluster's worth of Services and endpoints stays well under 16 MiB.
constexpr JsonLimits kStatusLimits{16, 16 << 20};
// What doctor prints of one sent string (an nft error is a line or two).
constexpr std::size_t kMaxText = 300;

Error Invalid(const std::string& what) {
  return MakeError(ErrorCode::kInvalidInput, "lb-agent status: " + what);
}

// One printable line, at most kMaxText bytes, cut on a UTF-8 boundary: the text ends up in
// doctor's table and a terminal must not interpret any of it. (nlohmann only accepts valid
// UTF-8 strings, so only control characters need replacing.)
std::string OneLine(const std::string& text) {
  std::string out;
  out.reserve(std::min(text.size(), kMaxText + 3));
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    out += (byte < 0x20 || byte == 0x7f) ? ' ' : c;
  }
  if (out.size() > kMaxText) {
    std::size_t cut = kMaxText;
    while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;
    out.resize(cut);
    out += "...";
  }
  return out;
}

// A string field: required (missing or another type is an error) or optional ("" if missing).
Result<std::string> StatusString(const json& object, const char* key, const std::string& where,
                                 bool required) {
  auto it = object.find(key);
  if (it == object.end()) {
    if (required) return Invalid(fmt::format("{}{} is missing", where, key));
    return std::string();
  }
  if (!it->is_string()) return Invalid(fmt::format("{}{} is not a string", where, key));
  return OneLine(it->get<std::string>());
}

Result<const json*> ArrayField(const json& object, const char* key, const std::string& where) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return static_cast<const json*>(nullptr);
  if (!it->is_array()) return Invalid(fmt::format("{}{} is not a list", where, key));
  return &*it;
}

Result<AgentServiceStatus> ServiceFromJson(const json& item, std::size_t index) {
  const std::string where = fmt::format("services[{}].", index);
  if (!item.is_object()) return Invalid(fmt::format("services[{}] is not an object", index));
  AgentServiceStatus s;
  POWERCTL_TRY(ns, StatusString(item, "namespace", where, true));
  POWERCTL_TRY(name, StatusString(item, "name", where, true));
  POWERCTL_TRY(state, StatusString(item, "state", where, true));
  POWERCTL_TRY(reason, StatusString(item, "reason", where, false));
  if (ns.empty() || name.empty() || state.empty()) {
    return Invalid(where + "namespace, name and state must not be empty");
  }
  s.namespace_ = std::move(ns);
  s.name = std::move(name);
  s.state = std::move(state);
  s.reason = std::move(reason);
  POWERCTL_TRY(ports, ArrayField(item, "ports", where));
  if (ports != nullptr) {
    for (std::size_t p = 0; p < ports->size(); ++p) {
      const json& port = (*ports)[p];
      const std::string port_where = fmt::format("{}ports[{}].", where, p);
      if (!port.is_object()) return Invalid(fmt::format("{}ports[{}] is not an object", where, p));
      POWERCTL_TRY(endpoints, ArrayField(port, "endpoints", port_where));
      ++s.ports;
      if (endpoints != nullptr) s.endpoints += endpoints->size();
    }
  }
  return s;
}

}  // namespace

std::size_t AgentStatusSummary::CountState(const std::string& state) const {
  return static_cast<std::size_t>(
      std::count_if(services.begin(), services.end(),
                    [&](const AgentServiceStatus& s) { return s.state == state; }));
}

Result<AgentStatusSummary> AgentStatusFromJson(const json& doc) {
  if (!doc.is_object()) return Invalid("not a JSON object");
  if (doc.value("apiVersion", json()) != kAgentStatusApiVersion ||
      doc.value("kind", json()) != kAgentStatusKind) {
    return Invalid(fmt::format("not a {}/{} document", kAgentStatusApiVersion, kAgentStatusKind));
  }
  AgentStatusSummary out;
  POWERCTL_TRY(node, StatusString(doc, "node", "", true));
  if (node.empty()) return Invalid("node must not be empty");  // doctor names agents by node
  POWERCTL_TRY(mode, StatusString(doc, "mode", "", false));
  POWERCTL_TRY(last_error, StatusString(doc, "lastError", "", false));
  out.node = std::move(node);
  out.mode = std::move(mode);
  out.last_error = std::move(last_error);
  auto synced = doc.find("synced");
  if (synced == doc.end() || !synced->is_boolean()) return Invalid("synced is not true or false");
  out.synced = synced->get<bool>();
  auto last_sync = doc.find("lastSync");
  if (last_sync != doc.end() && !last_sync->is_null()) {
    if (!last_sync->is_string()) return Invalid("lastSync is not a string or null");
    out.last_sync = OneLine(last_sync->get<std::string>());
  }
  POWERCTL_TRY(services, ArrayField(doc, "services", ""));
  if (services != nullptr) {
    out.services.reserve(services->size());
    for (std::size_t i = 0; i < services->size(); ++i) {
      POWERCTL_TRY(service, ServiceFromJson((*services)[i], i));
      out.services.push_back(std::move(service));
    }
  }
  return out;
}

Result<AgentStatusSummary> ParseAgentStatus(const std::string& body) {
  if (auto violation = JsonBoundsViolation(body, kStatusLimits)) {
    return Invalid("the body " + *violation);
  }
  json doc = ParseJsonBounded(body, kStatusLimits);
  if (doc.is_discarded()) return Invalid("the body is not valid JSON");
  return AgentStatusFromJson(doc);
}

}  // namespace powerctl::lb
