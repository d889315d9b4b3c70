#pragma once
// What the lb-agent follows by watch: Services carrying the powerctl.io/load-balancing
// annotation (kept here, handed to LbAgent::Sync) and EndpointSlices, whose changes only wake
// the agent when they belong to such a Service. Each watch runs on a thread of its own with
// its own API connection; a failed watch is listed again after `restart_after`.

#include "core/common/result.h"
#include "core/kube/client.h"
#include "core/kube/transport.h"

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace powerctl::lb {

struct ServiceWatchOptions {
  kube::ClientOptions client;
  std::chrono::milliseconds restart_after{5'000};
  int watch_timeout_seconds = 300;
  std::function<void()> on_change;  // an annotated Service or one of its slices changed
};

class ServiceWatch {
 public:
  using TransportFactory = std::function<Result<std::unique_ptr<kube::HttpTransport>>()>;
  ServiceWatch(TransportFactory make_transport, ServiceWatchOptions options);
  ~ServiceWatch();  // Stop()
  ServiceWatch(const ServiceWatch&) = delete;
  ServiceWatch& operator=(const ServiceWatch&) = delete;

  void Start();
  void Stop();  // cancels the watches in flight and joins the threads

  bool listed() const;                           // the Services have been listed at least once
  std::vector<nlohmann::json> Services() const;  // annotated, by namespace/name
  std::string error() const;                     // the last watch failure still in effect, or ""

 private:
  void Follow(bool services);
  bool HandleService(const kube::WatchEvent& event);
  bool HandleSlice(const kube::WatchEvent& event);
  void StreamStarted(bool services);
  void SetError(const std::string& which, const std::string& message);
  bool Wait(std::chrono::milliseconds duration);  // false when stopping
  void Changed();

  TransportFactory make_transport_;
  ServiceWatchOptions options_;
  std::atomic<bool> stopping_{false};
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, nlohmann::json> services_;  // "namespace/name" -> annotated Service
  std::set<std::string> seen_;  // keys delivered since the current ListAndWatch began
  bool listed_ = false;
  std::map<std::string, std::string> errors_;  // "services"/"endpointslices" -> message
  std::vector<std::thread> threads_;
};

}  // namespace powerctl::lb
