#pragma once
// core/v1 Events on a pod, as `kubectl describe pod` and `kubectl get events` show them: the
// fields every Event powerctl writes shares (the extender's records, consolidate's wake-up
// notes), and the rules for their names, times and message sizes.

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <string>

namespace powerctl::kube {

// The API server refuses longer Event messages (1 KiB is what kubectl shows in full).
inline constexpr std::size_t kMaxEventMessageBytes = 1024;

// An Event's name for an object named `object_name`: "<object_name>.<suffix>", the name cut
// so the whole is a valid metadata.name.
std::string EventName(const std::string& object_name, const std::string& suffix);

// `t` as an Event's firstTimestamp/lastTimestamp: RFC 3339 in UTC, whole seconds.
std::string EventTimestamp(std::chrono::system_clock::time_point t);

struct PodEventFields {
  std::string name;  // metadata.name; "" lets the API server pick one after "<pod>."
  std::string pod_namespace, pod_name, pod_uid;  // the involved pod (uid optional)
  std::string reason, type = "Normal", action;
  std::string message;              // cut to kMaxEventMessageBytes on a character boundary
  std::string component, instance;  // source.component/reportingComponent, reportingInstance
  std::uint64_t count = 1;
  std::chrono::system_clock::time_point now;
};

nlohmann::json PodEvent(const PodEventFields& fields);

}  // namespace powerctl::kube
