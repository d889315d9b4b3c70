// Temperature sources: ipmi_exporter scraped per node, and PromQL over its series.

#include "core/telemetry/sources.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <functional>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <utility>

namespace powerctl::telemetry {
namespace {

// A series' labels as one 64-bit hash, to match a value with its timestamp: a refresh holds
// 15,000 of these at 5,000 nodes, and as strings ("k\0v\0...") they were 2 MiB of its peak.
// `buffer` is reused between calls. Two label sets of one refresh share a hash with odds of
// about 1e-11; the cost would be one sample's scrape time taken from another series.
std::uint64_t LabelsHash(const std::map<std::string, std::string>& labels, std::string& buffer) {
  buffer.clear();
  for (const auto& [name, value] : labels) {
    buffer.append(name).push_back('\0');
    buffer.append(value).push_back('\0');
  }
  return std::hash<std::string>{}(buffer);
}

// The labels of a `by (...)` clause: those that are classic label names ([a-zA-Z_][a-zA-Z0-9_]*).
// Prometheus 2 (Debian 12's) has no others and rejects a query naming one; Prometheus 3's
// UTF-8 names would need quoting, and are left out rather than risk the whole query.
std::string LabelList(const KeepLabels& labels) {
  std::string out;
  for (const std::string& label : labels) {
    const bool valid = !label.empty() && !std::isdigit(static_cast<unsigned char>(label[0])) &&
                       std::all_of(label.begin(), label.end(), [](char c) {
                         return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
                       });
    if (valid) out += (out.empty() ? "" : ", ") + label;
  }
  return out;
}

std::string JoinNames(const std::vector<std::string>& names) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? " or " : ", ";
    out += "\"" + names[i] + "\"";
  }
  return out;
}

Reading Pick(const std::vector<SensorSample>& samples, const std::vector<std::string>& names,
             const char* role, SensorTexts& texts) {
  if (names.empty()) return MissingReading(texts.NoSensor(role, names));
  // Several sensors of one name (two series that differ only in a label not read, e.g. the
  // sensor id): the highest plausible reading counts, as in the Prometheus source's query;
  // an implausible one only when there is nothing better, so its reason is shown.
  auto rank = [](double v) { return std::isnan(v) ? 0 : PlausibleCelsius(v) ? 2 : 1; };
  for (const std::string& name : names) {
    const SensorSample* best = nullptr;
    for (const SensorSample& sample : samples) {
      if (sample.name != name) continue;
      if (best == nullptr || rank(sample.value) > rank(best->value) ||
          (rank(sample.value) == rank(best->value) && sample.value > best->value)) {
        best = &sample;
      }
    }
    if (best != nullptr) {
      return TemperatureReading(best->value, best->observed_at, texts.Sensor(name));
    }
  }
  return MissingReading(texts.NoSensor(role, names), texts.where());
}

// Every role of a node that could not be read gets the same reason.
Temperatures AllMissing(const SharedText& reason, const SharedText& where) {
  Reading r = MissingReading(reason, where);
  return Temperatures{r, r, r};
}

class IpmiExporterTemperatureSource : public TemperatureSource {
 public:
  IpmiExporterTemperatureSource(HttpClient& http, IpmiExporterOptions options, TimeBase time,
                                std::shared_ptr<spdlog::logger> log)
      : http_(http), options_(std::move(options)), time_(std::move(time)), log_(std::move(log)) {}

  Result<std::map<std::string, Temperatures>> Fetch(const std::vector<NodeInfo>& nodes) override {
    std::vector<Temperatures> results(nodes.size());
    std::atomic<std::size_t> next{0};
    auto work = [&] {
      for (std::size_t i; (i = next++) < nodes.size();) results[i] = Scrape(nodes[i]);
    };
    // Nodes are independent, and one slow BMC must not hold up the rest for long.
    std::vector<std::thread> helpers;
    std::size_t wanted = std::min<std::size_t>(std::max(options_.parallelism, 1), nodes.size());
    for (std::size_t i = 1; i < wanted; ++i) {
      try {
        helpers.emplace_back(work);
      } catch (const std::system_error&) {
        break;  // out of threads: the ones we have finish the work
      }
    }
    work();
    for (std::thread& t : helpers) t.join();
    std::map<std::string, Temperatures> out;
    for (std::size_t i = 0; i < nodes.size(); ++i) out[nodes[i].name] = std::move(results[i]);
    return out;
  }

  std::string Describe() const override {
    return "ipmi_exporter on each node's InternalIP, port " + std::to_string(options_.port);
  }

 private:
  Temperatures Scrape(const NodeInfo& node) {
    std::string url = IpmiExporterUrl(node, options_.port, options_.path);
    if (url.empty())
      return AllMissing("the node has no InternalIP address to scrape", "ipmi_exporter");
    const std::string where = "ipmi_exporter at " + url;
    HttpClientRequest request;
    request.url = url;
    request.timeout = options_.timeout;
    Result<HttpClientResponse> response = http_.Do(request);
    if (!response.ok()) return AllMissing(response.error().message, where);
    if (response->status != 200) {
      return AllMissing("HTTP " + std::to_string(response->status) + " from " + url, where);
    }
    SteadyTime scraped_at = time_.clock.now();
    Result<Exposition> exposition = ParseExposition(response->body, options_.limits);
    if (!exposition.ok()) {
      if (log_) log_->debug("{}: {}", where, exposition.error().message);
      return AllMissing("unreadable metrics: " + exposition.error().message, where);
    }
    std::vector<SensorSample> samples;
    for (const ExpositionSample* s : FindSamples(*exposition, kTemperatureMetric)) {
      auto name = s->labels.find("name");
      if (name == s->labels.end()) continue;
      SteadyTime at = scraped_at;
      if (s->timestamp_ms) {
        at = time_.FromWall(WallTime(std::chrono::milliseconds(*s->timestamp_ms)));
      }
      samples.push_back({name->second, s->value, at});
    }
    Temperatures picked = PickSensors(samples, options_.sensors, where);
    // ipmi_up{collector="ipmi"} 0 explains absent sensors better than their absence does.
    for (const ExpositionSample* up :
         FindSamples(*exposition, "ipmi_up", {{"collector", "ipmi"}})) {
      if (up->value != 0) continue;
      for (Reading* r : {&picked.ambient, &picked.cpu1, &picked.cpu2}) {
        if (!r->ok())
          r->missing_reason =
              r->missing_reason + "; ipmi_up{collector=\"ipmi\"} is 0 (the BMC did not answer)";
      }
    }
    return picked;
  }

  HttpClient& http_;
  IpmiExporterOptions options_;
  TimeBase time_;
  std::shared_ptr<spdlog::logger> log_;
};

class PrometheusTemperatureSource : public TemperatureSource {
 public:
  PrometheusTemperatureSource(PrometheusClient& prometheus, PrometheusTemperatureOptions options,
                              TimeBase time)
      : prometheus_(prometheus), options_(std::move(options)), time_(std::move(time)) {}

  Result<std::map<std::string, Temperatures>> Fetch(const std::vector<NodeInfo>& nodes) override {
    std::string alternatives;
    for (const auto* list :
         {&options_.sensors.ambient, &options_.sensors.cpu1, &options_.sensors.cpu2}) {
      for (const std::string& name : *list) {
        alternatives += (alternatives.empty() ? "" : "|") + PromRegexLiteral(name);
      }
    }
    std::string selector = std::string(kTemperatureMetric) + "{name=~\"" + alternatives + "\"}";
    // Only the labels that place a reading are decoded (not __name__, so a value's labels
    // are also its timestamp's), and series are reduced as they are decoded, never held all
    // at once: a 5,000-node refresh is 15,000 series per query, and holding them decoded (and
    // the timestamps keyed by label maps) was most of a refresh's memory.
    const KeepLabels keep = options_.mapping.LabelsRead({"name"});
    // Prometheus drops every other label itself (`max by`), so the response carries only
    // these: the exporter's, the scrape job's and relabelling's labels were much of its bytes
    // (at 5,000 nodes in the bench, five labels a series, 2.4 MB of values; with these, 1.4).
    // Series that differ only in a label not read name the same sensor of the same node; the
    // highest plausible reading counts (an implausible one only when there is no other, so
    // its reason shows), and the newest scrape time.
    const std::string by = "max by (" + LabelList(keep) + ") ";
    const std::string values =
        fmt::format("{0}({1} >= {2} <= {3}) or {0}({1})", by, selector, kMinCelsius, kMaxCelsius);
    // timestamp() gives each sample's scrape time; the query's own time is just "now".
    std::unordered_map<std::uint64_t, WallTime> sample_times;  // by LabelsHash
    std::string key_buffer;
    POWERCTL_CHECK_OK(prometheus_.Query(
        by + "(timestamp(" + selector + "))", std::nullopt, keep, [&](PromSeries&& series) {
          if (series.samples.empty()) return;
          if (auto at = WallTimeFromSeconds(series.samples.front().value)) {
            sample_times[LabelsHash(series.metric, key_buffer)] = *at;
          }
        }));
    NodeNameMapper mapper(nodes, options_.mapping);
    std::vector<std::vector<SensorSample>> by_node(nodes.size());  // by position in `nodes`
    POWERCTL_CHECK_OK(prometheus_.Query(values, std::nullopt, keep, [&](PromSeries&& series) {
      auto node = mapper.MapPosition(series.metric);
      auto name = series.metric.find("name");
      if (!node || name == series.metric.end() || series.samples.empty()) return;
      auto time = sample_times.find(LabelsHash(series.metric, key_buffer));
      WallTime at = time != sample_times.end() ? time->second : series.samples.front().time;
      std::vector<SensorSample>& samples = by_node[*node];
      if (samples.empty()) samples.reserve(3);  // ambient, cpu1, cpu2: one block, not three
      samples.push_back(
          {std::move(name->second), series.samples.front().value, time_.FromWall(at)});
    }));
    sample_times = {};
    SensorTexts texts("Prometheus at " + prometheus_.url());
    const SharedText no_series = "Prometheus has no " + std::string(kTemperatureMetric) +
                                 " series for this node (series are matched to nodes by a node "
                                 "label, or by instance host = node name, InternalIP or Hostname)";
    std::map<std::string, Temperatures> out;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      out[nodes[i].name] = !by_node[i].empty() ? PickSensors(by_node[i], options_.sensors, texts)
                                               : AllMissing(no_series, texts.where());
      std::vector<SensorSample>().swap(by_node[i]);
    }
    return out;
  }

  std::string Describe() const override { return "Prometheus at " + prometheus_.url(); }

 private:
  PrometheusClient& prometheus_;
  PrometheusTemperatureOptions options_;
  TimeBase time_;
};

}  // namespace

const SharedText& SensorTexts::Sensor(const std::string& name) {
  auto it = sensors_.find(name);
  if (it == sensors_.end()) {
    it = sensors_.emplace(name, where_ + " sensor \"" + name + "\"").first;
  }
  return it->second;
}

const SharedText& SensorTexts::NoSensor(const char* role, const std::vector<std::string>& names) {
  auto it = missing_.find(role);
  if (it == missing_.end()) {
    std::string reason =
        names.empty()
            ? std::string("no sensor names are configured for ") + role + " (telemetry.sensors)"
            : "no " + std::string(kTemperatureMetric) + " sensor named " + JoinNames(names) +
                  " (set telemetry.sensors." + role + " to this node's sensor name)";
    it = missing_.emplace(role, std::move(reason)).first;
  }
  return it->second;
}

Temperatures PickSensors(const std::vector<SensorSample>& samples, const config::SensorNames& names,
                         SensorTexts& texts) {
  return Temperatures{Pick(samples, names.ambient, "ambient", texts),
                      Pick(samples, names.cpu1, "cpu1", texts),
                      Pick(samples, names.cpu2, "cpu2", texts)};
}

Temperatures PickSensors(const std::vector<SensorSample>& samples, const config::SensorNames& names,
                         const std::string& where) {
  SensorTexts texts(where);
  return PickSensors(samples, names, texts);
}

std::string IpmiExporterUrl(const NodeInfo& node, int port, const std::string& path) {
  if (node.internal_ips.empty() || node.internal_ips.front().empty()) return "";
  const std::string& ip = node.internal_ips.front();
  std::string host = ip.find(':') != std::string::npos ? "[" + ip + "]" : ip;
  return "http://" + host + ":" + std::to_string(port) + path;
}

std::unique_ptr<TemperatureSource> MakeIpmiExporterTemperatureSource(
    HttpClient& http, IpmiExporterOptions options, TimeBase time,
    std::shared_ptr<spdlog::logger> log) {
  return std::make_unique<IpmiExporterTemperatureSource>(http, std::move(options), std::move(time),
                                                         std::move(log));
}

std::unique_ptr<TemperatureSource> MakePrometheusTemperatureSource(
    PrometheusClient& prometheus, PrometheusTemperatureOptions options, TimeBase time) {
  return std::make_unique<PrometheusTemperatureSource>(prometheus, std::move(options),
                                                       std::move(time));
}

}  // namespace powerctl::telemetry
