// Client::ListAndWatch: an informer-style loop. List for the initial state and its
// resourceVersion, watch from there, follow bookmarks, re-watch when the server ends the
// stream, and relist when the version has expired (410), delivering what changed.

#include "core/common/json_bounds.h"
#include "core/common/json_fields.h"
#include "core/kube/client.h"

#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <string>

namespace powerctl::kube {
namespace {

using SteadyClock = std::chrono::steady_clock;

// A client-side limit on a watch, beyond timeoutSeconds which the server enforces:
// it only matters if the connection dies silently, which TCP keepalive may not notice.
constexpr std::chrono::seconds kWatchTimeoutSlack{30};

// The server-side timeout of one watch: with jitter in [timeout, 2 * timeout), as client-go's
// reflector, so that the watches of many clients started together do not all end together.
int WatchTimeout(const WatchOptions& options) {
  if (!options.jitter_timeout || options.timeout_seconds <= 1) return options.timeout_seconds;
  thread_local std::mt19937 rng{std::random_device{}()};
  std::uniform_int_distribution<int> extra(0, options.timeout_seconds - 1);
  return options.timeout_seconds + extra(rng);
}

// Watch events carry each object's metadata.managedFields, which no watcher here reads (the
// node cache and the Service watch): a quarter of a Pod's JSON as kube-scheduler's binds
// deliver it. The parser still reads its values, but discards them as it goes instead of
// inserting them into the document. The key sits at depth 3: the event {} > "object" {} >
// "metadata" {} > "managedFields".
json ParseWatchEvent(std::string_view line) {
  bool in_metadata = false;
  return ParseJsonBounded(line, kKubeJsonLimits,
                          [&in_metadata](int depth, json::parse_event_t event, json& parsed) {
                            if (event != json::parse_event_t::key) return true;
                            if (depth == 2) in_metadata = parsed == "metadata";
                            return !(depth == 3 && in_metadata && parsed == "managedFields");
                          });
}

std::string ObjectKey(const json& object) {
  return StringField(object, {"metadata", "namespace"}) + "/" +
         StringField(object, {"metadata", "name"});
}

// What the loop remembers of an object it delivered: enough to tell, after a relist, whether
// the handler has seen it. (Keeping whole objects was most of a 5,000-node server's memory.)
struct Known {
  std::string uid;
  std::string version;
  std::uint64_t listed = 0;  // the relist that last contained it
};

std::string ObjectUid(const json& object) {
  return StringField(object, {"metadata", "uid"});
}
std::string ObjectVersion(const json& object) {
  return StringField(object, {"metadata", "resourceVersion"});
}

// Stands for an object that is gone when only its identity is known: the object a DELETED
// event of a relist carries (a handler needs its name, namespace and uid only).
json Tombstone(const std::string& key, const Known& known) {
  const std::size_t slash = key.find('/');
  json metadata = {{"name", key.substr(slash + 1)}};
  if (slash > 0) metadata["namespace"] = key.substr(0, slash);
  if (!known.uid.empty()) metadata["uid"] = known.uid;
  if (!known.version.empty()) metadata["resourceVersion"] = known.version;
  return json{{"metadata", std::move(metadata)}};
}

}  // namespace

Status Client::ListAndWatch(const std::string& path, const WatchOptions& options,
                            const std::function<bool(const WatchEvent&)>& handler) {
  std::map<std::string, Known> known;  // "namespace/name" -> what was last delivered
  std::uint64_t relists = 0;
  std::string resource_version = options.resource_version;
  bool relist = resource_version.empty();
  int failures = 0;  // consecutive watches that failed or expired without delivering anything
  while (true) {
    if (relist) {
      // Page by page: the handler sees what it has not seen yet (unchanged objects are not
      // delivered again; one replaced under the same name is DELETED, then ADDED), and once
      // the list is complete, objects that are gone are DELETED.
      ListOptions list_options;
      list_options.label_selector = options.label_selector;
      list_options.field_selector = options.field_selector;
      const std::uint64_t pass = ++relists;
      bool stopped = false;
      auto on_item = [&](json& item) {
        std::string key = ObjectKey(item);
        Known now{ObjectUid(item), ObjectVersion(item), pass};
        auto old = known.find(key);
        if (old != known.end() && old->second.uid != now.uid) {
          json gone = Tombstone(key, old->second);
          known.erase(old);
          old = known.end();
          if (!handler(WatchEvent{"DELETED", std::move(gone)})) return false;
        }
        if (old != known.end() && old->second.version == now.version) {
          old->second.listed = pass;
          return true;
        }
        const char* type = old == known.end() ? "ADDED" : "MODIFIED";
        known[key] = std::move(now);
        // As the stream's objects come (ParseWatchEvent).
        if (auto metadata = item.find("metadata");
            metadata != item.end() && metadata->is_object()) {
          metadata->erase("managedFields");
        }
        return handler(WatchEvent{type, std::move(item)});
      };
      POWERCTL_TRY(listed, ListPages(path, list_options, on_item, nullptr, &stopped));
      if (stopped) return OkStatus();
      for (auto it = known.begin(); it != known.end();) {
        if (it->second.listed == pass) {
          ++it;
          continue;
        }
        json gone = Tombstone(it->first, it->second);
        it = known.erase(it);
        if (!handler(WatchEvent{"DELETED", std::move(gone)})) return OkStatus();
      }
      resource_version = std::move(listed);
      relist = false;
    }

    QueryParams params{{"watch", "1"}, {"allowWatchBookmarks", "true"}};
    if (!resource_version.empty()) params.emplace_back("resourceVersion", resource_version);
    const int timeout_seconds = WatchTimeout(options);
    if (timeout_seconds > 0) params.emplace_back("timeoutSeconds", std::to_string(timeout_seconds));
    if (!options.label_selector.empty())
      params.emplace_back("labelSelector", options.label_selector);
    if (!options.field_selector.empty())
      params.emplace_back("fieldSelector", options.field_selector);
    HttpRequest request;
    request.method = "GET";
    request.path = WithQuery(path, params);
    request.timeout = timeout_seconds > 0
                          ? std::chrono::seconds(timeout_seconds) + kWatchTimeoutSlack
                          : std::chrono::milliseconds(0);

    bool stopped = false;
    bool expired = false;
    int events = 0;
    std::optional<Error> failure;
    auto on_line = [&](std::string_view line) {
      json event = ParseWatchEvent(line);
      std::string type = StringField(event, {"type"});
      json* object = event.is_object() && event.contains("object") ? &event["object"] : nullptr;
      if (event.is_discarded() || type.empty() || object == nullptr || !object->is_object()) {
        failure = MakeError(ErrorCode::kApi, "malformed watch event from GET " + request.path);
        return false;
      }
      if (type == "ERROR") {
        // 410: the version fell out of the history window (reason Expired, or Gone on
        // older servers); anything else is an error the server reports mid-stream.
        expired = IntField(*object, {"code"}) == 410;
        if (!expired) {
          HttpResponse status{IntField(*object, {"code"}, 500), DumpJson(*object), {}};
          failure = ErrorFromResponse("GET", request.path, status, options_.connection_description);
        }
        return false;
      }
      ++events;
      std::string version = StringField(*object, {"metadata", "resourceVersion"});
      if (!version.empty()) resource_version = version;
      if (type == "BOOKMARK") return true;  // only moves the version forward
      if (type == "DELETED") {
        known.erase(ObjectKey(*object));
      } else {
        known[ObjectKey(*object)] = Known{ObjectUid(*object), version, relists};
      }
      stopped = !handler(WatchEvent{type, std::move(*object)});
      return !stopped;
    };
    std::string error_body;
    auto started = SteadyClock::now();
    Result<long> status = transport_->Stream(request, on_line, &error_body);
    if (stopped) return OkStatus();
    if (!status.ok() && IsCancelled(status.error())) return status.error();  // not retried
    if (events > 0) failures = 0;
    if (expired || (status.ok() && *status == 410)) {
      if (options_.log) options_.log->debug("watch of {} expired; listing again", path);
      relist = true;
      // Expiring again straight after a relist, with nothing in between, is not progress:
      // back off, and give up if it keeps happening.
      if (events == 0) {
        if (++failures >= std::max(1, options_.max_attempts)) {
          return MakeError(ErrorCode::kApi, "the watch of " + path + " keeps expiring (HTTP 410)");
        }
        Sleep(Backoff(failures));
      }
      continue;
    }
    if (!status.ok()) {
      failure = status.error();  // a dropped connection: watch again from the last version
    } else if (*status != 200) {
      HttpResponse response{*status, error_body, {}};
      Error error =
          ErrorFromResponse("GET", request.path, response, options_.connection_description);
      if (*status != 429 && *status < 500) return error;  // e.g. 403: waiting will not help
      failure = error;
    }
    if (failure) {
      if (++failures >= std::max(1, options_.max_attempts)) return *failure;
      if (options_.log) {
        options_.log->debug("watch of {} failed ({}/{}): {}", path, failures, options_.max_attempts,
                            failure->message);
      }
      Sleep(Backoff(failures));
    } else if (events == 0 && SteadyClock::now() - started < std::chrono::seconds(1)) {
      Sleep(Backoff(1));  // a server that ends empty watches at once must not make us spin
    }
  }
}

}  // namespace powerctl::kube
