#include "core/kube/events.h"

#include "core/common/encoding.h"

#include <fmt/format.h>

#include <algorithm>
#include <ctime>

namespace powerctl::kube {
namespace {

constexpr std::size_t kMaxNameLength = 253;

}  // namespace

std::string EventName(const std::string& object_name, const std::string& suffix_text) {
  const std::string suffix = "." + suffix_text;
  std::string name = object_name.substr(
      0, std::min(object_name.size(), kMaxNameLength - std::min(kMaxNameLength, suffix.size())));
  while (!name.empty() && (name.back() == '.' || name.back() == '-')) name.pop_back();
  return name + suffix;
}

std::string EventTimestamp(std::chrono::system_clock::time_point t) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(t);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z", utc.tm_year + 1900, utc.tm_mon + 1,
                     utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec);
}

nlohmann::json PodEvent(const PodEventFields& f) {
  const std::string when = EventTimestamp(f.now);
  nlohmann::json metadata = {{"namespace", f.pod_namespace}};
  if (f.name.empty()) {
    metadata["generateName"] =
        f.pod_name.substr(0, std::min<std::size_t>(f.pod_name.size(), 200)) + ".";
  } else {
    metadata["name"] = f.name;
  }
  nlohmann::json involved = {
      {"apiVersion", "v1"}, {"kind", "Pod"}, {"namespace", f.pod_namespace}, {"name", f.pod_name}};
  if (!f.pod_uid.empty()) involved["uid"] = f.pod_uid;
  return {{"apiVersion", "v1"},
          {"kind", "Event"},
          {"metadata", std::move(metadata)},
          {"involvedObject", std::move(involved)},
          {"reason", f.reason},
          {"message", TruncateUtf8(f.message, kMaxEventMessageBytes)},
          {"type", f.type},
          {"source", {{"component", f.component}}},
          {"reportingComponent", f.component},
          {"reportingInstance", f.instance},
          {"action", f.action},
          {"firstTimestamp", when},
          {"lastTimestamp", when},
          {"count", std::max<std::uint64_t>(1, f.count)}};
}

}  // namespace powerctl::kube
