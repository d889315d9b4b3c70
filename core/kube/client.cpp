// Client: requests with retries, CRUD verbs, paged lists and /version. Watches are in
// watch.cpp and error messages in api_errors.cpp.

#include "core/kube/client.h"

#include "core/common/json_bounds.h"
#include "core/common/json_fields.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <iterator>
#include <optional>
#include <random>
#include <thread>
#include <utility>

namespace powerctl::kube {
namespace {

// A server asking for a longer pause than this is treated as asking for this much: a CLI
// that goes silent for minutes looks hung.
constexpr std::chrono::seconds kMaxRetryAfter{30};

HttpRequest MakeRequest(std::string method, std::string path, std::string body = "",
                        std::string content_type = "") {
  HttpRequest request;
  request.method = std::move(method);
  request.path = std::move(path);
  request.body = std::move(body);
  request.content_type = std::move(content_type);
  return request;
}

// Connection refused means the request never reached the server, so any method may be
// retried. A reset or empty reply may come after the server acted on it: a POST is not
// retried then, as the second attempt would fail with AlreadyExists for an object that
// was in fact created. Everything else (TLS, DNS, timeouts) would fail the same way again.
bool IsRetryableNetworkError(const Error& error, const std::string& method) {
  if (error.code != ErrorCode::kNetwork) return false;
  if (error.message.find("Connection refused") != std::string::npos) return true;
  bool reset = error.message.find("Connection reset") != std::string::npos ||
               error.message.find("Empty reply from server") != std::string::npos;
  return reset && method != "POST";
}

std::optional<std::chrono::milliseconds> RetryAfter(const HttpResponse& response) {
  auto it = response.headers.find("retry-after");
  if (it == response.headers.end()) return std::nullopt;
  long seconds = 0;
  const std::string& text = it->second;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
  if (ec != std::errc() || end != text.data() + text.size() || seconds <= 0) return std::nullopt;
  return std::chrono::milliseconds(std::min<long>(seconds, kMaxRetryAfter.count()) * 1000);
}

bool IsSuccess(long status) {
  return status >= 200 && status < 300;
}

Result<json> ParseBody(const HttpResponse& response, const std::string& method,
                       const std::string& path) {
  if (response.body.empty()) return json::object();
  if (const auto violation = JsonBoundsViolation(response.body, kKubeJsonLimits)) {
    return MakeError(ErrorCode::kApi, "the response to " + method + " " + path + " " + *violation);
  }
  json parsed = ParseJsonBounded(response.body, kKubeJsonLimits);
  if (parsed.is_discarded()) {
    return MakeError(ErrorCode::kApi,
                     "the response to " + method + " " + path + " is not valid JSON");
  }
  return parsed;
}

json* FindMutableField(json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

// List items come without kind and apiVersion; fill them in from the list (PodList -> Pod)
// so they look like the objects of a GET or a watch event.
void FillKind(json& item, const json& list) {
  std::string list_kind = StringField(list, {"kind"});
  if (!item.is_object() || item.contains("kind") || !list_kind.ends_with("List")) return;
  item["kind"] = list_kind.substr(0, list_kind.size() - 4);
  item["apiVersion"] = StringField(list, {"apiVersion"});
}

int LeadingNumber(const std::string& text) {  // "20+" -> 20 (GKE and EKS add suffixes)
  std::string digits;
  std::copy_if(text.begin(), text.end(), std::back_inserter(digits),
               [](char c) { return c >= '0' && c <= '9'; });
  int value = 0;
  std::from_chars(digits.data(), digits.data() + digits.size(), value);
  return value;
}

}  // namespace

Client::Client(std::unique_ptr<HttpTransport> transport, ClientOptions options)
    : transport_(std::move(transport)), options_(std::move(options)) {}

std::chrono::milliseconds Client::Backoff(int attempt) const {
  // Equal jitter: half fixed, half random, so that clients retrying together spread out.
  auto base = options_.initial_backoff;
  for (int i = 1; i < attempt && base < options_.max_backoff; ++i) base *= 2;
  base = std::min(base, options_.max_backoff);
  thread_local std::mt19937 rng{std::random_device{}()};
  std::uniform_int_distribution<long> jitter(0, base.count() / 2);
  return std::chrono::milliseconds(base.count() - base.count() / 2 + jitter(rng));
}

void Client::Sleep(std::chrono::milliseconds duration) const {
  if (options_.sleep) {
    options_.sleep(duration);
  } else {
    std::this_thread::sleep_for(duration);
  }
}

std::string Client::WithQuery(std::string path, const QueryParams& params) {
  auto encode = [](const std::string& value) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    std::string out;
    for (unsigned char c : value) {
      if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
        out += static_cast<char>(c);
      } else {
        out += {'%', kHex[c >> 4], kHex[c & 15]};
      }
    }
    return out;
  };
  char separator = path.find('?') == std::string::npos ? '?' : '&';
  for (const auto& [key, value] : params) {
    path += separator + encode(key) + "=" + encode(value);
    separator = '&';
  }
  return path;
}

Result<HttpResponse> Client::Do(HttpRequest request, bool retry_on_5xx) {
  const int attempts = std::max(1, options_.max_attempts);
  for (int attempt = 1;; ++attempt) {
    Result<HttpResponse> response = transport_->Send(request);
    std::optional<std::chrono::milliseconds> delay;
    std::string why;
    if (!response.ok()) {
      if (!IsRetryableNetworkError(response.error(), request.method)) return response;
      why = response.error().message;
    } else {
      long status = response->status;
      bool server_error = status == 500 || status == 502 || status == 503 || status == 504;
      if (status != 429 && !(retry_on_5xx && server_error)) return response;
      why = "HTTP " + std::to_string(status);
      delay = RetryAfter(*response);
    }
    if (attempt >= attempts) return response;  // the caller reports the last failure
    std::chrono::milliseconds wait = delay.value_or(Backoff(attempt));
    if (options_.log) {
      options_.log->debug("retrying {} {} in {}ms (attempt {}/{}): {}", request.method,
                          request.path, wait.count(), attempt + 1, attempts, why);
    }
    Sleep(wait);
  }
}

Result<HttpResponse> Client::DoSuccessful(HttpRequest request, bool retry_on_5xx) {
  std::string method = request.method;
  std::string path = request.path;
  POWERCTL_TRY(response, Do(std::move(request), retry_on_5xx));
  if (!IsSuccess(response.status)) {
    return ErrorFromResponse(method, path, response, options_.connection_description);
  }
  return response;
}

Result<json> Client::DoJson(HttpRequest request, bool retry_on_5xx) {
  std::string method = request.method;
  std::string path = request.path;
  POWERCTL_TRY(response, DoSuccessful(std::move(request), retry_on_5xx));
  return ParseBody(response, method, path);
}

Result<json> Client::Get(const std::string& path) {
  return DoJson(MakeRequest("GET", path), true);
}

Result<json> Client::GetProxied(const std::string& path, std::chrono::milliseconds timeout) {
  HttpRequest request = MakeRequest("GET", path);
  request.timeout = timeout;
  return DoJson(std::move(request), false);
}

Result<std::string> Client::GetProxiedText(const std::string& path,
                                           std::chrono::milliseconds timeout) {
  HttpRequest request = MakeRequest("GET", path);
  request.timeout = timeout;
  POWERCTL_TRY(response, DoSuccessful(std::move(request), false));
  return std::move(response.body);
}

Result<std::string> Client::ListPages(const std::string& path, const ListOptions& options,
                                      const std::function<bool(json&)>& on_item,
                                      const std::function<void()>& on_restart, bool* stopped) {
  std::string continue_token;
  bool restarted = false;
  while (true) {
    QueryParams params;
    if (!options.label_selector.empty())
      params.emplace_back("labelSelector", options.label_selector);
    if (!options.field_selector.empty())
      params.emplace_back("fieldSelector", options.field_selector);
    if (options.limit > 0) params.emplace_back("limit", std::to_string(options.limit));
    if (!continue_token.empty()) params.emplace_back("continue", continue_token);
    std::string page_path = WithQuery(path, params);
    POWERCTL_TRY(response, Do(MakeRequest("GET", page_path), true));
    if (response.status == 410 && !continue_token.empty() && !restarted) {
      // The continue token outlived etcd's compaction window. Pages from different
      // snapshots would not be a consistent list, so start again from the beginning.
      if (options_.log) options_.log->debug("continue token for {} expired; listing again", path);
      restarted = true;
      if (on_restart) on_restart();
      continue_token.clear();
      continue;
    }
    if (!IsSuccess(response.status)) {
      return ErrorFromResponse("GET", page_path, response, options_.connection_description);
    }
    POWERCTL_TRY(page, ParseBody(response, "GET", page_path));
    response.body.clear();
    response.body.shrink_to_fit();  // one page at a time: the text is not needed any more
    if (json* items = FindMutableField(page, "items"); items != nullptr && items->is_array()) {
      for (json& item : *items) {
        FillKind(item, page);
        if (!on_item(item)) {
          if (stopped != nullptr) *stopped = true;
          return StringField(page, {"metadata", "resourceVersion"});
        }
      }
    }
    continue_token = StringField(page, {"metadata", "continue"});
    if (continue_token.empty()) return StringField(page, {"metadata", "resourceVersion"});
  }
}

Result<Client::ListResult> Client::ListAll(const std::string& path, const ListOptions& options) {
  ListResult result;
  POWERCTL_TRY(version, ListPages(
                            path, options,
                            [&result](json& item) {
                              result.items.push_back(std::move(item));
                              return true;
                            },
                            [&result] { result.items.clear(); }, nullptr));
  result.resource_version = std::move(version);
  return result;
}

Result<std::vector<json>> Client::List(const std::string& path, const ListOptions& options) {
  POWERCTL_TRY(result, ListAll(path, options));
  return std::move(result.items);
}

Result<json> Client::Create(const std::string& collection_path, const json& object, bool dry_run) {
  QueryParams params;
  if (dry_run) params.emplace_back("dryRun", "All");
  // Not retried on 5xx: the object may have been created before the error.
  return DoJson(
      MakeRequest("POST", WithQuery(collection_path, params), DumpJson(object), "application/json"),
      false);
}

Status Client::CreateOnly(const std::string& collection_path, const json& object) {
  // Not retried on 5xx, as Create.
  POWERCTL_CHECK_OK(DoSuccessful(
      MakeRequest("POST", collection_path, DumpJson(object), "application/json"), false));
  return OkStatus();
}

Result<json> Client::Replace(const std::string& path, const json& object) {
  // Not retried on 5xx: with metadata.resourceVersion set, a retry of an update that did land
  // would fail with 409 and be mistaken for someone else's change.
  return DoJson(MakeRequest("PUT", path, DumpJson(object), "application/json"), false);
}

Result<json> Client::Apply(const std::string& path, const json& object,
                           const ApplyOptions& options) {
  QueryParams params{{"fieldManager", options.field_manager}};
  if (options.force) params.emplace_back("force", "true");
  if (options.dry_run) params.emplace_back("dryRun", "All");
  json body = object;
  // An object read back from the server carries managedFields, which apply rejects.
  if (json* metadata = body.is_object() && body.contains("metadata") ? &body["metadata"] : nullptr;
      metadata != nullptr && metadata->is_object()) {
    metadata->erase("managedFields");
  }
  // The apply content type is YAML, and JSON is YAML.
  return DoJson(
      MakeRequest("PATCH", WithQuery(path, params), DumpJson(body), "application/apply-patch+yaml"),
      true);
}

Result<json> Client::MergePatch(const std::string& path, const json& patch, bool dry_run) {
  QueryParams params;
  if (dry_run) params.emplace_back("dryRun", "All");
  return DoJson(MakeRequest("PATCH", WithQuery(path, params), DumpJson(patch),
                            "application/merge-patch+json"),
                true);
}

Result<json> Client::JsonPatch(const std::string& path, const json& patch, bool dry_run) {
  QueryParams params;
  if (dry_run) params.emplace_back("dryRun", "All");
  // Not retried on 5xx: an "add" to an array applied twice would append twice.
  return DoJson(
      MakeRequest("PATCH", WithQuery(path, params), DumpJson(patch), "application/json-patch+json"),
      false);
}

Result<json> Client::Delete(const std::string& path, bool dry_run, const std::string& propagation) {
  json options = {{"kind", "DeleteOptions"}, {"apiVersion", "v1"}};
  if (!propagation.empty()) options["propagationPolicy"] = propagation;
  if (dry_run) options["dryRun"] = json::array({"All"});
  return DoJson(MakeRequest("DELETE", path, DumpJson(options), "application/json"), true);
}

Result<ServerVersion> Client::Version() {
  POWERCTL_TRY(body, DoJson(MakeRequest("GET", "/version"), true));
  ServerVersion version;
  version.git_version = StringField(body, {"gitVersion"});
  version.major = LeadingNumber(StringField(body, {"major"}));
  version.minor = LeadingNumber(StringField(body, {"minor"}));
  if (version.git_version.empty() || version.major == 0) {
    return MakeError(ErrorCode::kApi, "GET /version did not return a Kubernetes version");
  }
  return version;
}

}  // namespace powerctl::kube
