#pragma once
// An in-memory Kubernetes API server behind kube::HttpTransport, for tests of core/setup.
//
// Objects are stored by their REST path (kube::ObjectPath). The server understands what
// powerctl sends: GET of objects and collections (equality label selectors), POST, server-side
// apply (a recursive merge; the resourceVersion moves only when the object changed), JSON merge
// patch, DELETE, dry runs, /version and SelfSubjectAccessReviews (answered from a deny-list). It
// behaves like a real server where that keeps the code under test honest: namespaced objects
// need their Namespace, custom resources need an established CRD, and apply needs a
// fieldManager. Errors can be injected by path prefix, and every request is recorded so tests
// can assert what was (not) sent.
//
// Controllers are simulated on write: CRDs become Established, Deployments are available (or,
// with SetDeploymentsAvailable(false), have a Pending pod whose PodScheduled=False message says
// why), and DaemonSets run one such pod on each Node stored before them. Paths the object
// routes do not serve (e.g. a pod's proxy) answer what SetRawResponse says.

#include "core/common/clock.h"
#include "core/kube/client.h"
#include "core/kube/resources.h"
#include "core/kube/transport.h"
#include "tests/unit/fake_transport.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <ctime>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace powerctl::kube::fake {

// One request as the server saw it.
struct RecordedRequest {
  std::string method;
  std::string path;                          // without the query
  std::map<std::string, std::string> query;  // percent-decoded
  std::string content_type;
  std::string body;

  std::string Query(const std::string& key) const {
    auto it = query.find(key);
    return it == query.end() ? "" : it->second;
  }
  // dryRun=All in the query (create, patch) or in the DeleteOptions body (delete).
  bool dry_run() const {
    if (Query("dryRun") == "All") return true;
    if (method != "DELETE" || body.empty()) return false;
    json options = json::parse(body, nullptr, false);
    return options.is_object() && options.contains("dryRun") &&
           options["dryRun"] == json::array({"All"});
  }
  bool IsAccessReview() const {
    return path == "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";
  }
  // A request that may change the cluster. SelfSubjectAccessReviews are POSTs that change
  // nothing, so they do not count.
  bool mutating() const { return method != "GET" && !IsAccessReview(); }
};

// For gtest's messages: "PATCH /api/v1/nodes/n1".
inline void PrintTo(const RecordedRequest& r, std::ostream* os) {
  *os << r.method << " " << r.path;
}

namespace internal {

inline std::string PercentDecode(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size()) {
      out += static_cast<char>(std::stoi(std::string(text.substr(i + 1, 2)), nullptr, 16));
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

inline std::vector<std::string> Split(std::string_view text, char separator) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find(separator, start);
    if (end == std::string_view::npos) end = text.size();
    if (end > start) parts.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

inline std::string Trim(const std::string& text) {
  std::size_t begin = text.find_first_not_of(' ');
  if (begin == std::string::npos) return "";
  return text.substr(begin, text.find_last_not_of(' ') - begin + 1);
}

// RFC 7386: objects merge key by key, null removes a key, anything else replaces.
inline void MergePatch(json& target, const json& patch) {
  if (!patch.is_object()) {
    target = patch;
    return;
  }
  if (!target.is_object()) target = json::object();
  for (const auto& [key, value] : patch.items()) {
    if (value.is_null()) {
      target.erase(key);
    } else {
      MergePatch(target[key], value);
    }
  }
}

// Equality-based selectors: "k=v", "k==v", "k!=v", "k", "!k", comma-separated (all must hold).
inline bool MatchesSelector(const json& object, const std::string& selector) {
  json labels = object.contains("metadata") && object["metadata"].is_object()
                    ? object["metadata"].value("labels", json::object())
                    : json::object();
  auto value_of = [&](const std::string& key) -> std::optional<std::string> {
    if (!labels.contains(key) || !labels[key].is_string()) return std::nullopt;
    return labels[key].get<std::string>();
  };
  for (const std::string& raw : Split(selector, ',')) {
    std::string term = Trim(raw);
    if (term.empty()) continue;
    if (std::size_t ne = term.find("!="); ne != std::string::npos) {
      auto have = value_of(Trim(term.substr(0, ne)));
      if (have && *have == Trim(term.substr(ne + 2))) return false;
    } else if (std::size_t eq = term.find('='); eq != std::string::npos) {
      std::size_t value_start = term.compare(eq, 2, "==") == 0 ? eq + 2 : eq + 1;
      auto have = value_of(Trim(term.substr(0, eq)));
      if (!have || *have != Trim(term.substr(value_start))) return false;
    } else if (term[0] == '!') {
      if (value_of(Trim(term.substr(1)))) return false;
    } else if (!value_of(term)) {
      return false;
    }
  }
  return true;
}

// A REST path taken apart: /api/v1[/namespaces/NS]/PLURAL[/NAME] or
// /apis/GROUP/VERSION[/namespaces/NS]/PLURAL[/NAME].
struct Target {
  bool resource = false;  // false: not an API resource path (/version, /healthz, ...)
  std::string group;
  std::string version;
  std::string namespace_;
  std::string plural;
  std::string name;

  std::string GroupVersion() const { return group.empty() ? version : group + "/" + version; }
  std::string Collection() const {
    std::string prefix = group.empty() ? "/api/" + version : "/apis/" + group + "/" + version;
    if (!namespace_.empty()) prefix += "/namespaces/" + namespace_;
    return prefix + "/" + plural;
  }
  std::string Object() const { return Collection() + "/" + name; }
};

inline Target ParseTarget(const std::string& path) {
  Target t;
  std::vector<std::string> parts = Split(path, '/');
  std::size_t first = 0;
  if (parts.size() >= 3 && parts[0] == "api") {
    t.version = parts[1];
    first = 2;
  } else if (parts.size() >= 4 && parts[0] == "apis") {
    t.group = parts[1];
    t.version = parts[2];
    first = 3;
  } else {
    return t;
  }
  std::vector<std::string> rest(parts.begin() + static_cast<long>(first), parts.end());
  if (rest.size() >= 3 && rest[0] == "namespaces") {
    t.namespace_ = rest[1];
    rest.erase(rest.begin(), rest.begin() + 2);
  }
  if (rest.empty() || rest.size() > 2) return t;  // subresources are not served
  t.resource = true;
  t.plural = rest[0];
  if (rest.size() == 2) t.name = rest[1];
  return t;
}

}  // namespace internal

// Forwards to a fake server's Send/Stream, so a Client can own "its" transport while the
// test keeps the server.
template <typename Server>
class ForwardingTransport : public HttpTransport {
 public:
  explicit ForwardingTransport(Server* server) : server_(server) {}
  Result<HttpResponse> Send(const HttpRequest& request) override { return server_->Send(request); }
  Result<long> Stream(const HttpRequest& request,
                      const std::function<bool(std::string_view)>& on_line,
                      std::string* error_body) override {
    return server_->Stream(request, on_line, error_body);
  }

 private:
  Server* server_;
};

class FakeApiServer : public HttpTransport {
 public:
  // A fixed time for creationTimestamp, so stored objects are reproducible.
  static constexpr const char* kCreationTimestamp = "2024-05-01T12:00:00Z";
  static constexpr const char* kDefaultUnschedulable =
      "0/3 nodes are available: 3 Insufficient cpu.";

  struct Denial {
    std::string verb;
    std::string resource;    // plural, e.g. "deployments"
    std::string namespace_;  // "" = every namespace and cluster scope
    std::string name;        // "" = every object
  };

  struct Failure {
    std::string path_prefix;
    long status = 500;
    std::string method;  // "" = every method
    std::string message;
  };

  FakeApiServer() {
    Put({{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "default"}}}});
    Put({{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "kube-system"}}}});
  }

  // ---- HttpTransport ----------------------------------------------------------------------

  Result<HttpResponse> Send(const HttpRequest& request) override {
    RecordedRequest recorded = Record(request);
    requests_.push_back(recorded);
    for (const Failure& f : failures_) {
      if (recorded.path.rfind(f.path_prefix, 0) == 0 &&
          (f.method.empty() || f.method == recorded.method)) {
        std::string message =
            f.message.empty() ? "injected HTTP " + std::to_string(f.status) : f.message;
        return ApiReply(f.status, StatusBody(f.status, ReasonFor(f.status), message));
      }
    }
    if (recorded.path == "/version" && recorded.method == "GET") return ApiReply(200, version_);
    if (auto raw = raw_responses_.find(recorded.path);
        raw != raw_responses_.end() && recorded.method == "GET") {
      return raw->second;
    }
    if (recorded.IsAccessReview() && recorded.method == "POST") return AccessReview(recorded);
    internal::Target target = internal::ParseTarget(recorded.path);
    if (!target.resource) return NotFoundPath();
    if (std::string verb = VerbOf(recorded.method, target);
        Denied(verb, target.plural, target.namespace_, target.name)) {
      std::string resource =
          target.group.empty() ? target.plural : target.plural + "." + target.group;
      return ApiReply(403, StatusBody(403, "Forbidden",
                                      resource + " is forbidden: User \"test\" cannot " + verb +
                                          " resource \"" + target.plural + "\""));
    }
    if (recorded.method == "GET") {
      return target.name.empty() ? ListObjects(target, recorded) : GetObject(target);
    }
    if (recorded.method == "POST" && target.name.empty()) return CreateObject(target, recorded);
    if (recorded.method == "PATCH" && !target.name.empty()) return PatchObject(target, recorded);
    if (recorded.method == "DELETE" && !target.name.empty()) return DeleteObject(target, recorded);
    if (recorded.method == "PUT" && !target.name.empty()) return ReplaceObject(target, recorded);
    return ApiReply(405, StatusBody(405, "MethodNotAllowed",
                                    recorded.method + " is not supported on " + recorded.path));
  }

  Result<long> Stream(const HttpRequest& request, const std::function<bool(std::string_view)>&,
                      std::string*) override {
    requests_.push_back(Record(request));
    return MakeError(ErrorCode::kInternal, "FakeApiServer does not serve watches");
  }

  // A transport forwarding to this server, for a Client that owns its transport.
  std::unique_ptr<HttpTransport> Transport() {
    return std::make_unique<ForwardingTransport<FakeApiServer>>(this);
  }

  // A Client on this server whose retries do not sleep.
  std::unique_ptr<Client> MakeClient() {
    ClientOptions options;
    options.sleep = [](std::chrono::milliseconds) {};
    return std::make_unique<Client>(Transport(), options);
  }

  // ---- state ------------------------------------------------------------------------------

  // Stores an object as if it had been created (no request is recorded, no checks), or merges
  // it into the stored one.
  void Put(json object) {
    std::string path = ObjectPath(object).value();
    PutAt(path, std::move(object));
  }
  // The same at an explicit path, for kinds powerctl does not manage (NodeMetrics).
  void PutAt(const std::string& path, json object) {
    auto it = objects_.find(path);
    if (it != objects_.end()) {
      json stored = it->second;
      internal::MergePatch(stored, object);
      Simulate(stored);
      Bump(stored);
      it->second = stored;
      SyncPods(stored);
      return;
    }
    AddServerFields(object, "");
    Simulate(object);
    objects_[path] = object;
    SyncPods(object);
  }

  // Stores exactly this object: no server fields, no controllers (for hand-made states).
  void PutExactly(json object) {
    std::string path = ObjectPath(object).value();
    objects_[path] = std::move(object);
  }

  // Removes an object at once (as when its finalizers are done).
  void Remove(const std::string& path) {
    objects_.erase(path);
    FinishTerminations();
  }

  bool Has(const std::string& path) const { return objects_.count(path) > 0; }
  // The stored object; an empty object when there is none.
  json Object(const std::string& path) const {
    auto it = objects_.find(path);
    return it == objects_.end() ? json::object() : it->second;
  }
  const std::map<std::string, json>& objects() const { return objects_; }
  std::set<std::string> Paths() const {
    std::set<std::string> paths;
    for (const auto& [path, object] : objects_) paths.insert(path);
    return paths;
  }

  // Deployments and DaemonSets become available at once (the default), or stay unavailable
  // with Pending pods the scheduler cannot place. Re-evaluates those already stored.
  void SetDeploymentsAvailable(bool available) {
    deployments_available_ = available;
    auto workload = [](const json& o) {
      return o.value("kind", "") == "Deployment" || o.value("kind", "") == "DaemonSet";
    };
    for (auto& [path, object] : objects_) {
      if (!workload(object)) continue;
      json updated = object;
      Simulate(updated);
      if (updated != object) {
        Bump(updated);
        object = updated;
      }
    }
    std::vector<json> workloads;
    for (const auto& [path, object] : objects_) {
      if (workload(object)) workloads.push_back(object);
    }
    for (const json& w : workloads) SyncPods(w);
  }
  void SetUnschedulableMessage(std::string message) { unschedulable_ = std::move(message); }
  // CRDs stored from now on become Established (the default) or not.
  void SetEstablishCrds(bool establish) { establish_crds_ = establish; }
  // Whether metrics.k8s.io is served (it is by default).
  void SetServeMetrics(bool serve) { serve_metrics_ = serve; }
  void SetVersion(const std::string& git_version, const std::string& major,
                  const std::string& minor) {
    version_ = {{"gitVersion", git_version}, {"major", major}, {"minor", minor}};
  }

  // This verb on this resource (in this namespace, or anywhere when ""; on the object of this
  // name, or any when "") is not allowed: SelfSubjectAccessReviews answer allowed=false (also
  // those without a name when a name is denied: not every object is allowed) and such
  // requests are answered 403.
  void Deny(const std::string& verb, const std::string& resource,
            const std::string& namespace_ = "", const std::string& name = "") {
    denials_.push_back({verb, resource, namespace_, name});
  }
  // Requests whose path starts with `path_prefix` (and whose method is `method`, when given)
  // are answered with this HTTP status and a Status body.
  void FailRequests(const std::string& path_prefix, long status, const std::string& method = "",
                    const std::string& message = "") {
    failures_.push_back({path_prefix, status, method, message});
  }
  void ClearFailures() { failures_.clear(); }
  // GET of exactly this path (without the query) answers this status and body as they are.
  void SetRawResponse(const std::string& path, long status, std::string body) {
    raw_responses_[path] = HttpResponse{status, std::move(body), {}};
  }

  // ---- requests ---------------------------------------------------------------------------

  const std::vector<RecordedRequest>& requests() const { return requests_; }
  void ClearRequests() { requests_.clear(); }
  std::vector<RecordedRequest> MutatingRequests() const {
    std::vector<RecordedRequest> out;
    for (const RecordedRequest& r : requests_) {
      if (r.mutating()) out.push_back(r);
    }
    return out;
  }
  // Requests with this method whose path starts with `path_prefix`.
  std::vector<RecordedRequest> RequestsTo(const std::string& method,
                                          const std::string& path_prefix) const {
    std::vector<RecordedRequest> out;
    for (const RecordedRequest& r : requests_) {
      if (r.method == method && r.path.rfind(path_prefix, 0) == 0) out.push_back(r);
    }
    return out;
  }
  // The SelfSubjectAccessReview attributes sent, in order.
  std::vector<json> AccessReviews() const {
    std::vector<json> out;
    for (const RecordedRequest& r : requests_) {
      if (!r.IsAccessReview()) continue;
      json review = json::parse(r.body, nullptr, false);
      out.push_back(review["spec"]["resourceAttributes"]);
    }
    return out;
  }

 private:
  static std::string ReasonFor(long status) {
    switch (status) {
      case 400:
        return "BadRequest";
      case 403:
        return "Forbidden";
      case 404:
        return "NotFound";
      case 409:
        return "Conflict";
      case 415:
        return "UnsupportedMediaType";
      case 422:
        return "Invalid";
      case 429:
        return "TooManyRequests";
      case 503:
        return "ServiceUnavailable";
      default:
        return "InternalError";
    }
  }

  static RecordedRequest Record(const HttpRequest& request) {
    RecordedRequest r;
    r.method = request.method;
    std::size_t question = request.path.find('?');
    r.path = request.path.substr(0, question);
    if (question != std::string::npos) {
      for (const std::string& param : internal::Split(request.path.substr(question + 1), '&')) {
        std::size_t eq = param.find('=');
        std::string key = internal::PercentDecode(param.substr(0, eq));
        r.query[key] = eq == std::string::npos ? "" : internal::PercentDecode(param.substr(eq + 1));
      }
    }
    r.content_type = request.content_type;
    r.body = request.body;
    return r;
  }

  static Result<HttpResponse> NotFoundPath() {
    return ApiReply(
        404, StatusBody(404, "NotFound", "the server could not find the requested resource"));
  }

  static Result<HttpResponse> NotFoundObject(const internal::Target& target) {
    std::string resource =
        target.group.empty() ? target.plural : target.plural + "." + target.group;
    return ApiReply(
        404, StatusBody(404, "NotFound", resource + " \"" + target.name + "\" not found",
                        {{"name", target.name}, {"group", target.group}, {"kind", target.plural}}));
  }

  static Result<HttpResponse> BadRequest(const std::string& message) {
    return ApiReply(400, StatusBody(400, "BadRequest", message));
  }

  // The CRD that defines a custom resource type, or null.
  const json* CrdFor(const internal::Target& target) const {
    for (const auto& [path, object] : objects_) {
      if (object.value("kind", "") != "CustomResourceDefinition") continue;
      const json& spec = object.value("spec", json::object());
      if (spec.value("group", "") == target.group &&
          spec.value("names", json::object()).value("plural", "") == target.plural) {
        return &object;
      }
    }
    return nullptr;
  }

  static bool Established(const json& crd) {
    for (const json& c : crd.value("status", json::object()).value("conditions", json::array())) {
      if (c.value("type", "") == "Established" && c.value("status", "") == "True") return true;
    }
    return false;
  }

  // Whether the API serves this group (and, for custom resources, this type).
  bool Served(const internal::Target& target) const {
    static const std::set<std::string> builtin = {"",
                                                  "apps",
                                                  "rbac.authorization.k8s.io",
                                                  "apiextensions.k8s.io",
                                                  "coordination.k8s.io",
                                                  "discovery.k8s.io",
                                                  "authorization.k8s.io"};
    if (builtin.count(target.group) > 0) return true;
    if (target.group == "metrics.k8s.io") return serve_metrics_;
    const json* crd = CrdFor(target);
    return crd != nullptr && Established(*crd);
  }

  std::string KindOf(const internal::Target& target) const {
    for (const ResourceType& t : KnownResourceTypes()) {
      if (t.group == target.group && t.plural == target.plural) return std::string(t.kind);
    }
    if (target.group == "metrics.k8s.io") return "NodeMetrics";
    if (const json* crd = CrdFor(target); crd != nullptr) {
      return (*crd)["spec"]["names"].value("kind", "");
    }
    return "";
  }

  bool NamespaceExists(const std::string& ns) const {
    return ns.empty() || objects_.count("/api/v1/namespaces/" + ns) > 0;
  }

  Result<HttpResponse> NamespaceNotFound(const std::string& ns) const {
    return ApiReply(404, StatusBody(404, "NotFound", "namespaces \"" + ns + "\" not found",
                                    {{"name", ns}, {"kind", "namespaces"}}));
  }

  std::string NextVersion() { return std::to_string(++resource_version_); }

  void Bump(json& object) { object["metadata"]["resourceVersion"] = NextVersion(); }

  void AddServerFields(json& object, const std::string& manager) {
    json& meta = object["metadata"];
    meta["uid"] = "uid-" + std::to_string(++uid_);
    meta["resourceVersion"] = NextVersion();
    meta["generation"] = 1;
    meta["creationTimestamp"] = kCreationTimestamp;
    if (!manager.empty()) RecordManager(object, manager);
  }

  static void RecordManager(json& object, const std::string& manager) {
    json& fields = object["metadata"]["managedFields"];
    if (!fields.is_array()) fields = json::array();
    for (const json& f : fields) {
      if (f.value("manager", "") == manager) return;
    }
    fields.push_back({{"manager", manager},
                      {"operation", "Apply"},
                      {"apiVersion", object.value("apiVersion", "")}});
  }

  // What controllers would do to a stored object.
  void Simulate(json& object) const {
    std::string kind = object.value("kind", "");
    if (kind == "CustomResourceDefinition" && establish_crds_) {
      object["status"]["conditions"] = json::array(
          {{{"type", "NamesAccepted"}, {"status", "True"}, {"reason", "NoConflicts"}},
           {{"type", "Established"}, {"status", "True"}, {"reason", "InitialNamesAccepted"}}});
    }
    if (kind == "Deployment") {
      int replicas = object["spec"].value("replicas", 1);
      json& status = object["status"];
      status["observedGeneration"] = object["metadata"].value("generation", 1);
      status["replicas"] = replicas;
      status["updatedReplicas"] = replicas;
      status["readyReplicas"] = deployments_available_ ? replicas : 0;
      status["availableReplicas"] = deployments_available_ ? replicas : 0;
    }
    if (kind == "DaemonSet") {
      int nodes = static_cast<int>(NodeNames().size());
      json& status = object["status"];
      status["observedGeneration"] = object["metadata"].value("generation", 1);
      status["desiredNumberScheduled"] = nodes;
      status["currentNumberScheduled"] = nodes;
      status["updatedNumberScheduled"] = nodes;
      status["numberReady"] = deployments_available_ ? nodes : 0;
      status["numberAvailable"] = deployments_available_ ? nodes : 0;
      status["numberMisscheduled"] = 0;
    }
  }

  std::vector<std::string> NodeNames() const {
    std::vector<std::string> names;
    for (const auto& [path, object] : objects_) {
      if (object.value("kind", "") == "Node") names.push_back(object["metadata"].value("name", ""));
    }
    return names;
  }

  // The pod of a Deployment, or one per node of a DaemonSet: Running when Deployments are
  // available, else Pending and unschedulable.
  void SyncPods(const json& workload) {
    std::string kind = workload.value("kind", "");
    if (kind != "Deployment" && kind != "DaemonSet") return;
    const json& meta = workload["metadata"];
    std::string ns = meta.value("namespace", "");
    json labels = workload["spec"]
                      .value("template", json::object())
                      .value("metadata", json::object())
                      .value("labels", json::object());
    std::vector<std::pair<std::string, std::string>> pods;  // name, node
    if (kind == "Deployment") {
      pods.emplace_back(meta.value("name", "") + "-7d4b9c8f6-x2x9q", "");
    } else {
      for (const std::string& node : NodeNames())
        pods.emplace_back(meta.value("name", "") + "-" + node, node);
    }
    for (const auto& [name, node] : pods) {
      json pod = {{"apiVersion", "v1"},
                  {"kind", "Pod"},
                  {"metadata", {{"name", name}, {"namespace", ns}, {"labels", labels}}}};
      if (!node.empty()) pod["spec"] = {{"nodeName", node}};
      if (deployments_available_) {
        pod["status"] = {{"phase", "Running"},
                         {"conditions", json::array({{{"type", "PodScheduled"}, {"status", "True"}},
                                                     {{"type", "Ready"}, {"status", "True"}}})}};
      } else {
        pod["status"] = {{"phase", "Pending"},
                         {"conditions", json::array({{{"type", "PodScheduled"},
                                                      {"status", "False"},
                                                      {"reason", "Unschedulable"},
                                                      {"message", unschedulable_}}})}};
      }
      std::string path = "/api/v1/namespaces/" + ns + "/pods/" + name;
      auto it = objects_.find(path);
      if (it == objects_.end()) {
        AddServerFields(pod, "");
        objects_[path] = pod;
      } else if (it->second["status"] != pod["status"]) {
        it->second["status"] = pod["status"];
        Bump(it->second);
      }
    }
  }

  // Stores `updated` (the old object with a change applied) when it differs from the stored one.
  json Update(const std::string& path, const json& stored, json updated, const std::string& manager,
              bool dry_run) {
    // Fields the server owns are not the client's to change.
    for (const char* field : {"uid", "resourceVersion", "generation", "creationTimestamp"}) {
      if (stored["metadata"].contains(field))
        updated["metadata"][field] = stored["metadata"][field];
    }
    json old_spec = stored;
    json new_spec = updated;
    for (json* o : {&old_spec, &new_spec}) {
      o->erase("metadata");
      o->erase("status");
    }
    if (old_spec != new_spec) {
      updated["metadata"]["generation"] = stored["metadata"].value("generation", 1) + 1;
    }
    if (!manager.empty()) RecordManager(updated, manager);
    Simulate(updated);
    if (updated == stored) return stored;
    Bump(updated);
    if (!dry_run) {
      objects_[path] = updated;
      SyncPods(updated);
    }
    return updated;
  }

  static std::string VerbOf(const std::string& method, const internal::Target& target) {
    if (method == "GET") return target.name.empty() ? "list" : "get";
    if (method == "POST") return "create";
    if (method == "PATCH") return "patch";
    if (method == "PUT") return "update";
    if (method == "DELETE") return "delete";
    return method;
  }

  bool Denied(const std::string& verb, const std::string& resource, const std::string& ns,
              const std::string& name) const {
    for (const Denial& d : denials_) {
      if (d.verb == verb && d.resource == resource &&
          (d.namespace_.empty() || d.namespace_ == ns) &&
          (d.name.empty() || name.empty() || d.name == name)) {
        return true;
      }
    }
    return false;
  }

  Result<HttpResponse> AccessReview(const RecordedRequest& r) const {
    json review = json::parse(r.body, nullptr, false);
    if (review.is_discarded()) return BadRequest("SelfSubjectAccessReview is not JSON");
    json attributes = review["spec"].value("resourceAttributes", json::object());
    std::string verb = attributes.value("verb", "");
    std::string resource = attributes.value("resource", "");
    bool allowed =
        !Denied(verb, resource, attributes.value("namespace", ""), attributes.value("name", ""));
    review["status"] = {{"allowed", allowed}};
    if (!allowed) review["status"]["reason"] = "denied by the test";
    return ApiReply(201, review);
  }

  Result<HttpResponse> GetObject(const internal::Target& target) const {
    if (!Served(target)) return NotFoundPath();
    auto it = objects_.find(target.Object());
    if (it == objects_.end()) return NotFoundObject(target);
    return ApiReply(200, it->second);
  }

  Result<HttpResponse> ListObjects(const internal::Target& target, const RecordedRequest& r) const {
    if (!Served(target)) return NotFoundPath();
    std::string selector = r.Query("labelSelector");
    json items = json::array();
    for (const auto& [path, object] : objects_) {
      internal::Target t = internal::ParseTarget(path);
      if (t.group != target.group || t.plural != target.plural || t.name.empty()) continue;
      if (!target.namespace_.empty() && t.namespace_ != target.namespace_) continue;
      if (!internal::MatchesSelector(object, selector)) continue;
      json item = object;
      item.erase("kind");  // list items come without kind and apiVersion
      item.erase("apiVersion");
      items.push_back(item);
    }
    return ApiReply(200, {{"kind", KindOf(target) + "List"},
                          {"apiVersion", target.GroupVersion()},
                          {"metadata", {{"resourceVersion", std::to_string(resource_version_)}}},
                          {"items", items}});
  }

  // Checks shared by create and apply-create.
  std::string GeneratedSuffix() {
    static constexpr char kAlphabet[] = "bcdfghjklmnpqrstvwxz2456789";  // the server's
    std::string suffix;
    for (std::uint64_t n = ++generated_names_ * 7919; suffix.size() < 5; n /= 27) {
      suffix += kAlphabet[n % 27];
    }
    return suffix;
  }

  std::optional<Result<HttpResponse>> CheckCreate(const internal::Target& target,
                                                  const json& object) const {
    if (!Served(target)) return NotFoundPath();
    if (!object.is_object() || !object.contains("metadata") ||
        object["metadata"].value("name", "").empty()) {
      return BadRequest("metadata.name: Required value");
    }
    std::string ns = object["metadata"].value("namespace", target.namespace_);
    if (ns != target.namespace_) {
      return BadRequest("the namespace of the object (" + ns +
                        ") does not match the namespace on the request (" + target.namespace_ +
                        ")");
    }
    if (!NamespaceExists(target.namespace_)) return NamespaceNotFound(target.namespace_);
    return std::nullopt;
  }

  json Created(json object, const internal::Target& target, const std::string& manager,
               bool dry_run) {
    if (!target.namespace_.empty()) object["metadata"]["namespace"] = target.namespace_;
    AddServerFields(object, manager);
    Simulate(object);
    if (!dry_run) {
      objects_[target.Collection() + "/" + object["metadata"].value("name", "")] = object;
      SyncPods(object);
    }
    return object;
  }

  Result<HttpResponse> CreateObject(const internal::Target& target, const RecordedRequest& r) {
    json object = json::parse(r.body, nullptr, false);
    if (object.is_discarded()) return BadRequest("the body is not JSON");
    // As the real server: no name but a generateName gets the prefix and five characters.
    if (object.is_object() && object.contains("metadata") && object["metadata"].is_object() &&
        object["metadata"].value("name", "").empty() &&
        !object["metadata"].value("generateName", "").empty()) {
      object["metadata"]["name"] =
          object["metadata"]["generateName"].get<std::string>() + GeneratedSuffix();
    }
    if (auto error = CheckCreate(target, object)) return *error;
    internal::Target named = target;
    named.name = object["metadata"].value("name", "");
    if (objects_.count(named.Object()) > 0) {
      std::string resource =
          target.group.empty() ? target.plural : target.plural + "." + target.group;
      return ApiReply(
          409, StatusBody(409, "AlreadyExists", resource + " \"" + named.name + "\" already exists",
                          {{"name", named.name}, {"kind", target.plural}}));
    }
    return ApiReply(201, Created(object, target, r.Query("fieldManager"), r.dry_run()));
  }

  Result<HttpResponse> PatchObject(const internal::Target& target, const RecordedRequest& r) {
    if (!Served(target)) return NotFoundPath();
    json patch = json::parse(r.body, nullptr, false);
    if (patch.is_discarded()) return BadRequest("the patch is not JSON");
    std::string path = target.Object();
    auto it = objects_.find(path);
    if (r.content_type == "application/apply-patch+yaml") {
      std::string manager = r.Query("fieldManager");
      if (manager.empty()) {
        return ApiReply(422, StatusBody(422, "Invalid",
                                        "fieldManager: Required value: is required "
                                        "for apply patch"));
      }
      if (!patch.is_object() || !patch.contains("metadata") ||
          patch["metadata"].value("name", "") != target.name) {
        return BadRequest("metadata.name of the applied object does not match the path");
      }
      if (it == objects_.end()) {
        if (auto error = CheckCreate(target, patch)) return *error;
        return ApiReply(201, Created(patch, target, manager, r.dry_run()));
      }
      json updated = it->second;
      internal::MergePatch(updated, patch);
      return ApiReply(200, Update(path, it->second, updated, manager, r.dry_run()));
    }
    if (r.content_type == "application/merge-patch+json") {
      if (it == objects_.end()) return NotFoundObject(target);
      json updated = it->second;
      internal::MergePatch(updated, patch);
      return ApiReply(200, Update(path, it->second, updated, r.Query("fieldManager"), r.dry_run()));
    }
    return ApiReply(415, StatusBody(415, "UnsupportedMediaType",
                                    "the fake does not support " + r.content_type));
  }

  // PUT: a stale metadata.resourceVersion is refused with 409, as the real server does.
  Result<HttpResponse> ReplaceObject(const internal::Target& target, const RecordedRequest& r) {
    if (!Served(target)) return NotFoundPath();
    json object = json::parse(r.body, nullptr, false);
    if (object.is_discarded() || !object.is_object()) return BadRequest("the body is not JSON");
    std::string path = target.Object();
    auto it = objects_.find(path);
    if (it == objects_.end()) return NotFoundObject(target);
    std::string sent = object.value("metadata", json::object()).value("resourceVersion", "");
    if (!sent.empty() && sent != it->second["metadata"].value("resourceVersion", "")) {
      std::string resource =
          target.group.empty() ? target.plural : target.plural + "." + target.group;
      return ApiReply(
          409, StatusBody(409, "Conflict",
                          "Operation cannot be fulfilled on " + resource + " \"" + target.name +
                              "\": the object has been modified; please apply your "
                              "changes to the latest version and try again"));
    }
    object["metadata"]["name"] = target.name;
    if (!target.namespace_.empty()) object["metadata"]["namespace"] = target.namespace_;
    return ApiReply(200, Update(path, it->second, object, "", r.dry_run()));
  }

  Result<HttpResponse> DeleteObject(const internal::Target& target, const RecordedRequest& r) {
    if (!Served(target)) return NotFoundPath();
    std::string path = target.Object();
    auto it = objects_.find(path);
    if (it == objects_.end()) return NotFoundObject(target);
    json object = it->second;
    if (r.dry_run()) return ApiReply(200, object);
    DeleteStored(path);
    return ApiReply(200, Has(path) ? objects_[path] : object);
  }

  // Paths of what the namespace or garbage collector removes with this object.
  std::vector<std::string> Dependents(const json& object) const {
    std::string kind = object.value("kind", "");
    std::string name = object["metadata"].value("name", "");
    std::vector<std::string> out;
    for (const auto& [path, o] : objects_) {
      internal::Target t = internal::ParseTarget(path);
      bool in_namespace = kind == "Namespace" && t.namespace_ == name;
      bool of_crd = kind == "CustomResourceDefinition" &&
                    t.group == object["spec"].value("group", "") &&
                    t.plural == object["spec"].value("names", json::object()).value("plural", "");
      if (in_namespace || of_crd) out.push_back(path);
    }
    return out;
  }

  // Deletes at once, or marks for deletion (deletionTimestamp) while finalizers, or for a
  // Namespace objects still in it, hold the object.
  void DeleteStored(const std::string& path) {
    if (!Has(path)) return;
    for (const std::string& dependent : Dependents(objects_[path])) DeleteStored(dependent);
    json& object = objects_[path];
    bool held = !object["metadata"].value("finalizers", json::array()).empty() ||
                !Dependents(object).empty();
    if (!held) {
      objects_.erase(path);
      return;
    }
    if (!object["metadata"].contains("deletionTimestamp")) {
      object["metadata"]["deletionTimestamp"] = kCreationTimestamp;
      Bump(object);
    }
  }

  // Namespaces being deleted go once nothing is left in them.
  void FinishTerminations() {
    for (auto it = objects_.begin(); it != objects_.end();) {
      const json& meta = it->second["metadata"];
      bool done = it->second.value("kind", "") == "Namespace" &&
                  meta.contains("deletionTimestamp") &&
                  meta.value("finalizers", json::array()).empty() && Dependents(it->second).empty();
      it = done ? objects_.erase(it) : std::next(it);
    }
  }

  std::map<std::string, json> objects_;
  std::uint64_t generated_names_ = 0;  // for generateName
  std::vector<RecordedRequest> requests_;
  std::vector<Denial> denials_;
  std::vector<Failure> failures_;
  std::map<std::string, HttpResponse> raw_responses_;
  json version_ = {{"gitVersion", "v1.20.2"}, {"major", "1"}, {"minor", "20"}};
  std::string unschedulable_ = kDefaultUnschedulable;
  bool deployments_available_ = true;
  bool establish_crds_ = true;
  bool serve_metrics_ = true;
  long resource_version_ = 1000;
  int uid_ = 0;
};

// A Clock for waits: now() is a counter that sleep() advances, so waits and timeouts are
// instant. `on_sleep` runs after each sleep (e.g. to let a Deployment become available).
class FakeClock {
 public:
  Clock clock() {
    Clock c;
    c.now = [this] { return now; };
    c.sleep = [this](std::chrono::milliseconds d) {
      now += d;
      sleeps.push_back(d);
      if (on_sleep) on_sleep();
    };
    return c;
  }

  std::chrono::steady_clock::time_point now{std::chrono::hours(1)};
  std::vector<std::chrono::milliseconds> sleeps;
  std::function<void()> on_sleep;
};

// ---- object builders ----------------------------------------------------------------------

inline json NodeObject(const std::string& name, json labels = json::object()) {
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata", {{"name", name}, {"labels", std::move(labels)}}}};
}

// A Deployment with the selector and pod labels powerctl's templates use.
inline json DeploymentObject(const std::string& ns, const std::string& name,
                             const std::string& component, int replicas = 1) {
  json labels = {{"app.kubernetes.io/name", "powerctl"},
                 {"app.kubernetes.io/component", component}};
  return {{"apiVersion", "apps/v1"},
          {"kind", "Deployment"},
          {"metadata", {{"name", name}, {"namespace", ns}}},
          {"spec",
           {{"replicas", replicas},
            {"selector", {{"matchLabels", labels}}},
            {"template",
             {{"metadata", {{"labels", labels}}},
              {"spec", {{"containers", json::array({{{"name", component}, {"image", "x"}}})}}}}}}}};
}

inline json LeaseObject(const std::string& ns, const std::string& name, const std::string& holder,
                        const std::string& renew_time, int duration_seconds = 15) {
  json spec = {{"leaseDurationSeconds", duration_seconds}, {"renewTime", renew_time}};
  if (!holder.empty()) spec["holderIdentity"] = holder;
  return {{"apiVersion", "coordination.k8s.io/v1"},
          {"kind", "Lease"},
          {"metadata", {{"name", name}, {"namespace", ns}}},
          {"spec", spec}};
}

// Measured now, as metrics-server reports a fresh scrape.
inline json NodeMetricsObject(const std::string& name) {
  std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char timestamp[32];
  std::strftime(timestamp, sizeof timestamp, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return {{"apiVersion", "metrics.k8s.io/v1beta1"},
          {"kind", "NodeMetrics"},
          {"metadata", {{"name", name}}},
          {"timestamp", timestamp},
          {"window", "30s"},
          {"usage", {{"cpu", "250m"}, {"memory", "1Gi"}}}};
}

}  // namespace powerctl::kube::fake
