// ErrorFromResponse: a non-2xx API response as an Error a user can act on. The server's
// Status message is kept; a 403 also names the RBAC rule that would allow the request,
// derived from the method and path the way the API server's request-info resolver does.
// Request bodies are never quoted (they may hold Secret data); response bodies only when
// they are not a Status, and then at most 200 characters.

#include "core/common/encoding.h"
#include "core/common/json_bounds.h"
#include "core/common/json_fields.h"
#include "core/kube/client.h"

#include <string>
#include <string_view>
#include <vector>

namespace powerctl::kube {
namespace {

constexpr std::size_t kMaxExcerpt = 200;

struct ApiStatus {
  bool present = false;
  std::string message;
  std::string reason;
  std::string name;                 // details.name
  std::vector<std::string> causes;  // "field: message"
};

ApiStatus ParseStatus(const std::string& body) {
  ApiStatus status;
  json parsed = ParseJsonBounded(body, kKubeJsonLimits);
  if (parsed.is_discarded() || StringField(parsed, {"kind"}) != "Status") return status;
  status.present = true;
  status.message = StringField(parsed, {"message"});
  status.reason = StringField(parsed, {"reason"});
  status.name = StringField(parsed, {"details", "name"});
  if (status.message.empty()) status.message = status.reason;
  const json* causes = FindField(parsed, {"details", "causes"});
  if (causes == nullptr || !causes->is_array()) return status;
  for (const json& cause : *causes) {
    std::string field = StringField(cause, {"field"});
    std::string message = StringField(cause, {"message"});
    if (message.empty()) continue;
    status.causes.push_back(field.empty() ? message : field + ": " + message);
  }
  return status;
}

std::string Excerpt(const std::string& body) {
  std::string_view text = body;
  while (!text.empty() && (static_cast<unsigned char>(text.back()) <= 0x20 ||
                           static_cast<unsigned char>(text.back()) == 0x7f)) {
    text.remove_suffix(1);
  }
  if (text.empty()) return "(empty body)";
  // One line, no terminal escapes, never cut inside a character: the message may be served
  // as JSON, whose strict dump() throws on invalid UTF-8.
  return ExcerptForMessage(text, kMaxExcerpt);
}

// What RBAC sees in a request: apiGroup, resource[/subresource], namespace and verb; or a
// non-resource URL (/version, /healthz, discovery).
struct RbacTarget {
  std::string group;
  std::string resource;
  std::string name;
  std::string namespace_;
  std::string non_resource_url;
  bool watch = false;
};

std::vector<std::string> Split(std::string_view text, char separator) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(separator, start);
    if (end == std::string_view::npos) end = text.size();
    if (end > start) parts.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

RbacTarget ParseTarget(const std::string& path_and_query) {
  RbacTarget target;
  size_t question = path_and_query.find('?');
  std::string path = path_and_query.substr(0, question);
  if (question != std::string::npos) {
    for (const std::string& param : Split(path_and_query.substr(question + 1), '&')) {
      if (param == "watch=1" || param == "watch=true") target.watch = true;
    }
  }
  std::vector<std::string> parts = Split(path, '/');
  size_t first = 0;
  if (parts.size() >= 3 && parts[0] == "api") {
    first = 2;  // /api/v1/...: the core group ""
  } else if (parts.size() >= 4 && parts[0] == "apis") {
    target.group = parts[1];
    first = 3;
  } else {
    target.non_resource_url = path.empty() ? "/" : path;
    return target;
  }
  std::vector<std::string> rest(parts.begin() + static_cast<long>(first), parts.end());
  // /namespaces/NS/RESOURCE... is namespaced; /namespaces/NS[/status|/finalize] is the
  // Namespace object itself.
  bool namespace_subresource = rest.size() == 3 && (rest[2] == "status" || rest[2] == "finalize");
  if (rest.size() >= 3 && rest[0] == "namespaces" && !namespace_subresource) {
    target.namespace_ = rest[1];
    rest.erase(rest.begin(), rest.begin() + 2);
  }
  target.resource = rest[0];
  if (rest.size() > 1) target.name = rest[1];
  if (rest.size() > 2) target.resource += "/" + rest[2];
  return target;
}

std::string Verb(const std::string& method, const RbacTarget& target) {
  if (!target.non_resource_url.empty()) {
    std::string verb;
    for (char c : method) verb += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    return verb;
  }
  if (method == "GET" || method == "HEAD") {
    if (target.watch) return "watch";
    return target.name.empty() ? "list" : "get";
  }
  if (method == "POST") return "create";
  if (method == "PUT") return "update";
  if (method == "PATCH") return "patch";
  if (method == "DELETE") return target.name.empty() ? "deletecollection" : "delete";
  return method;
}

std::string Grant(const std::string& method, const std::string& path) {
  RbacTarget target = ParseTarget(path);
  std::string verbs = "verbs [\"" + Verb(method, target) + "\"]";
  if (!target.non_resource_url.empty()) {
    return "nonResourceURLs [\"" + target.non_resource_url + "\"], " + verbs;
  }
  std::string rule =
      "apiGroups [\"" + target.group + "\"], resources [\"" + target.resource + "\"], " + verbs;
  if (!target.namespace_.empty()) rule += " in namespace \"" + target.namespace_ + "\"";
  return rule;
}

}  // namespace

Error ErrorFromResponse(const std::string& method, const std::string& path,
                        const HttpResponse& response, const std::string& connection_description) {
  ApiStatus status = ParseStatus(response.body);
  const std::string request = method + " " + path.substr(0, path.find('?'));
  const std::string code = std::to_string(response.status);
  // The server's own words when it sent a Status; otherwise the request and a body excerpt.
  const std::string said =
      status.present ? status.message
                     : "HTTP " + code + " from " + request + ": " + Excerpt(response.body);
  switch (response.status) {
    case 401: {
      std::string of = connection_description.empty() ? "" : " of " + connection_description;
      return MakeError(ErrorCode::kApi,
                       "unauthorized: the server rejected the credentials" + of +
                           " (the token may have expired or been revoked, or the client "
                           "certificate is not signed by the cluster's CA)");
    }
    case 403:
      return MakeError(ErrorCode::kForbidden,
                       "forbidden: " + said + "; grant: " + Grant(method, path));
    case 404:
      // Without a name in the Status the resource type itself is unknown (a missing CRD or
      // API group), so say which path.
      if (status.present && status.name.empty())
        return MakeError(ErrorCode::kNotFound, said + " (" + request + ")");
      return MakeError(ErrorCode::kNotFound, said);
    case 409: {
      std::string message = said;
      bool apply = method == "PATCH" && path.find("fieldManager=") != std::string::npos;
      if (apply && status.message.rfind("Apply failed", 0) == 0) {
        message += "; re-run with --force-conflicts to take ownership of these fields";
      }
      return MakeError(ErrorCode::kConflict, message);
    }
    case 422: {
      std::string message = said;
      for (const std::string& cause : status.causes) {
        if (message.find(cause) == std::string::npos) message += "; " + cause;
      }
      return MakeError(ErrorCode::kApi, message);
    }
    default:
      return MakeError(ErrorCode::kApi,
                       status.present ? said + " (HTTP " + code + ", " + request + ")" : said);
  }
}

}  // namespace powerctl::kube
