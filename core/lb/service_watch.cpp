#include "core/lb/service_watch.h"

#include "core/cluster/watch_transport.h"
#include "core/common/json_fields.h"
#include "core/lb/agent_plan.h"
#include "core/lb/endpoints.h"

#include <utility>

namespace powerctl::lb {
namespace {

using json = nlohmann::json;

std::string KeyOf(const json& object) {
  return StringField(object, {"metadata", "namespace"}) + "/" +
         StringField(object, {"metadata", "name"});
}

constexpr const char* kSlicesV1 = "/apis/discovery.k8s.io/v1/endpointslices";
constexpr const char* kSlicesV1beta1 = "/apis/discovery.k8s.io/v1beta1/endpointslices";

}  // namespace

ServiceWatch::ServiceWatch(TransportFactory make_transport, ServiceWatchOptions options)
    : make_transport_(std::move(make_transport)), options_(std::move(options)) {}

ServiceWatch::~ServiceWatch() {
  Stop();
}

void ServiceWatch::Start() {
  threads_.emplace_back([this] { Follow(true); });
  threads_.emplace_back([this] { Follow(false); });
}

void ServiceWatch::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

bool ServiceWatch::listed() const {
  std::lock_guard lock(mu_);
  return listed_;
}

std::vector<json> ServiceWatch::Services() const {
  std::lock_guard lock(mu_);
  std::vector<json> out;
  for (const auto& [key, service] : services_) out.push_back(service);
  return out;
}

std::string ServiceWatch::error() const {
  std::lock_guard lock(mu_);
  std::string out;
  for (const auto& [which, message] : errors_) {
    if (!message.empty()) out += (out.empty() ? "" : "; ") + which + ": " + message;
  }
  return out;
}

bool ServiceWatch::Wait(std::chrono::milliseconds duration) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, duration, [this] { return stopping_.load(); });
  return !stopping_;
}

void ServiceWatch::SetError(const std::string& which, const std::string& message) {
  std::lock_guard lock(mu_);
  errors_[which] = message;
}

void ServiceWatch::Changed() {
  if (options_.on_change) options_.on_change();
}

void ServiceWatch::StreamStarted(bool services) {
  if (!services) return;
  {
    // The list before this stream (a new ListAndWatch's) delivered every Service that exists:
    // the ones it did not deliver were deleted while no watch was open.
    std::lock_guard lock(mu_);
    for (auto it = services_.begin(); it != services_.end();) {
      if (seen_.count(it->first) == 0) {
        it = services_.erase(it);
      } else {
        ++it;
      }
    }
    seen_.clear();
    listed_ = true;
  }
  Changed();  // the first list, or a relist: sync with what is known now
}

bool ServiceWatch::HandleService(const kube::WatchEvent& event) {
  const std::string key = KeyOf(event.object);
  bool changed = false;
  {
    std::lock_guard lock(mu_);
    auto it = services_.find(key);
    if (event.type == "DELETED" || !HasLoadBalancingAnnotation(event.object)) {
      // Losing the annotation is a change too: the agent must drop the Service's rules.
      if (it != services_.end()) {
        services_.erase(it);
        changed = true;
      }
    } else {
      seen_.insert(key);
      // Status-only updates (load-balancer ingress) leave spec and annotations alone.
      // Compared in place (no copies): absent on both sides is the same.
      auto same = [&](std::initializer_list<std::string_view> path) {
        const json* before = FindField(it->second, path);
        const json* after = FindField(event.object, path);
        return before == nullptr ? after == nullptr : after != nullptr && *before == *after;
      };
      changed = it == services_.end() || !same({"spec"}) || !same({"metadata", "annotations"});
      services_[key] = event.object;
    }
    if (!listed_) changed = false;  // the end of the list triggers one sync for all of it
  }
  if (changed) Changed();
  return !stopping_;
}

bool ServiceWatch::HandleSlice(const kube::WatchEvent& event) {
  std::string service = StringField(event.object, {"metadata", "labels", kServiceNameLabel});
  bool ours = false;
  {
    std::lock_guard lock(mu_);
    ours = listed_ && services_.count(StringField(event.object, {"metadata", "namespace"}) + "/" +
                                      service) > 0;
  }
  if (ours) Changed();
  return !stopping_;
}

void ServiceWatch::Follow(bool services) {
  const std::string which = services ? "services" : "endpointslices";
  std::string path = services ? "/api/v1/services" : kSlicesV1;
  while (!stopping_) {
    auto transport = make_transport_();
    if (!transport.ok()) {
      SetError(which, "connecting to the API server: " + transport.error().message);
      if (!Wait(options_.restart_after)) return;
      continue;
    }
    if (services) {
      std::lock_guard lock(mu_);
      seen_.clear();  // what this call's list delivers decides what is gone
    }
    // Only the first stream of a ListAndWatch follows a list of its own. Later ones resume
    // the watch from its version (the API server ends watches every few minutes, or the
    // connection dropped) without a list, and a relist inside ListAndWatch reports what it
    // found gone as DELETED itself; pruning there dropped every Service that had no event
    // since.
    bool listed_this_call = false;
    cluster::WatchHooks hooks;
    hooks.stopping = &stopping_;
    hooks.on_stream_start = [this, services, &listed_this_call] {
      if (std::exchange(listed_this_call, true)) return;
      StreamStarted(services);
    };
    hooks.on_success = [this, which] { SetError(which, ""); };
    hooks.on_failure = [this, which](const Error& e) { SetError(which, e.message); };
    kube::ClientOptions client_options = options_.client;
    client_options.sleep = [this](std::chrono::milliseconds d) { Wait(d); };
    kube::Client client(cluster::MakeWatchTransport(std::move(*transport), hooks), client_options);
    kube::WatchOptions watch;
    watch.timeout_seconds = options_.watch_timeout_seconds;
    watch.jitter_timeout = true;
    Status status = client.ListAndWatch(path, watch, [&](const kube::WatchEvent& event) {
      return services ? HandleService(event) : HandleSlice(event);
    });
    if (stopping_) return;
    if (!status.ok() && !services && status.error().code == ErrorCode::kNotFound &&
        path == kSlicesV1) {
      path = kSlicesV1beta1;  // discovery.k8s.io/v1 is served from 1.21
      continue;
    }
    if (!status.ok()) {
      SetError(which, status.error().message);
      if (options_.client.log) {
        options_.client.log->warn("lb-agent: watch of {} failed, restarting in {}ms: {}", path,
                                  options_.restart_after.count(), status.error().message);
      }
    }
    if (!Wait(options_.restart_after)) return;
  }
}

}  // namespace powerctl::lb
