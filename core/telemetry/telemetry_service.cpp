#include "core/telemetry/telemetry_service.h"

#include <algorithm>
#include <utility>

namespace powerctl::telemetry {
namespace {

// Once a snapshot exists it is served however old (staleness is judged per reading), so a
// reader never waits for a source that went down.
constexpr auto kNeverExpires = std::chrono::hours(24 * 365 * 100);

TtlCacheOptions CacheOptions(const TelemetryServiceOptions& options) {
  TtlCacheOptions out;
  out.refresh_after = options.refresh_interval;
  out.expire_after = kNeverExpires;
  out.retry_after =
      std::min<std::chrono::milliseconds>(options.refresh_interval, std::chrono::seconds(5));
  out.refresh_threads = 1;  // one key per cache
  out.clock = options.time.clock;
  return out;
}

// The cached snapshot (or why there is none) according to `wait`.
template <typename Cache, typename Value>
Result<Value> Current(Cache& cache, Wait wait) {
  if (wait == Wait::kIfEmpty) return cache.Get(0);
  auto peek = cache.Peek(0);
  if (peek.value) return cache.Get(0);  // has a value: returns at once, refreshing if due
  cache.Refresh(0);
  if (peek.last_error) return *peek.last_error;
  return MakeError(ErrorCode::kNetwork, "not fetched yet (the first refresh is running)");
}

// Adds why a stale reading was not refreshed, when the last refresh failed.
void ExplainStale(Reading& reading, const std::optional<Error>& last_error) {
  if (reading.ok() || !last_error || reading.missing_reason.rfind("stale", 0) != 0) return;
  reading.missing_reason += "; the last refresh failed: " + last_error->message;
}

}  // namespace

TelemetryService::TelemetryService(CpuSource& cpu, TemperatureSource& temperature, NodeLister nodes,
                                   TelemetryServiceOptions options)
    : cpu_(cpu),
      temperature_(temperature),
      nodes_(std::move(nodes)),
      options_(std::move(options)),
      cpu_cache_([this](int) { return FetchSnapshot<Reading>(cpu_); }, CacheOptions(options_)),
      temperature_cache_([this](int) { return FetchSnapshot<Temperatures>(temperature_); },
                         CacheOptions(options_)) {}

template <typename T, typename Source>
Result<std::shared_ptr<const TelemetryService::Snapshot<T>>> TelemetryService::FetchSnapshot(
    Source& source) {
  Result<std::vector<NodeInfo>> nodes = nodes_();
  if (!nodes.ok()) return WithContext(nodes.error(), "listing nodes");
  auto readings = source.Fetch(*nodes);
  if (!readings.ok()) {
    if (options_.log)
      options_.log->warn("telemetry from {}: {}", source.Describe(), readings.error().message);
    return WithContext(readings.error(), source.Describe());
  }
  auto snapshot = std::make_shared<Snapshot<T>>();
  snapshot->nodes = std::move(nodes).value();
  snapshot->readings = std::move(readings).value();
  return std::shared_ptr<const Snapshot<T>>(std::move(snapshot));
}

void TelemetryService::Warm() {
  cpu_cache_.Refresh(0);
  temperature_cache_.Refresh(0);
}

Result<std::map<std::string, NodeReading>> TelemetryService::Readings(
    Wait wait, const std::vector<std::string>& only) {
  Result<CpuSnapshot> cpu = Current<decltype(cpu_cache_), CpuSnapshot>(cpu_cache_, wait);
  Result<TemperatureSnapshot> temps =
      Current<decltype(temperature_cache_), TemperatureSnapshot>(temperature_cache_, wait);
  const std::vector<NodeInfo>* nodes = cpu.ok()     ? &(*cpu)->nodes
                                       : temps.ok() ? &(*temps)->nodes
                                                    : nullptr;
  if (only.empty() && nodes == nullptr) return cpu.error();

  std::map<std::string, const NodeInfo*> known;
  if (nodes != nullptr) {
    for (const NodeInfo& node : *nodes) known[node.name] = &node;
  }
  std::vector<std::string> names = only;
  if (names.empty()) {
    for (const auto& [name, node] : known) names.push_back(name);
  }
  const Reading not_listed = MissingReading("the node was not in the last node list");
  auto now = options_.time.clock.now();
  std::optional<Error> cpu_error = cpu_cache_.Peek(0).last_error;
  std::optional<Error> temp_error = temperature_cache_.Peek(0).last_error;
  std::map<std::string, NodeReading> out;
  for (const std::string& name : names) {
    NodeReading r;
    r.node = name;
    if (auto it = known.find(name); it != known.end()) r.cpu_capacity = it->second->cpu_capacity;
    if (!cpu.ok()) {
      r.cpu_cores_used = MissingReading("CPU usage unavailable: " + cpu.error().message);
    } else if (auto it = (*cpu)->readings.find(name); it != (*cpu)->readings.end()) {
      r.cpu_cores_used = it->second;
    } else {
      r.cpu_cores_used = not_listed;
    }
    if (!temps.ok()) {
      Reading missing = MissingReading("temperatures unavailable: " + temps.error().message);
      r.ambient = r.cpu1 = r.cpu2 = missing;
    } else if (auto it = (*temps)->readings.find(name); it != (*temps)->readings.end()) {
      r.ambient = it->second.ambient;
      r.cpu1 = it->second.cpu1;
      r.cpu2 = it->second.cpu2;
    } else {
      r.ambient = r.cpu1 = r.cpu2 = not_listed;
    }
    r = WithMaxAge(std::move(r), now, options_.max_age);
    ExplainStale(r.cpu_cores_used, cpu_error);
    for (Reading* t : {&r.ambient, &r.cpu1, &r.cpu2}) ExplainStale(*t, temp_error);
    out[name] = std::move(r);
  }
  return out;
}

}  // namespace powerctl::telemetry
