#pragma once
// A small Kubernetes REST client on top of HttpTransport: JSON in and out, retries
// with backoff, paging, watches, and API errors turned into clear messages.

#include "core/common/result.h"
#include "core/kube/transport.h"

#include <nlohmann/json.hpp>
#include <spdlog/logger.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace powerctl::kube {

using json = nlohmann::json;

struct ClientOptions {
  int max_attempts = 5;  // 429, 5xx (not 501), refused connections
  std::chrono::milliseconds initial_backoff{200};
  std::chrono::milliseconds max_backoff{5000};
  std::function<void(std::chrono::milliseconds)> sleep;  // injectable for tests; default sleeps
  std::shared_ptr<spdlog::logger> log;
  // ClusterConnection::description, named in 401 messages ("the server rejected the
  // credentials of context "kind-dev" of /root/.kube/config").
  std::string connection_description;
};

enum class DryRun { kNone, kClient, kServer };  // kClient never reaches the client

struct ListOptions {
  std::string label_selector;
  std::string field_selector;
  int limit = 500;  // page size; pages are followed with `continue`
};

struct ApplyOptions {
  std::string field_manager = "powerctl";
  bool force = false;
  bool dry_run = false;  // server-side dry run (dryRun=All)
};

struct WatchOptions {
  std::string label_selector;
  std::string field_selector;
  std::string resource_version;  // "" = list first, then watch from the list's version
  int timeout_seconds = 300;     // server-side; the watch is re-opened after it
  // Each watch asks for a random timeout in [timeout_seconds, 2 * timeout_seconds), as
  // client-go's reflector does (5-10 min), so that many clients' watches do not end together.
  bool jitter_timeout = false;
};

struct WatchEvent {
  std::string type;  // ADDED, MODIFIED, DELETED (BOOKMARK and ERROR are handled inside)
  json object;
};

struct ServerVersion {
  std::string git_version;  // "v1.20.2"
  int major = 0;
  int minor = 0;
};

class Client {
 public:
  Client(std::unique_ptr<HttpTransport> transport, ClientOptions options);

  Result<json> Get(const std::string& path);
  // A GET the API server forwards to a workload (.../pods/NAME:PORT/proxy/...): a 5xx is the
  // workload's answer or "cannot reach it" (a dial timeout, on a firewalled node port, takes
  // the API server 30s), not a passing API server problem, so it is not retried, and
  // `timeout` bounds the whole request.
  Result<json> GetProxied(const std::string& path, std::chrono::milliseconds timeout);
  // GetProxied for a body that is not JSON (a /metrics exposition): the text as it came.
  Result<std::string> GetProxiedText(const std::string& path, std::chrono::milliseconds timeout);
  Result<std::vector<json>> List(const std::string& path, const ListOptions& options = {});
  Result<json> Create(const std::string& collection_path, const json& object, bool dry_run = false);
  // Create for a caller that needs only to know it worked: the object the API server sends
  // back is not parsed. The extender writes one Event per pod, and parsing each echo was a
  // twentieth of its CPU under kube-scheduler's load. Errors are Create's.
  Status CreateOnly(const std::string& collection_path, const json& object);
  // PUT: replaces the object. With metadata.resourceVersion set, the server refuses (409,
  // kConflict) when the object changed since it was read: optimistic concurrency.
  Result<json> Replace(const std::string& path, const json& object);
  // Server-side apply: PATCH with application/apply-patch+yaml and a field manager.
  Result<json> Apply(const std::string& path, const json& object, const ApplyOptions& options);
  Result<json> MergePatch(const std::string& path, const json& patch, bool dry_run = false);
  Result<json> JsonPatch(const std::string& path, const json& patch, bool dry_run = false);
  // kNotFound when the object is already gone.
  Result<json> Delete(const std::string& path, bool dry_run = false,
                      const std::string& propagation = "Background");
  // Lists (for the initial state and resourceVersion), then watches; relists on 410 Gone.
  // `handler` gets every event (the initial list as ADDED) and returns false to stop. Its
  // objects come without metadata.managedFields (discarded while the stream is parsed).
  // A cancelled request (HttpRequest::cancel, IsCancelled) ends it at once with that error:
  // a cancel means stop, so it is not retried.
  Status ListAndWatch(const std::string& path, const WatchOptions& options,
                      const std::function<bool(const WatchEvent&)>& handler);
  Result<ServerVersion> Version();

 private:
  struct ListResult {
    std::vector<json> items;
    std::string resource_version;  // of the list, where a watch starts
  };
  using QueryParams = std::vector<std::pair<std::string, std::string>>;

  Result<HttpResponse> Do(HttpRequest request, bool retry_on_5xx);
  // Do, with a status outside 2xx as the API server's error.
  Result<HttpResponse> DoSuccessful(HttpRequest request, bool retry_on_5xx);
  // DoSuccessful, with the body parsed.
  Result<json> DoJson(HttpRequest request, bool retry_on_5xx);
  Result<ListResult> ListAll(const std::string& path, const ListOptions& options);
  // Lists page by page (options.limit per page), handing each item (kind and apiVersion
  // filled in) to `on_item`, which may move it away and returns false to stop (`stopped`
  // set). Only one page is held at a time. When a continue token expires the list starts
  // over: `on_restart` is called and items are delivered again. Returns the list's
  // resourceVersion.
  Result<std::string> ListPages(const std::string& path, const ListOptions& options,
                                const std::function<bool(json&)>& on_item,
                                const std::function<void()>& on_restart, bool* stopped);
  // The exponential backoff with jitter before retry number `attempt` (1-based).
  std::chrono::milliseconds Backoff(int attempt) const;
  void Sleep(std::chrono::milliseconds duration) const;
  // Appends percent-encoded parameters to a path that may already have a query.
  static std::string WithQuery(std::string path, const QueryParams& params);

  std::unique_ptr<HttpTransport> transport_;
  ClientOptions options_;
};

// Turns a non-2xx response into an Error: Status objects give their message; 403 names
// the verb, resource and the RBAC rule to grant; codes map to ErrorCode (403 kForbidden,
// 404 kNotFound, 409 kConflict, 401/422/other kApi). `connection_description` is named in
// 401 messages; "" leaves it out.
Error ErrorFromResponse(const std::string& method, const std::string& path,
                        const HttpResponse& response,
                        const std::string& connection_description = "");

}  // namespace powerctl::kube
