#include "core/telemetry/metrics_api.h"

#include "core/common/duration.h"
#include "core/common/encoding.h"
#include "core/common/json_fields.h"
#include "core/kube/quantity.h"

#include <charconv>
#include <ctime>
#include <utility>

namespace powerctl::telemetry {
namespace {

using json = nlohmann::json;

constexpr char kApiPath[] = "/apis/metrics.k8s.io/v1beta1";

Error Malformed(const std::string& what, const std::string& why) {
  return MakeError(ErrorCode::kApi, what + ": " + why);
}

// A 404 for the whole group means no metrics server is registered: say what to do.
Error Explain(Error error, const std::string& what) {
  if (error.code == ErrorCode::kNotFound) {
    error.message +=
        " (is metrics-server installed and its APIService v1beta1.metrics.k8s.io "
        "Available? Otherwise set telemetry.cpuSource: prometheus)";
  }
  return WithContext(std::move(error), what);
}

Result<ResourceUsage> ParseUsage(const json& usage, const std::string& what) {
  if (!usage.is_object()) return Malformed(what, "has no usage");
  ResourceUsage out;
  std::string cpu = StringField(usage, {"cpu"});
  if (cpu.empty()) return Malformed(what, "has no usage.cpu");
  Result<double> cores = kube::ParseCpuCores(cpu);
  if (!cores.ok()) return Malformed(what, "usage.cpu: " + cores.error().message);
  out.cpu_cores = *cores;
  // Memory is optional for powerctl; a malformed value is still an error.
  if (std::string memory = StringField(usage, {"memory"}); !memory.empty()) {
    Result<double> bytes = kube::ParseBytes(memory);
    if (!bytes.ok()) return Malformed(what, "usage.memory: " + bytes.error().message);
    out.memory_bytes = *bytes;
  }
  return out;
}

template <typename T>
Status ParseTimes(const json& object, const std::string& what, T& out) {
  std::string stamp = StringField(object, {"timestamp"});
  std::optional<std::chrono::system_clock::time_point> time = ParseRfc3339(stamp);
  if (!time) {
    return Malformed(what, "timestamp \"" + ExcerptForMessage(stamp, 40) + "\" is not RFC 3339");
  }
  out.timestamp = *time;
  // Go formats windows as "30s" or "1m0.5s"; an unreadable one is informational only.
  if (Result<Duration> window = ParseDuration(StringField(object, {"window"})); window.ok()) {
    out.window = *window;
  }
  return OkStatus();
}

Result<int> Digits(std::string_view text, std::size_t pos, std::size_t count) {
  int value = 0;
  if (pos + count > text.size()) return MakeError(ErrorCode::kInvalidInput, "short");
  auto [end, ec] = std::from_chars(text.data() + pos, text.data() + pos + count, value);
  if (ec != std::errc() || end != text.data() + pos + count) {
    return MakeError(ErrorCode::kInvalidInput, "not digits");
  }
  return value;
}

}  // namespace

std::optional<std::chrono::system_clock::time_point> ParseRfc3339(std::string_view text) {
  // YYYY-MM-DDTHH:MM:SS[.frac](Z|+HH:MM|-HH:MM)
  if (text.size() < 20 || text[4] != '-' || text[7] != '-' ||
      (text[10] != 'T' && text[10] != 't') || text[13] != ':' || text[16] != ':') {
    return std::nullopt;
  }
  auto year = Digits(text, 0, 4), month = Digits(text, 5, 2), day = Digits(text, 8, 2);
  auto hour = Digits(text, 11, 2), minute = Digits(text, 14, 2), second = Digits(text, 17, 2);
  if (!year.ok() || !month.ok() || !day.ok() || !hour.ok() || !minute.ok() || !second.ok() ||
      *month < 1 || *month > 12 || *day < 1 || *day > 31 || *hour > 23 || *minute > 59 ||
      *second > 60) {
    return std::nullopt;
  }
  // system_clock counts nanoseconds in 64 bits (years 1678 to 2262): a year outside that
  // overflowed from_time_t (found by prometheus_response_fuzzer). No server writes such times.
  if (*year < 1900 || *year > 2200) return std::nullopt;
  std::size_t pos = 19;
  std::int64_t nanos = 0;
  if (text[pos] == '.') {
    std::size_t start = ++pos;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      if (pos - start < 9) nanos = nanos * 10 + (text[pos] - '0');
      ++pos;
    }
    if (pos == start) return std::nullopt;
    for (std::size_t n = pos - start; n < 9; ++n) nanos *= 10;
  }
  int offset_minutes = 0;
  std::string_view zone = text.substr(pos);
  if (zone == "Z" || zone == "z") {
    offset_minutes = 0;
  } else if (zone.size() == 6 && (zone[0] == '+' || zone[0] == '-') && zone[3] == ':') {
    auto oh = Digits(zone, 1, 2), om = Digits(zone, 4, 2);
    if (!oh.ok() || !om.ok() || *oh > 23 || *om > 59) return std::nullopt;
    offset_minutes = (*oh * 60 + *om) * (zone[0] == '-' ? -1 : 1);
  } else {
    return std::nullopt;
  }
  std::tm tm{};
  tm.tm_year = *year - 1900;
  tm.tm_mon = *month - 1;
  tm.tm_mday = *day;
  tm.tm_hour = *hour;
  tm.tm_min = *minute;
  tm.tm_sec = *second;
  std::time_t seconds = ::timegm(&tm);
  return std::chrono::system_clock::from_time_t(seconds) - std::chrono::minutes(offset_minutes) +
         std::chrono::duration_cast<std::chrono::system_clock::duration>(
             std::chrono::nanoseconds(nanos));
}

ResourceUsage PodMetrics::Total() const {
  ResourceUsage total;
  for (const ContainerMetrics& c : containers) {
    total.cpu_cores += c.usage.cpu_cores;
    total.memory_bytes += c.usage.memory_bytes;
  }
  return total;
}

Result<NodeMetrics> ParseNodeMetrics(const json& object) {
  NodeMetrics out;
  out.name = StringField(object, {"metadata", "name"});
  if (out.name.empty()) return Malformed("a NodeMetrics object", "has no metadata.name");
  std::string what = "NodeMetrics " + out.name;
  POWERCTL_CHECK_OK(ParseTimes(object, what, out));
  POWERCTL_TRY(usage, ParseUsage(object.contains("usage") ? object["usage"] : json(), what));
  out.usage = usage;
  return out;
}

Result<PodMetrics> ParsePodMetrics(const json& object) {
  PodMetrics out;
  out.name = StringField(object, {"metadata", "name"});
  out.namespace_ = StringField(object, {"metadata", "namespace"});
  if (out.name.empty()) return Malformed("a PodMetrics object", "has no metadata.name");
  std::string what = "PodMetrics " + out.namespace_ + "/" + out.name;
  POWERCTL_CHECK_OK(ParseTimes(object, what, out));
  const json& containers = object.contains("containers") ? object["containers"] : json::array();
  if (!containers.is_array()) return Malformed(what, "containers is not a list");
  for (const json& c : containers) {
    ContainerMetrics container;
    container.name = StringField(c, {"name"});
    POWERCTL_TRY(usage, ParseUsage(c.is_object() && c.contains("usage") ? c["usage"] : json(),
                                   what + " container \"" + container.name + "\""));
    container.usage = usage;
    out.containers.push_back(std::move(container));
  }
  return out;
}

Result<std::vector<NodeMetrics>> MetricsApiClient::ListNodeMetrics(
    const std::string& label_selector, std::map<std::string, Error>* invalid) {
  kube::ListOptions options;
  options.label_selector = label_selector;
  auto items = client_.List(std::string(kApiPath) + "/nodes", options);
  if (!items.ok()) return Explain(items.error(), "listing NodeMetrics");
  std::vector<NodeMetrics> out;
  for (const json& item : *items) {
    Result<NodeMetrics> metrics = ParseNodeMetrics(item);
    if (metrics.ok()) {
      out.push_back(std::move(metrics).value());
    } else if (invalid != nullptr) {
      invalid->emplace(StringField(item, {"metadata", "name"}), metrics.error());
    }
  }
  return out;
}

Result<NodeMetrics> MetricsApiClient::GetNodeMetrics(const std::string& node) {
  auto object = client_.Get(std::string(kApiPath) + "/nodes/" + node);
  if (!object.ok()) return Explain(object.error(), "getting NodeMetrics " + node);
  return ParseNodeMetrics(*object);
}

Result<std::vector<PodMetrics>> MetricsApiClient::ListPodMetrics(
    const std::string& namespace_, const std::string& label_selector,
    std::map<std::string, Error>* invalid) {
  kube::ListOptions options;
  options.label_selector = label_selector;
  std::string path = std::string(kApiPath) +
                     (namespace_.empty() ? "/pods" : "/namespaces/" + namespace_ + "/pods");
  auto items = client_.List(path, options);
  if (!items.ok()) return Explain(items.error(), "listing PodMetrics");
  std::vector<PodMetrics> out;
  for (const json& item : *items) {
    Result<PodMetrics> metrics = ParsePodMetrics(item);
    if (metrics.ok()) {
      out.push_back(std::move(metrics).value());
    } else if (invalid != nullptr) {
      std::string name = StringField(item, {"metadata", "name"});
      if (!name.empty()) name = StringField(item, {"metadata", "namespace"}) + "/" + name;
      invalid->emplace(name, metrics.error());
    }
  }
  return out;
}

Result<PodMetrics> MetricsApiClient::GetPodMetrics(const std::string& namespace_,
                                                   const std::string& name) {
  auto object = client_.Get(std::string(kApiPath) + "/namespaces/" + namespace_ + "/pods/" + name);
  if (!object.ok()) return Explain(object.error(), "getting PodMetrics " + namespace_ + "/" + name);
  return ParsePodMetrics(*object);
}

}  // namespace powerctl::telemetry
