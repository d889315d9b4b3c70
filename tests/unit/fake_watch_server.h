#pragma once
// A thread-safe in-memory API server that serves lists and watches, for tests of code that
// follows the cluster with kube::Client::ListAndWatch (the shared FakeApiServer does not serve
// watches and is not meant for concurrent use).
//
// Objects are kept by path with a global resourceVersion; every change is an event in a
// history that watches replay from their resourceVersion and then follow, blocking on a
// condition variable. Like kube-apiserver: a watch ends after its timeoutSeconds (wall
// clock), label and field selectors apply to lists and watches (an object that stops
// matching is sent as DELETED), a version older than the compacted history gets an ERROR
// event with code 410, and unserved resources (a CRD that is not installed) answer 404.
// Tests can take the server down (requests fail as refused connections) and close all open
// watches. HttpRequest::cancel is honoured like the libcurl transport does (a cancelled request
// fails with kube::CancelledError), only sooner, and the watches it ended are counted.

#include "core/kube/transport.h"
#include "tests/unit/fake_api_server.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace powerctl::kube::fake {

class FakeWatchServer {
 public:
  FakeWatchServer() = default;

  // ---- state (the test's side) ----------------------------------------------------------

  // Creates or replaces an object (kinds: Node, Pod, TASPolicy, or any with apiVersion and
  // a plural given by PluralOf). Sets uid (kept across updates) and resourceVersion.
  void Put(json object) {
    std::lock_guard lock(mu_);
    std::string path = PathOf(object);
    auto it = objects_.find(path);
    json old = it == objects_.end() ? json() : it->second;
    object["metadata"]["uid"] =
        old.is_null() ? "uid-" + std::to_string(++uids_) : old["metadata"].value("uid", "");
    object["metadata"]["resourceVersion"] = std::to_string(++rv_);
    objects_[path] = object;
    events_.push_back({rv_, old.is_null() ? "ADDED" : "MODIFIED", path, old, object});
    cv_.notify_all();
  }
  void Delete(const std::string& path) {
    std::lock_guard lock(mu_);
    auto it = objects_.find(path);
    if (it == objects_.end()) return;
    json old = it->second;
    objects_.erase(it);
    json gone = old;
    gone["metadata"]["resourceVersion"] = std::to_string(++rv_);
    events_.push_back({rv_, "DELETED", path, old, gone});
    cv_.notify_all();
  }
  // Forgets the history: watches from any version before now get 410 Expired.
  void Compact() {
    std::lock_guard lock(mu_);
    events_.clear();
    oldest_ = rv_;
  }
  // While down, every request fails like a refused connection and open watches end.
  void SetDown(bool down) {
    std::lock_guard lock(mu_);
    down_ = down;
    ++closes_;
    cv_.notify_all();
  }
  // Ends every open watch now (as an API server restart would).
  void CloseWatches() {
    std::lock_guard lock(mu_);
    ++closes_;
    cv_.notify_all();
  }
  // Resources (plural, e.g. "taspolicies") answered 404, as when their CRD is missing.
  void SetServed(const std::string& plural, bool served) {
    std::lock_guard lock(mu_);
    if (served) {
      unserved_.erase(plural);
    } else {
      unserved_.insert(plural);
    }
  }
  // The next `count` requests to paths starting with `prefix` get HTTP `status`.
  void FailNext(const std::string& prefix, int count, long status) {
    std::lock_guard lock(mu_);
    failures_.push_back({prefix, count, status});
  }
  int OpenWatches() const {
    std::lock_guard lock(mu_);
    return open_watches_;
  }
  int CancelledWatches() const {
    std::lock_guard lock(mu_);
    return cancelled_watches_;
  }
  std::vector<std::string> Requests() const {
    std::lock_guard lock(mu_);
    return requests_;
  }

  static std::string PluralOf(const std::string& kind) {
    std::string lower;
    for (char c : kind) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (!lower.empty() && lower.back() == 'y') return lower.substr(0, lower.size() - 1) + "ies";
    return lower + "s";
  }
  static std::string PathOf(const json& object) {
    std::string api = object.value("apiVersion", "v1");
    std::string prefix = api.find('/') == std::string::npos ? "/api/" + api : "/apis/" + api;
    std::string ns = object["metadata"].value("namespace", "");
    if (!ns.empty()) prefix += "/namespaces/" + ns;
    return prefix + "/" + PluralOf(object.value("kind", "")) + "/" +
           object["metadata"].value("name", "");
  }

  // A transport for one client; any number may be used at once.
  std::unique_ptr<HttpTransport> Transport() {
    return std::make_unique<ForwardingTransport<FakeWatchServer>>(this);
  }

 private:
  friend class ForwardingTransport<FakeWatchServer>;  // reaches Send and Stream
  struct Event {
    long rv;
    std::string type;
    std::string path;
    json old;  // null for ADDED
    json object;
  };
  struct Failure {
    std::string prefix;
    int count;
    long status;
  };

  static std::map<std::string, std::string> QueryOf(const std::string& path) {
    std::map<std::string, std::string> query;
    std::size_t q = path.find('?');
    if (q == std::string::npos) return query;
    for (const std::string& pair : internal::Split(path.substr(q + 1), '&')) {
      std::size_t eq = pair.find('=');
      query[internal::PercentDecode(pair.substr(0, eq))] =
          eq == std::string::npos ? "" : internal::PercentDecode(pair.substr(eq + 1));
    }
    return query;
  }

  // "a.b!=v,c.d=w" on dotted paths of the object; strings compared as strings.
  static bool MatchesFields(const json& object, const std::string& selector) {
    for (const std::string& term : internal::Split(selector, ',')) {
      bool negate = term.find("!=") != std::string::npos;
      std::size_t op = negate ? term.find("!=") : term.find('=');
      if (op == std::string::npos) continue;
      std::string want = term.substr(op + (negate ? 2 : 1));
      const json* at = &object;
      for (const std::string& key : internal::Split(term.substr(0, op), '.')) {
        at = at->is_object() && at->contains(key) ? &(*at)[key] : nullptr;
        if (at == nullptr) break;
      }
      std::string have = at != nullptr && at->is_string() ? at->get<std::string>() : "";
      if ((have == want) == negate) return false;
    }
    return true;
  }

  // Whether `object_path` is in the collection `target` names (all namespaces or one).
  static bool InCollection(const internal::Target& target, const std::string& object_path) {
    internal::Target t = internal::ParseTarget(object_path);
    return t.group == target.group && t.version == target.version && t.plural == target.plural &&
           (target.namespace_.empty() || t.namespace_ == target.namespace_);
  }

  static bool Cancelled(const HttpRequest& request) {
    return request.cancel != nullptr && request.cancel->load();
  }

  static bool Matches(const json& object, const std::map<std::string, std::string>& query) {
    auto label = query.find("labelSelector");
    auto field = query.find("fieldSelector");
    return !object.is_null() &&
           (label == query.end() || internal::MatchesSelector(object, label->second)) &&
           (field == query.end() || MatchesFields(object, field->second));
  }

  static HttpResponse Status(long code, const std::string& reason, const std::string& message) {
    json body = {{"kind", "Status"},   {"apiVersion", "v1"}, {"status", "Failure"},
                 {"message", message}, {"reason", reason},   {"code", code}};
    return HttpResponse{code, body.dump(), {{"content-type", "application/json"}}};
  }

  // Checks common to lists and watches; a response when the request ends here.
  std::optional<Result<HttpResponse>> CheckLocked(const HttpRequest& request,
                                                  const internal::Target& target) {
    requests_.push_back(request.method + " " + request.path);
    if (down_) {
      return Result<HttpResponse>(
          MakeError(ErrorCode::kNetwork, "connection refused (fake API server is down)"));
    }
    std::string path = request.path.substr(0, request.path.find('?'));
    for (Failure& f : failures_) {
      if (f.count > 0 && path.rfind(f.prefix, 0) == 0) {
        --f.count;
        return Result<HttpResponse>(Status(f.status, "InternalError", "injected failure"));
      }
    }
    if (!target.resource || request.method != "GET" || !target.name.empty()) {
      return Result<HttpResponse>(Status(405, "MethodNotAllowed", "not served by the fake"));
    }
    if (unserved_.count(target.plural) > 0) {
      return Result<HttpResponse>(Status(404, "NotFound",
                                         "the server could not find the "
                                         "requested resource"));
    }
    return std::nullopt;
  }

  Result<HttpResponse> Send(const HttpRequest& request) {
    if (Cancelled(request)) return CancelledError(request.method + " " + request.path);
    std::lock_guard lock(mu_);
    internal::Target target = internal::ParseTarget(request.path.substr(0, request.path.find('?')));
    if (auto early = CheckLocked(request, target)) return *early;
    auto query = QueryOf(request.path);
    json items = json::array();
    for (const auto& [path, object] : objects_) {
      if (InCollection(target, path) && Matches(object, query)) items.push_back(object);
    }
    json list = {{"kind", "List"},
                 {"apiVersion", target.GroupVersion()},
                 {"metadata", {{"resourceVersion", std::to_string(rv_)}}},
                 {"items", items}};
    return HttpResponse{200, list.dump(), {{"content-type", "application/json"}}};
  }

  Result<long> Stream(const HttpRequest& request,
                      const std::function<bool(std::string_view)>& on_line,
                      std::string* error_body) {
    if (Cancelled(request)) return CancelledError(request.method + " " + request.path);
    std::unique_lock lock(mu_);
    internal::Target target = internal::ParseTarget(request.path.substr(0, request.path.find('?')));
    if (auto early = CheckLocked(request, target)) {
      if (!early->ok()) return early->error();
      if (error_body != nullptr) *error_body = early->value().body;
      return early->value().status;
    }
    auto query = QueryOf(request.path);
    long from = query.count("resourceVersion") > 0 ? std::stol(query["resourceVersion"]) : rv_;
    if (from < oldest_) {
      json status = {{"kind", "Status"},
                     {"code", 410},
                     {"reason", "Expired"},
                     {"message", "too old resource version"}};
      lock.unlock();
      on_line(json{{"type", "ERROR"}, {"object", status}}.dump());
      return 200L;
    }
    int timeout = query.count("timeoutSeconds") > 0 ? std::stoi(query["timeoutSeconds"]) : 300;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout);
    long closes = closes_;
    ++open_watches_;
    long at = from;
    while (true) {
      std::vector<std::string> lines;
      for (const Event& e : events_) {
        if (e.rv <= at || !InCollection(target, e.path)) continue;
        bool was = Matches(e.old, query);
        bool is = e.type != "DELETED" && Matches(e.object, query);
        std::string type = is ? (was ? "MODIFIED" : "ADDED") : "DELETED";
        if (was || is) lines.push_back(json{{"type", type}, {"object", e.object}}.dump());
      }
      at = rv_;
      if (!lines.empty()) {
        lock.unlock();
        bool go_on = true;
        for (const std::string& line : lines) {
          go_on = on_line(line);
          if (!go_on) break;
        }
        lock.lock();
        if (!go_on) break;
        continue;
      }
      // Polls the cancel flag, as libcurl's progress callback does (there about once a second).
      bool woken = false;
      while (!(woken = cv_.wait_for(lock, std::chrono::milliseconds(10),
                                    [&] { return rv_ > at || closes_ != closes; }))) {
        if (Cancelled(request) || std::chrono::steady_clock::now() >= deadline) break;
      }
      if (!woken || closes_ != closes) break;
    }
    --open_watches_;
    if (Cancelled(request)) {
      ++cancelled_watches_;
      return CancelledError(request.method + " " + request.path);
    }
    if (down_)
      return MakeError(ErrorCode::kNetwork, "connection reset (fake API server went down)");
    return 200L;
  }

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, json> objects_;
  std::vector<Event> events_;
  std::vector<Failure> failures_;
  std::set<std::string> unserved_;
  std::vector<std::string> requests_;
  long rv_ = 100;
  long oldest_ = 0;
  long closes_ = 0;
  int uids_ = 0;
  int open_watches_ = 0;
  int cancelled_watches_ = 0;
  bool down_ = false;
};

}  // namespace powerctl::kube::fake
